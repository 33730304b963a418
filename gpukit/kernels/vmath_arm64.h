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
// them, and &·vk into R4. The fourteen lie in ·vk in register order,
// LOG2E to BIAS (vmath_consts.h), so each VLD4R (VLD2R) broadcasts the
// next four (two) to as many registers.
#define EXPCONSTS \
	MOVD    $·vk(SB), R4; \
	ADD     $(LOG2E), R4, R5; \
	VLD4R.P 16(R5), [V16.S4, V17.S4, V18.S4, V19.S4]; \
	VLD4R.P 16(R5), [V20.S4, V21.S4, V22.S4, V23.S4]; \
	VLD4R.P 16(R5), [V24.S4, V25.S4, V26.S4, V27.S4]; \
	VLD2R   (R5), [V28.S4, V29.S4]

// FMA(d, a, b, c) is d = fma32(a, b, c), c in a register. HORNER2(p, q,
// z, c1, c0) is two steps of poly32's loop, p = fma32(p, z, c1), then
// fma32(p, z, c0), through q and back into p.
#define FMA(d, a, b, c) \
	VMOV  c.B16, d.B16; \
	VFMLA a.S4, b.S4, d.S4

#define HORNER2(p, q, z, c1, c0) \
	FMA(q, p, z, c1); \
	FMA(p, q, z, c0)

// EXPF: V0 = exp32(V0), four lanes. Clobbers V1-V5.
#define EXPF \
	FMUL4S(1, 0, 16); \
	FRINTN4S(1, 1); \
	VMOV  V0.B16, V3.B16; \
	VFMLS V17.S4, V1.S4, V3.S4; \
	VFMLS V18.S4, V1.S4, V3.S4; \
	FMA(V5, V19, V3, V20); \
	HORNER2(V5, V2, V3, V21, V22); \
	HORNER2(V5, V2, V3, V23, V24); \
	FMUL4S(4, 3, 3); \
	FMA(V2, V5, V4, V3); \
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

// PROLOGUE(v) loads R0 = dst, R1 = src, R2 = n/4 iterations, jumps to
// done when there are none and, at loop, loads the next four of src
// into v; EPILOGUE(v) stores v to dst, loops to loop and, at done,
// returns. Between them stands the body of the Go loop; the constants
// it keeps in registers are loaded before PROLOGUE.
#define PROLOGUE(v) \
	MOVD dst+0(FP), R0; \
	MOVD src+8(FP), R1; \
	MOVD n+16(FP), R2; \
	LSR  $2, R2; \
	CBZ  R2, done; \
loop: \
	VLD1.P 16(R1), [v.S4]

#define EPILOGUE(v) \
	VST1.P [v.S4], 16(R0); \
	SUBS   $1, R2; \
	BNE    loop; \
done: \
	RET

// ALLSET sets the Z flag when every lane of mask is set (R6, R7 scratch).
#define ALLSET(mask) \
	VMOV mask.D[0], R6; \
	VMOV mask.D[1], R7; \
	AND  R6, R7; \
	CMN  $1, R7
