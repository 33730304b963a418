// Shared by vmath_*_arm64.s and rows_arm64.s. R4 holds &·vk, R5 is
// scratch. fma32 is one VFMLA or VFMLS (V += a·b, V -= a·b, one
// rounding); fma32(a, b, -c) is V = -c, then VFMLA; every branch of a
// piecewise formula is computed and the lanes blended (VBIT: where the
// mask is set, VBIF: where it is not).

#include "vmath_consts.h"

// K broadcasts the constant of ·vk at offset off (K(EXP_C7, V19):
// vmath_consts.h, generated with the table) to the four lanes of v.
#define K(off, v) \
	ADD   $(off), R4, R5; \
	VLD1R (R5), [v.S4]

// EXPCONSTS loads exp32's constants into V16-V29, where EXPF expects
// them, and &·vk into R4.
#define EXPCONSTS \
	MOVD $·vk(SB), R4; \
	K(LOG2E, V16); \
	K(LN2_HI, V17); \
	K(LN2_LO, V18); \
	K(EXP_C7, V19); \
	K(EXP_C6, V20); \
	K(EXP_C5, V21); \
	K(EXP_C4, V22); \
	K(EXP_C3, V23); \
	K(EXP_C2, V24); \
	K(ONE, V25); \
	K(EXP_MAX, V26); \
	K(EXP_MIN, V27); \
	K(INF, V28); \
	K(BIAS, V29)

// EXPF: V0 = exp32(V0), four lanes. Clobbers V1-V5.
#define EXPF \
	FMUL4S(1, 0, 16); \
	FRINTN4S(1, 1); \
	VMOV  V0.B16, V3.B16; \
	VFMLS V17.S4, V1.S4, V3.S4; \
	VFMLS V18.S4, V1.S4, V3.S4; \
	VMOV  V20.B16, V5.B16; \
	VFMLA V19.S4, V3.S4, V5.S4; \
	VMOV  V21.B16, V2.B16; \
	VFMLA V5.S4, V3.S4, V2.S4; \
	VMOV  V22.B16, V5.B16; \
	VFMLA V2.S4, V3.S4, V5.S4; \
	VMOV  V23.B16, V2.B16; \
	VFMLA V5.S4, V3.S4, V2.S4; \
	VMOV  V24.B16, V5.B16; \
	VFMLA V2.S4, V3.S4, V5.S4; \
	FMUL4S(4, 3, 3); \
	VMOV  V3.B16, V2.B16; \
	VFMLA V5.S4, V4.S4, V2.S4; \
	FADD4S(5, 2, 25); \
	FCVTNS4S(1, 1); \
	SSHR4S(2, 1, 1); \
	VSUB  V2.S4, V1.S4, V1.S4; \
	VADD  V29.S4, V2.S4, V2.S4; \
	VSHL  $23, V2.S4, V2.S4; \
	VADD  V29.S4, V1.S4, V1.S4; \
	VSHL  $23, V1.S4, V1.S4; \
	FMUL4S(5, 5, 2); \
	FMUL4S(5, 5, 1); \
	FCMGT4S(3, 0, 26); \
	VBIT  V3.B16, V28.B16, V5.B16; \
	FCMGT4S(3, 27, 0); \
	BIC16B(0, 5, 3)

// PROLOGUE loads R0 = dst, R1 = src, R2 = n/4 iterations; NEXT stores V
// and loops.
#define PROLOGUE \
	MOVD dst+0(FP), R0; \
	MOVD src+8(FP), R1; \
	MOVD n+16(FP), R2; \
	LSR  $2, R2; \
	CBZ  R2, done

#define NEXT(v) \
	VST1.P [v.S4], 16(R0); \
	SUBS   $1, R2; \
	BNE    loop

// ALLSET sets the Z flag when every lane of mask is set (R6, R7 scratch).
#define ALLSET(mask) \
	VMOV mask.D[0], R6; \
	VMOV mask.D[1], R7; \
	AND  R6, R7; \
	CMN  $1, R7
