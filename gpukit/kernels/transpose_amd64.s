//go:build !purego

#include "textflag.h"

// TRANSPOSE8 transposes the 8×8 float32 block at (SI, row stride AX bytes)
// into (DI, row stride BX bytes), using Y0–Y15. R8 and R9 are scratch.
// It is the classic unpck/shuf/perm2f128 network: 8 loads, 24 shuffles,
// 8 stores for 64 elements, versus 128 scalar moves.
#define TRANSPOSE8 \
	MOVQ SI, R8 \
	VMOVUPS (R8), Y0 \
	ADDQ AX, R8 \
	VMOVUPS (R8), Y1 \
	ADDQ AX, R8 \
	VMOVUPS (R8), Y2 \
	ADDQ AX, R8 \
	VMOVUPS (R8), Y3 \
	ADDQ AX, R8 \
	VMOVUPS (R8), Y4 \
	ADDQ AX, R8 \
	VMOVUPS (R8), Y5 \
	ADDQ AX, R8 \
	VMOVUPS (R8), Y6 \
	ADDQ AX, R8 \
	VMOVUPS (R8), Y7 \
	VUNPCKLPS Y1, Y0, Y8 \
	VUNPCKHPS Y1, Y0, Y9 \
	VUNPCKLPS Y3, Y2, Y10 \
	VUNPCKHPS Y3, Y2, Y11 \
	VUNPCKLPS Y5, Y4, Y12 \
	VUNPCKHPS Y5, Y4, Y13 \
	VUNPCKLPS Y7, Y6, Y14 \
	VUNPCKHPS Y7, Y6, Y15 \
	VSHUFPS $0x44, Y10, Y8, Y0 \
	VSHUFPS $0xEE, Y10, Y8, Y1 \
	VSHUFPS $0x44, Y11, Y9, Y2 \
	VSHUFPS $0xEE, Y11, Y9, Y3 \
	VSHUFPS $0x44, Y14, Y12, Y4 \
	VSHUFPS $0xEE, Y14, Y12, Y5 \
	VSHUFPS $0x44, Y15, Y13, Y6 \
	VSHUFPS $0xEE, Y15, Y13, Y7 \
	VPERM2F128 $0x20, Y4, Y0, Y8 \
	VPERM2F128 $0x20, Y5, Y1, Y9 \
	VPERM2F128 $0x20, Y6, Y2, Y10 \
	VPERM2F128 $0x20, Y7, Y3, Y11 \
	VPERM2F128 $0x31, Y4, Y0, Y12 \
	VPERM2F128 $0x31, Y5, Y1, Y13 \
	VPERM2F128 $0x31, Y6, Y2, Y14 \
	VPERM2F128 $0x31, Y7, Y3, Y15 \
	MOVQ DI, R9 \
	VMOVUPS Y8, (R9) \
	ADDQ BX, R9 \
	VMOVUPS Y9, (R9) \
	ADDQ BX, R9 \
	VMOVUPS Y10, (R9) \
	ADDQ BX, R9 \
	VMOVUPS Y11, (R9) \
	ADDQ BX, R9 \
	VMOVUPS Y12, (R9) \
	ADDQ BX, R9 \
	VMOVUPS Y13, (R9) \
	ADDQ BX, R9 \
	VMOVUPS Y14, (R9) \
	ADDQ BX, R9 \
	VMOVUPS Y15, (R9)

// func transpose16x16AVX(dst *float32, ldd int, src *float32, lds int)
//
// dst[c*ldd + r] = src[r*lds + c] for r, c in [0,16); strides in elements.
// The four 8×8 quadrants are done so that each 64-byte source line (16
// floats) and each destination line is completed within this call.
TEXT ·transpose16x16AVX(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ ldd+8(FP), BX
	MOVQ src+16(FP), SI
	MOVQ lds+24(FP), AX
	SHLQ $2, BX
	SHLQ $2, AX
	MOVQ AX, R10
	SHLQ $3, R10 // 8 source rows
	MOVQ BX, R11
	SHLQ $3, R11 // 8 destination rows

	// Quadrant (r 0–7, c 0–7) → dst rows 0–7, cols 0–7.
	TRANSPOSE8
	// (r 0–7, c 8–15) → dst rows 8–15, cols 0–7.
	ADDQ $32, SI
	ADDQ R11, DI
	TRANSPOSE8
	// (r 8–15, c 8–15) → dst rows 8–15, cols 8–15.
	ADDQ R10, SI
	ADDQ $32, DI
	TRANSPOSE8
	// (r 8–15, c 0–7) → dst rows 0–7, cols 8–15.
	SUBQ $32, SI
	SUBQ R11, DI
	TRANSPOSE8

	VZEROUPPER
	RET
