//go:build !purego

#include "textflag.h"

// func sgemmKernel6x16AVX2(k int, a, b, c *float32, ldc int, alpha float32, accumulate int)
//
// C[6×16] = alpha·A[6×k]·B[k×16] + (accumulate ? C : 0), where A is a packed
// sliver laid out as k groups of 6 row values and B is a packed sliver laid
// out as k groups of 16 column values. ldc is C's row stride in elements.
// k must be >= 1. accumulate == 0 writes C without reading it, as
// fma(acc, alpha, +0): the same bits as accumulating onto a cleared C
// (sgemm512_amd64.s).
//
// Register use: Y4..Y15 hold the 6×16 tile of accumulators (2 ymm per row),
// Y0/Y1 hold the current 16 B values and Y2/Y3 alternate as broadcast A values.
// This is the same 6×16 shape OpenBLAS and BLIS use for Haswell-class cores:
// 12 accumulators are enough to hide the FMA latency (4–5 cycles × 2 ports).
TEXT ·sgemmKernel6x16AVX2(SB), NOSPLIT, $0-56
	MOVQ k+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ b+16(FP), DI
	MOVQ c+24(FP), DX
	MOVQ ldc+32(FP), BX
	SHLQ $2, BX

	// The C tile's lines, fetched while the k loop runs.
#define PREFETCH_ROW \
	PREFETCHT0 (AX) \
	PREFETCHT0 63(AX) \
	ADDQ BX, AX

	MOVQ DX, AX
	PREFETCH_ROW
	PREFETCH_ROW
	PREFETCH_ROW
	PREFETCH_ROW
	PREFETCH_ROW
	PREFETCH_ROW

	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9
	VXORPS Y10, Y10, Y10
	VXORPS Y11, Y11, Y11
	VXORPS Y12, Y12, Y12
	VXORPS Y13, Y13, Y13
	VXORPS Y14, Y14, Y14
	VXORPS Y15, Y15, Y15

#define STEP(aoff, boff) \
	VMOVUPS boff(DI), Y0 \
	VMOVUPS (boff+32)(DI), Y1 \
	VBROADCASTSS (aoff)(SI), Y2 \
	VBROADCASTSS (aoff+4)(SI), Y3 \
	VFMADD231PS Y0, Y2, Y4 \
	VFMADD231PS Y1, Y2, Y5 \
	VFMADD231PS Y0, Y3, Y6 \
	VFMADD231PS Y1, Y3, Y7 \
	VBROADCASTSS (aoff+8)(SI), Y2 \
	VBROADCASTSS (aoff+12)(SI), Y3 \
	VFMADD231PS Y0, Y2, Y8 \
	VFMADD231PS Y1, Y2, Y9 \
	VFMADD231PS Y0, Y3, Y10 \
	VFMADD231PS Y1, Y3, Y11 \
	VBROADCASTSS (aoff+16)(SI), Y2 \
	VBROADCASTSS (aoff+20)(SI), Y3 \
	VFMADD231PS Y0, Y2, Y12 \
	VFMADD231PS Y1, Y2, Y13 \
	VFMADD231PS Y0, Y3, Y14 \
	VFMADD231PS Y1, Y3, Y15

	// Main loop unrolled 4× over k to amortise the loop overhead.
	CMPQ CX, $4
	JLT  tail

loop4:
	PREFETCHT0 512(DI)
	STEP(0, 0)
	STEP(24, 64)
	PREFETCHT0 576(DI)
	STEP(48, 128)
	STEP(72, 192)
	ADDQ $96, SI
	ADDQ $256, DI
	SUBQ $4, CX
	CMPQ CX, $4
	JGE  loop4

tail:
	TESTQ CX, CX
	JEQ   store

loop1:
	STEP(0, 0)
	ADDQ $24, SI
	ADDQ $64, DI
	DECQ CX
	JNZ  loop1

store:
	VBROADCASTSS alpha+40(FP), Y0
	MOVQ accumulate+48(FP), AX
	TESTQ AX, AX
	JEQ  overwrite

#define ROW(lo, hi) \
	VMOVUPS (DX), Y1 \
	VMOVUPS 32(DX), Y2 \
	VFMADD231PS lo, Y0, Y1 \
	VFMADD231PS hi, Y0, Y2 \
	VMOVUPS Y1, (DX) \
	VMOVUPS Y2, 32(DX) \
	ADDQ BX, DX

	ROW(Y4, Y5)
	ROW(Y6, Y7)
	ROW(Y8, Y9)
	ROW(Y10, Y11)
	ROW(Y12, Y13)
	ROW(Y14, Y15)
	VZEROUPPER
	RET

#define ROWZ(lo, hi) \
	VFMADD213PS Y3, Y0, lo \
	VFMADD213PS Y3, Y0, hi \
	VMOVUPS lo, (DX) \
	VMOVUPS hi, 32(DX) \
	ADDQ BX, DX

overwrite:
	VXORPS Y3, Y3, Y3
	ROWZ(Y4, Y5)
	ROWZ(Y6, Y7)
	ROWZ(Y8, Y9)
	ROWZ(Y10, Y11)
	ROWZ(Y12, Y13)
	ROWZ(Y14, Y15)
	VZEROUPPER
	RET
