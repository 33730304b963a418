//go:build !purego

#include "textflag.h"

// func addToFloat64AVX(acc *float64, row *float32, n int)
//
// acc[j] += float64(row[j]) for j < n, n a positive multiple of 8: the
// inner loop of a float32 column sum (reduceCols), 8 values per iteration
// as two 4-wide conversions and adds. Each acc[j] receives the same adds in
// the same order as the scalar loop, so the sums are bit for bit the same.
TEXT ·addToFloat64AVX(SB), NOSPLIT, $0-24
	MOVQ acc+0(FP), DI
	MOVQ row+8(FP), SI
	MOVQ n+16(FP), CX

loop:
	VCVTPS2PD (SI), Y0
	VCVTPS2PD 16(SI), Y1
	VADDPD (DI), Y0, Y0
	VADDPD 32(DI), Y1, Y1
	VMOVUPD Y0, (DI)
	VMOVUPD Y1, 32(DI)
	ADDQ $32, SI
	ADDQ $64, DI
	SUBQ $8, CX
	JGT  loop

	VZEROUPPER
	RET
