//go:build !purego

#include "textflag.h"

// func sgemmKernel12x32AVX512(k int, a, b, c *float32, ldc int, alpha float32, accumulate int)
//
// C[12×32] = alpha·A[12×k]·B[k×32] + (accumulate ? C : 0): A a packed
// sliver of k groups of 12 row values, B one of k groups of 32 column values
// (sgemm.go). Z8..Z31 hold the tile (2 zmm per row), Z0/Z1 the current 32 B
// values, Z2..Z7 the broadcast A values. k must be >= 1.
//
// With accumulate == 0, C is written without being read (the first k-panel
// of a product with beta = 0: no pass to clear C first, no read of what it
// held, NaNs included). The tile is then fma(acc, alpha, +0), the same
// operation as accumulating onto a cleared C, so both modes give the same
// bits (an exact −0 product becomes +0 either way).
TEXT ·sgemmKernel12x32AVX512(SB), NOSPLIT, $0-56
	MOVQ k+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ b+16(FP), DI
	MOVQ c+24(FP), DX
	MOVQ ldc+32(FP), BX
	SHLQ $2, BX

	// Ask for the C tile's 24 cache lines now: the k loop (thousands of
	// cycles) hides their latency, where the stores at the end would
	// otherwise wait on memory for each row of a C larger than the cache.
#define PREFETCH_ROW \
	PREFETCHT0 (AX) \
	PREFETCHT0 64(AX) \
	ADDQ BX, AX

	MOVQ DX, AX
	PREFETCH_ROW
	PREFETCH_ROW
	PREFETCH_ROW
	PREFETCH_ROW
	PREFETCH_ROW
	PREFETCH_ROW
	PREFETCH_ROW
	PREFETCH_ROW
	PREFETCH_ROW
	PREFETCH_ROW
	PREFETCH_ROW
	PREFETCH_ROW

	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15
	VPXORD Z16, Z16, Z16
	VPXORD Z17, Z17, Z17
	VPXORD Z18, Z18, Z18
	VPXORD Z19, Z19, Z19
	VPXORD Z20, Z20, Z20
	VPXORD Z21, Z21, Z21
	VPXORD Z22, Z22, Z22
	VPXORD Z23, Z23, Z23
	VPXORD Z24, Z24, Z24
	VPXORD Z25, Z25, Z25
	VPXORD Z26, Z26, Z26
	VPXORD Z27, Z27, Z27
	VPXORD Z28, Z28, Z28
	VPXORD Z29, Z29, Z29
	VPXORD Z30, Z30, Z30
	VPXORD Z31, Z31, Z31

// STEP(aoff, boff) is one k step: the 32 B values at boff(DI) times each of
// the 12 A values at aoff(SI), into the 24 accumulators.
#define STEP(aoff, boff) \
	VMOVUPS boff(DI), Z0 \
	VMOVUPS (boff+64)(DI), Z1 \
	VBROADCASTSS (aoff+0)(SI), Z2 \
	VFMADD231PS Z0, Z2, Z8 \
	VFMADD231PS Z1, Z2, Z9 \
	VBROADCASTSS (aoff+4)(SI), Z3 \
	VFMADD231PS Z0, Z3, Z10 \
	VFMADD231PS Z1, Z3, Z11 \
	VBROADCASTSS (aoff+8)(SI), Z4 \
	VFMADD231PS Z0, Z4, Z12 \
	VFMADD231PS Z1, Z4, Z13 \
	VBROADCASTSS (aoff+12)(SI), Z5 \
	VFMADD231PS Z0, Z5, Z14 \
	VFMADD231PS Z1, Z5, Z15 \
	VBROADCASTSS (aoff+16)(SI), Z6 \
	VFMADD231PS Z0, Z6, Z16 \
	VFMADD231PS Z1, Z6, Z17 \
	VBROADCASTSS (aoff+20)(SI), Z7 \
	VFMADD231PS Z0, Z7, Z18 \
	VFMADD231PS Z1, Z7, Z19 \
	VBROADCASTSS (aoff+24)(SI), Z2 \
	VFMADD231PS Z0, Z2, Z20 \
	VFMADD231PS Z1, Z2, Z21 \
	VBROADCASTSS (aoff+28)(SI), Z3 \
	VFMADD231PS Z0, Z3, Z22 \
	VFMADD231PS Z1, Z3, Z23 \
	VBROADCASTSS (aoff+32)(SI), Z4 \
	VFMADD231PS Z0, Z4, Z24 \
	VFMADD231PS Z1, Z4, Z25 \
	VBROADCASTSS (aoff+36)(SI), Z5 \
	VFMADD231PS Z0, Z5, Z26 \
	VFMADD231PS Z1, Z5, Z27 \
	VBROADCASTSS (aoff+40)(SI), Z6 \
	VFMADD231PS Z0, Z6, Z28 \
	VFMADD231PS Z1, Z6, Z29 \
	VBROADCASTSS (aoff+44)(SI), Z7 \
	VFMADD231PS Z0, Z7, Z30 \
	VFMADD231PS Z1, Z7, Z31

	CMPQ CX, $4
	JLT  tail

loop4:
	PREFETCHT0 1024(DI)
	STEP(0, 0)
	STEP(48, 128)
	PREFETCHT0 1088(DI)
	STEP(96, 256)
	STEP(144, 384)
	ADDQ $192, SI
	ADDQ $512, DI
	SUBQ $4, CX
	CMPQ CX, $4
	JGE  loop4

tail:
	TESTQ CX, CX
	JEQ   store

loop1:
	STEP(0, 0)
	ADDQ $48, SI
	ADDQ $128, DI
	DECQ CX
	JNZ  loop1

store:
	VBROADCASTSS alpha+40(FP), Z0
	MOVQ accumulate+48(FP), AX
	TESTQ AX, AX
	JEQ  overwrite

// ROW(lo, hi): C row += alpha·(lo, hi), then the next row.
#define ROW(lo, hi) \
	VMOVUPS (DX), Z1 \
	VMOVUPS 64(DX), Z2 \
	VFMADD231PS lo, Z0, Z1 \
	VFMADD231PS hi, Z0, Z2 \
	VMOVUPS Z1, (DX) \
	VMOVUPS Z2, 64(DX) \
	ADDQ BX, DX

	ROW(Z8, Z9)
	ROW(Z10, Z11)
	ROW(Z12, Z13)
	ROW(Z14, Z15)
	ROW(Z16, Z17)
	ROW(Z18, Z19)
	ROW(Z20, Z21)
	ROW(Z22, Z23)
	ROW(Z24, Z25)
	ROW(Z26, Z27)
	ROW(Z28, Z29)
	ROW(Z30, Z31)
	VZEROUPPER
	RET

// ROWZ(lo, hi): C row = alpha·(lo, hi) + 0 (Z3 is zero), then the next row.
#define ROWZ(lo, hi) \
	VFMADD213PS Z3, Z0, lo \
	VFMADD213PS Z3, Z0, hi \
	VMOVUPS lo, (DX) \
	VMOVUPS hi, 64(DX) \
	ADDQ BX, DX

overwrite:
	VPXORD Z3, Z3, Z3
	ROWZ(Z8, Z9)
	ROWZ(Z10, Z11)
	ROWZ(Z12, Z13)
	ROWZ(Z14, Z15)
	ROWZ(Z16, Z17)
	ROWZ(Z18, Z19)
	ROWZ(Z20, Z21)
	ROWZ(Z22, Z23)
	ROWZ(Z24, Z25)
	ROWZ(Z26, Z27)
	ROWZ(Z28, Z29)
	ROWZ(Z30, Z31)
	VZEROUPPER
	RET
