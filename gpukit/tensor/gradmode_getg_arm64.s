//go:build !purego

#include "textflag.h"

// func getg() uintptr
// The address of the running goroutine's g, kept in register g: an
// identity for the goroutine while it lives (see gradmode.go).
TEXT ·getg(SB), NOSPLIT, $0-8
	MOVD g, R0
	MOVD R0, ret+0(FP)
	RET
