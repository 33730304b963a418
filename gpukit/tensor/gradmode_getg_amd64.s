//go:build !purego

#include "textflag.h"

// func getg() uintptr
// The address of the running goroutine's g, read from thread-local
// storage: an identity for the goroutine while it lives (see gradmode.go).
TEXT ·getg(SB), NOSPLIT, $0-8
	MOVQ (TLS), AX
	MOVQ AX, ret+0(FP)
	RET
