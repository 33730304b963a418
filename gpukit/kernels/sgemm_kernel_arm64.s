//go:build !purego

#include "textflag.h"
#include "neon_arm64.h"

// func sgemmKernel8x12NEON(k int, a, b, c *float32, ldc int, alpha float32, accumulate int)
//
// C[8×12] = alpha·A[8×k]·B[k×12] + (accumulate ? C : 0), A a packed
// sliver of k groups of 8 row values, B one of k groups of 12 column
// values, ldc C's row stride in elements, k ≥ 1. accumulate == 0 writes
// C without reading it, as fma(acc, alpha, +0), the bits of accumulating
// onto a cleared C (sgemm_kernel_amd64.s).
//
// Registers: V8-V31 hold the tile, row i in V(8+3i) .. V(10+3i); V0-V1
// hold A's eight values, V2-V4 B's twelve. Each step is 24 FMLA by
// element (row i's A value is lane i%4 of V0 or V1), so A needs no
// broadcast.
TEXT ·sgemmKernel8x12NEON(SB), NOSPLIT, $0-56
	MOVD k+0(FP), R2
	MOVD a+8(FP), R0
	MOVD b+16(FP), R1
	MOVD c+24(FP), R3
	MOVD ldc+32(FP), R4
	LSL  $2, R4

	VEOR V8.B16, V8.B16, V8.B16
	VEOR V9.B16, V9.B16, V9.B16
	VEOR V10.B16, V10.B16, V10.B16
	VEOR V11.B16, V11.B16, V11.B16
	VEOR V12.B16, V12.B16, V12.B16
	VEOR V13.B16, V13.B16, V13.B16
	VEOR V14.B16, V14.B16, V14.B16
	VEOR V15.B16, V15.B16, V15.B16
	VEOR V16.B16, V16.B16, V16.B16
	VEOR V17.B16, V17.B16, V17.B16
	VEOR V18.B16, V18.B16, V18.B16
	VEOR V19.B16, V19.B16, V19.B16
	VEOR V20.B16, V20.B16, V20.B16
	VEOR V21.B16, V21.B16, V21.B16
	VEOR V22.B16, V22.B16, V22.B16
	VEOR V23.B16, V23.B16, V23.B16
	VEOR V24.B16, V24.B16, V24.B16
	VEOR V25.B16, V25.B16, V25.B16
	VEOR V26.B16, V26.B16, V26.B16
	VEOR V27.B16, V27.B16, V27.B16
	VEOR V28.B16, V28.B16, V28.B16
	VEOR V29.B16, V29.B16, V29.B16
	VEOR V30.B16, V30.B16, V30.B16
	VEOR V31.B16, V31.B16, V31.B16

// ROW(acc, areg, lane): the row whose accumulators are V acc .. V acc+2
// += lane lane of V areg (its A value) times B's twelve values.
#define ROW(acc, areg, lane) \
	FMLAE4S(acc, 2, areg, lane); \
	FMLAE4S(acc+1, 3, areg, lane); \
	FMLAE4S(acc+2, 4, areg, lane)

loop:
	VLD1.P 32(R0), [V0.S4, V1.S4]
	VLD1.P 48(R1), [V2.S4, V3.S4, V4.S4]
	ROW(8, 0, 0)
	ROW(11, 0, 1)
	ROW(14, 0, 2)
	ROW(17, 0, 3)
	ROW(20, 1, 0)
	ROW(23, 1, 1)
	ROW(26, 1, 2)
	ROW(29, 1, 3)
	SUBS $1, R2
	BNE  loop

	FMOVS alpha+40(FP), F0
	MOVD  accumulate+48(FP), R5
	CBZ   R5, overwrite

// STORE(acc): the row in V acc .. V acc+2: C = C + acc·alpha (one
// rounding), then R3 moves to the next row.
#define STORE(acc) \
	VLD1 (R3), [V1.S4, V2.S4, V3.S4]; \
	FMLAE4S(1, acc, 0, 0); \
	FMLAE4S(2, acc+1, 0, 0); \
	FMLAE4S(3, acc+2, 0, 0); \
	VST1 [V1.S4, V2.S4, V3.S4], (R3); \
	ADD  R4, R3

	STORE(8)
	STORE(11)
	STORE(14)
	STORE(17)
	STORE(20)
	STORE(23)
	STORE(26)
	STORE(29)
	RET

// STOREZ(acc): row acc: C = +0 + acc·alpha, C not read.
#define STOREZ(acc) \
	VEOR V1.B16, V1.B16, V1.B16; \
	VEOR V2.B16, V2.B16, V2.B16; \
	VEOR V3.B16, V3.B16, V3.B16; \
	FMLAE4S(1, acc, 0, 0); \
	FMLAE4S(2, acc+1, 0, 0); \
	FMLAE4S(3, acc+2, 0, 0); \
	VST1 [V1.S4, V2.S4, V3.S4], (R3); \
	ADD  R4, R3

overwrite:
	STOREZ(8)
	STOREZ(11)
	STOREZ(14)
	STOREZ(17)
	STOREZ(20)
	STOREZ(23)
	STOREZ(26)
	STOREZ(29)
	RET
