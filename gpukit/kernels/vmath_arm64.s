//go:build !purego

#include "textflag.h"
#include "go_asm.h"
#include "neon_arm64.h"

// Four-lane float32 elementary functions (NEON). Each function is the Go
// function of vmath.go it is named after, operation for operation, as
// vmath_amd64.s is: fma32 is one VFMLA or VFMLS (V += a·b, V -= a·b,
// one rounding); fma32(a, b, -c) is V = -c, then VFMLA; every branch of
// a piecewise formula is computed and the lanes blended (VBIT: where the
// mask is set, VBIF: where it is not). Constants come from ·vk
// (vmath_arm64.go) by field name.

#include "vmath_arm64.h"

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

// TBL8 looks up each lane's entry (byte indices in V13, INDEX) of the
// eight float32 at off(base) into v, through V30-V31.
#define TBL8(base, off, v) \
	ADD  $(off), base, R5; \
	VLD1 (R5), [V30.B16, V31.B16]; \
	VTBL V13.B16, [V30.B16, V31.B16], v.B16

// INDEX turns the interval numbers in V13 into TBL's byte indices:
// lane i reads bytes 4i..4i+3. Needs spread (0x01010101) and offs
// (0x03020100).
#define INDEX(spread, offs) \
	VSHL $2, V13.S4, V13.S4; \
	MUL4S(13, 13, spread); \
	VADD offs.S4, V13.S4, V13.S4

// func expVec(dst, src *float32, n int)
TEXT ·expVec(SB), NOSPLIT, $0-24
	PROLOGUE
	EXPCONSTS

loop:
	VLD1.P 16(R1), [V0.S4]
	EXPF
	NEXT(V0)

done:
	RET

// SIGMOID: from v in V12, V6 = σ(v) and V7 = 1-σ(v) (sigmoidParts).
// Clobbers V0-V5.
#define SIGMOID \
	FABS4S(0, 12); \
	FNEG4S(0, 0); \
	EXPF; \
	FADD4S(3, 0, 25); \
	FDIV4S(2, 25, 3); \
	FDIV4S(3, 0, 3); \
	VEOR V4.B16, V4.B16, V4.B16; \
	FCMGE4S(4, 12, 4); \
	VMOV V3.B16, V6.B16; \
	VBIT V4.B16, V2.B16, V6.B16; \
	VMOV V2.B16, V7.B16; \
	VBIT V4.B16, V3.B16, V7.B16

// func sigmoidVec(dst, src *float32, n int)
TEXT ·sigmoidVec(SB), NOSPLIT, $0-24
	PROLOGUE
	EXPCONSTS

loop:
	VLD1.P 16(R1), [V12.S4]
	FABS4S(0, 12)
	FNEG4S(0, 0)
	EXPF                          // e = e^(-|x|)
	FADD4S(3, 25, 0)              // d = 1 + e
	FSUB4S(4, 25, 3)
	FADD4S(4, 4, 0)               // dl = (1 - d) + e
	FDIV4S(2, 25, 3)              // inv = 1/d
	VEOR  V6.B16, V6.B16, V6.B16
	FCMGE4S(6, 12, 6)             // x >= 0
	VMOV  V0.B16, V7.B16
	VBIT  V6.B16, V25.B16, V7.B16 // n
	FMUL4S(5, 7, 2)               // q = n·inv
	VFMLS V3.S4, V5.S4, V7.S4     // n - q·d
	VFMLS V4.S4, V5.S4, V7.S4     // c = n - q·d - q·dl
	VFMLA V7.S4, V2.S4, V5.S4     // q + c·inv
	NEXT(V5)

done:
	RET

// func logVec(dst, src *float32, n int)
TEXT ·logVec(SB), NOSPLIT, $0-24
	PROLOGUE
	MOVD $·vk(SB), R4
	K(vconst_minNormal, V16)
	K(vconst_two23, V17)
	K(vconst_bias, V18)
	K(vconst_bias150, V19)
	K(vconst_logOff, V20)
	K(vconst_mantMask, V21)
	K(vconst_sqrtHalfBits, V22)
	K(vconst_one, V23)
	K(vconst_two, V24)
	K(vconst_logC4, V25)
	K(vconst_logC3, V26)
	K(vconst_logC2, V27)
	K(vconst_logC1, V28)
	K(vconst_half, V29)
	K(vconst_ln2Hi, V30)
	K(vconst_ln2Lo, V31)

loop:
	VLD1.P 16(R1), [V0.S4]
	FCMGT4S(2, 16, 0)             // x < 2⁻¹²⁶: subnormal (or ≤ 0: blended away below)
	FMUL4S(1, 0, 17)
	VMOV  V0.B16, V3.B16
	VBIT  V2.B16, V1.B16, V3.B16  // x scaled into the normal range
	VMOV  V18.B16, V4.B16
	VBIT  V2.B16, V19.B16, V4.B16 // exponent bias, 127 or 127+23
	VADD  V20.S4, V3.S4, V3.S4    // ix
	VUSHR $23, V3.S4, V1.S4
	VSUB  V4.S4, V1.S4, V1.S4
	SCVTF4S(1, 1)                 // dk
	VAND  V21.B16, V3.B16, V3.B16
	VADD  V22.S4, V3.S4, V3.S4
	FSUB4S(3, 3, 23)              // f
	FADD4S(2, 24, 3)
	FDIV4S(2, 3, 2)               // s = f/(2+f)
	FMUL4S(4, 2, 2)               // z
	VMOV  V26.B16, V5.B16
	VFMLA V25.S4, V4.S4, V5.S4
	VMOV  V27.B16, V7.B16
	VFMLA V5.S4, V4.S4, V7.S4
	VMOV  V28.B16, V5.B16
	VFMLA V7.S4, V4.S4, V5.S4
	FMUL4S(5, 5, 4)               // R
	FADD4S(7, 2, 2)
	FSUB4S(7, 3, 7)               // f - 2s
	VFMLS V3.S4, V2.S4, V7.S4     // r = (f - 2s) - s·f
	FMUL4S(9, 29, 3)              // hf = f/2
	FMUL4S(8, 2, 3)               // s·f
	FMUL4S(10, 9, 3)              // hi
	FNEG4S(11, 10)
	VFMLA V3.S4, V9.S4, V11.S4    // lo = hf·f - hi
	FSUB4S(12, 3, 10)             // u = f - hi
	FSUB4S(13, 3, 12)
	FSUB4S(13, 13, 10)            // eu = (f - u) - hi
	VMOV  V12.B16, V14.B16
	VFMLA V30.S4, V1.S4, V14.S4   // S = dk·ln2Hi + u
	FNEG4S(15, 14)
	VFMLA V30.S4, V1.S4, V15.S4   // dk·ln2Hi - S
	FADD4S(15, 15, 12)            // es
	FSUB4S(13, 13, 11)
	FADD4S(15, 15, 13)            // es + (eu - lo)
	VFMLA V31.S4, V1.S4, V15.S4   // w = dk·ln2Lo + ...
	VFMLA V8.S4, V7.S4, V15.S4    // w += r·(s·f)
	VFMLA V5.S4, V2.S4, V15.S4    // s·R + w
	VFMLA V10.S4, V2.S4, V15.S4   // t = s·hi + (s·R + w)
	FADD4S(3, 14, 15)             // S + t
	K(vconst_inf, V6)
	FCMEQ4S(7, 0, 6)
	VBIT  V7.B16, V6.B16, V3.B16  // +Inf
	VEOR  V6.B16, V6.B16, V6.B16
	FCMEQ4S(7, 0, 6)
	K(vconst_negInf, V5)
	VBIT  V7.B16, V5.B16, V3.B16  // ±0: -Inf
	FCMGE4S(7, 0, 6)              // x >= 0: false for negative and NaN
	K(vconst_nan, V5)
	VBIF  V7.B16, V5.B16, V3.B16
	NEXT(V3)

done:
	RET

// func tanhVec(dst, src *float32, n int)
TEXT ·tanhVec(SB), NOSPLIT, $0-24
	PROLOGUE
	MOVD $·vk(SB), R4
	MOVD $·tanhT(SB), R6
	VLD1R.P 4(R6), [V16.S4]
	VLD1R.P 4(R6), [V17.S4]
	VLD1R.P 4(R6), [V18.S4]
	VLD1R.P 4(R6), [V19.S4]
	VLD1R.P 4(R6), [V20.S4]
	VLD1R.P 4(R6), [V21.S4]
	VLD1R.P 4(R6), [V22.S4]       // T0..T6
	K(vconst_split, V23)
	K(vconst_tanhMax, V24)
	K(vconst_tanhBase, V25)
	K(vconst_byteSpread, V26)
	K(vconst_byteOffsets, V27)
	K(vconst_signMask, V28)
	MOVD $·tanhC(SB), R8
	MOVD $·tanhC0(SB), R9
	MOVD $·tanhQ(SB), R10

loop:
	VLD1.P 16(R1), [V8.S4]
	FABS4S(9, 8)                  // a
	FMUL4S(10, 8, 8)              // z
	VMOV  V21.B16, V11.B16
	VFMLA V22.S4, V10.S4, V11.S4
	VMOV  V20.B16, V1.B16
	VFMLA V11.S4, V10.S4, V1.S4
	VMOV  V19.B16, V11.B16
	VFMLA V1.S4, V10.S4, V11.S4
	VMOV  V18.B16, V1.B16
	VFMLA V11.S4, V10.S4, V1.S4
	VMOV  V17.B16, V11.B16
	VFMLA V1.S4, V10.S4, V11.S4
	VMOV  V16.B16, V1.B16
	VFMLA V11.S4, V10.S4, V1.S4   // T(z)
	FMUL4S(11, 10, 1)             // z·T(z)
	VMOV  V8.B16, V2.B16
	VFMLA V11.S4, V8.S4, V2.S4    // small: x + x·(z·T(z))
	FMIN4S(12, 24, 9)             // min(a, tanhMax); NaN stays
	VUSHR $22, V12.S4, V13.S4
	VSUB  V25.S4, V13.S4, V13.S4  // interval
	INDEX(26, V27)
	TBL8(R8, 0, V1)
	FSUB4S(12, 12, 1)             // t = a - c
	TBL8(R10, 224, V0)
	TBL8(R10, 192, V1)
	VFMLA V0.S4, V12.S4, V1.S4
	TBL8(R10, 160, V0)
	VFMLA V1.S4, V12.S4, V0.S4
	TBL8(R10, 128, V1)
	VFMLA V0.S4, V12.S4, V1.S4
	TBL8(R10, 96, V0)
	VFMLA V1.S4, V12.S4, V0.S4
	TBL8(R10, 64, V1)
	VFMLA V0.S4, V12.S4, V1.S4
	TBL8(R10, 32, V0)
	VFMLA V1.S4, V12.S4, V0.S4
	TBL8(R10, 0, V1)
	VFMLA V0.S4, V12.S4, V1.S4
	TBL8(R9, 0, V0)
	VFMLA V1.S4, V12.S4, V0.S4    // c0 + t·q(t)
	FCMGT4S(3, 23, 9)             // a < 0.75
	VBIT  V3.B16, V2.B16, V0.B16
	VAND  V28.B16, V8.B16, V1.B16
	VORR  V1.B16, V0.B16, V0.B16  // the sign of x (also on -0)
	NEXT(V0)

done:
	RET

// func erfVec(dst, src *float32, n int)
TEXT ·erfVec(SB), NOSPLIT, $0-24
	PROLOGUE
	MOVD $·vk(SB), R4
	MOVD $·erfT(SB), R6
	VLD1R.P 4(R6), [V16.S4]
	VLD1R.P 4(R6), [V17.S4]
	VLD1R.P 4(R6), [V18.S4]
	VLD1R.P 4(R6), [V19.S4]
	VLD1R.P 4(R6), [V20.S4]
	VLD1R.P 4(R6), [V21.S4]
	VLD1R.P 4(R6), [V22.S4]       // T0..T6
	K(vconst_split, V23)
	K(vconst_erfMax, V24)
	K(vconst_erfBase, V25)
	K(vconst_maxIndex, V26)
	K(vconst_byteSpread, V27)
	K(vconst_byteOffsets, V28)
	K(vconst_signMask, V29)
	MOVD $·erfC(SB), R8
	MOVD $·erfC0(SB), R9
	MOVD $·erfQ(SB), R10

loop:
	VLD1.P 16(R1), [V8.S4]
	FABS4S(9, 8)                  // a
	FMUL4S(10, 8, 8)              // x²
	VMOV  V21.B16, V11.B16
	VFMLA V22.S4, V10.S4, V11.S4
	VMOV  V20.B16, V1.B16
	VFMLA V11.S4, V10.S4, V1.S4
	VMOV  V19.B16, V11.B16
	VFMLA V1.S4, V10.S4, V11.S4
	VMOV  V18.B16, V1.B16
	VFMLA V11.S4, V10.S4, V1.S4
	VMOV  V17.B16, V11.B16
	VFMLA V1.S4, V10.S4, V11.S4
	VMOV  V16.B16, V1.B16
	VFMLA V11.S4, V10.S4, V1.S4   // T(x²)
	VMOV  V8.B16, V0.B16
	VFMLA V1.S4, V8.S4, V0.S4     // small: x + x·T(x²)
	FCMGT4S(15, 23, 9)            // a < 0.75
	ALLSET(V15)
	BEQ   store                   // every lane small
	FMIN4S(12, 24, 9)             // min(a, erfMax); NaN stays
	VUSHR $21, V12.S4, V13.S4
	VSUB  V25.S4, V13.S4, V13.S4
	VUMIN V26.S4, V13.S4, V13.S4  // interval, at most 7
	INDEX(27, V28)
	TBL8(R8, 0, V1)
	FSUB4S(12, 12, 1)             // t = a - c
	TBL8(R10, 256, V2)
	TBL8(R10, 224, V3)
	VFMLA V2.S4, V12.S4, V3.S4
	TBL8(R10, 192, V2)
	VFMLA V3.S4, V12.S4, V2.S4
	TBL8(R10, 160, V3)
	VFMLA V2.S4, V12.S4, V3.S4
	TBL8(R10, 128, V2)
	VFMLA V3.S4, V12.S4, V2.S4
	TBL8(R10, 96, V3)
	VFMLA V2.S4, V12.S4, V3.S4
	TBL8(R10, 64, V2)
	VFMLA V3.S4, V12.S4, V2.S4
	TBL8(R10, 32, V3)
	VFMLA V2.S4, V12.S4, V3.S4
	TBL8(R10, 0, V2)
	VFMLA V3.S4, V12.S4, V2.S4
	TBL8(R9, 0, V3)
	VFMLA V2.S4, V12.S4, V3.S4    // c0 + t·q(t)
	VAND  V29.B16, V8.B16, V1.B16
	VORR  V1.B16, V3.B16, V3.B16  // the sign of x
	VBIF  V15.B16, V3.B16, V0.B16 // the large lanes

store:
	NEXT(V0)

done:
	RET

// ERFP: V11 = erfP(z). Clobbers V3.
#define ERFP(z) \
	K(vconst_erfP8, V11); \
	K(vconst_erfP7, V3); \
	VFMLA V11.S4, z.S4, V3.S4; \
	K(vconst_erfP6, V11); \
	VFMLA V3.S4, z.S4, V11.S4; \
	K(vconst_erfP5, V3); \
	VFMLA V11.S4, z.S4, V3.S4; \
	K(vconst_erfP4, V11); \
	VFMLA V3.S4, z.S4, V11.S4; \
	K(vconst_erfP3, V3); \
	VFMLA V11.S4, z.S4, V3.S4; \
	K(vconst_erfP2, V11); \
	VFMLA V3.S4, z.S4, V11.S4; \
	K(vconst_erfP1, V3); \
	VFMLA V11.S4, z.S4, V3.S4; \
	K(vconst_erfP0, V11); \
	VFMLA V3.S4, z.S4, V11.S4

// ERFCXR: V4 = erfcxR(V9, phiT). Clobbers V1-V4.
#define ERFCXR \
	K(vconst_phiT, V1); \
	VMOV  V25.B16, V3.B16; \
	VFMLA V1.S4, V9.S4, V3.S4; \
	FDIV4S(1, 25, 3); \
	K(vconst_erfcC0, V2); \
	FSUB4S(1, 1, 2); \
	K(vconst_erfcR9, V3); \
	K(vconst_erfcR8, V4); \
	VFMLA V3.S4, V1.S4, V4.S4; \
	K(vconst_erfcR7, V3); \
	VFMLA V4.S4, V1.S4, V3.S4; \
	K(vconst_erfcR6, V4); \
	VFMLA V3.S4, V1.S4, V4.S4; \
	K(vconst_erfcR5, V3); \
	VFMLA V4.S4, V1.S4, V3.S4; \
	K(vconst_erfcR4, V4); \
	VFMLA V3.S4, V1.S4, V4.S4; \
	K(vconst_erfcR3, V3); \
	VFMLA V4.S4, V1.S4, V3.S4; \
	K(vconst_erfcR2, V4); \
	VFMLA V3.S4, V1.S4, V4.S4; \
	K(vconst_erfcR1, V3); \
	VFMLA V4.S4, V1.S4, V3.S4; \
	K(vconst_erfcR0, V4); \
	VFMLA V3.S4, V1.S4, V4.S4

// GELU's Φ (phiGauss), in parts, as in vmath_amd64.s. PHIPRE: from x in
// V8, V9 = |x|, V12 = x²/2 (rounded) and V13 = its low part. PHISMALL:
// V11 = Φ by the polynomial and V15 = the lanes it serves (-1.2374 < x <
// 2.1213). GAUSS: V14 = e^(-x²/2), 0 for |x| ≥ 16. PHILARGE: V10 = Φ,
// V11 in the small lanes and the erfc form in the others (needs V14).
// They clobber V0-V5.
#define PHIPRE \
	FABS4S(9, 8); \
	FMUL4S(12, 8, 8); \
	FNEG4S(13, 12); \
	VFMLA V8.S4, V8.S4, V13.S4; \
	K(vconst_half, V1); \
	FMUL4S(12, 12, 1); \
	FMUL4S(13, 13, 1)

#define PHISMALL \
	K(vconst_sqrtHalf, V1); \
	FMUL4S(10, 8, 1); \
	ERFP(V12); \
	VMOV  V10.B16, V2.B16; \
	VFMLA V11.S4, V10.S4, V2.S4; \
	K(vconst_half, V1); \
	VMOV  V1.B16, V11.B16; \
	VFMLA V2.S4, V1.S4, V11.S4; \
	K(vconst_phiNeg, V2); \
	FCMGT4S(15, 8, 2); \
	K(vconst_phiPos, V2); \
	FCMGT4S(2, 2, 8); \
	VAND  V2.B16, V15.B16, V15.B16

#define GAUSS \
	FNEG4S(0, 12); \
	EXPF; \
	VFMLS V13.S4, V0.S4, V0.S4; \
	K(vconst_phiHuge, V1); \
	FCMGE4S(2, 9, 1); \
	BIC16B(14, 0, 2)

#define PHILARGE \
	ERFCXR; \
	K(vconst_half, V1); \
	FMUL4S(1, 14, 1); \
	FMUL4S(1, 1, 4); \
	FSUB4S(2, 25, 1); \
	VEOR V3.B16, V3.B16, V3.B16; \
	FCMGT4S(3, 8, 3); \
	VBIT V3.B16, V2.B16, V1.B16; \
	VMOV V1.B16, V10.B16; \
	VBIT V15.B16, V11.B16, V10.B16

// func geluVec(dst, src *float32, n int)
TEXT ·geluVec(SB), NOSPLIT, $0-24
	PROLOGUE
	EXPCONSTS

loop:
	VLD1.P 16(R1), [V8.S4]
	PHIPRE
	PHISMALL
	VMOV   V11.B16, V10.B16
	ALLSET(V15)
	BEQ    small                  // every lane small: no exponential needed
	GAUSS
	PHILARGE

small:
	FMUL4S(0, 8, 10)
	NEXT(V0)

done:
	RET

// func geluGradVec(dst, src *float32, n int)
TEXT ·geluGradVec(SB), NOSPLIT, $0-24
	PROLOGUE
	EXPCONSTS

loop:
	VLD1.P 16(R1), [V8.S4]
	PHIPRE
	PHISMALL
	GAUSS
	VMOV   V11.B16, V10.B16
	ALLSET(V15)
	BEQ    small
	PHILARGE

small:
	K(vconst_invSqrt2Pi, V1)
	FMUL4S(0, 14, 1)
	VMOV   V10.B16, V2.B16
	VFMLA  V0.S4, V8.S4, V2.S4
	NEXT(V2)

done:
	RET

// GELUTANH: from x in V8, V12 = 2u, V6 = σ(2u), V7 = 1-σ(2u). Clobbers
// V0-V5.
#define GELUTANH \
	FMUL4S(1, 8, 8); \
	FMUL4S(1, 1, 8); \
	K(vconst_geluKappa, V2); \
	VMOV  V8.B16, V3.B16; \
	VFMLA V1.S4, V2.S4, V3.S4; \
	K(vconst_geluBeta2, V2); \
	FMUL4S(12, 3, 2); \
	SIGMOID

// func geluTanhVec(dst, src *float32, n int)
TEXT ·geluTanhVec(SB), NOSPLIT, $0-24
	PROLOGUE
	EXPCONSTS

loop:
	VLD1.P 16(R1), [V8.S4]
	GELUTANH
	FMUL4S(0, 8, 6)
	NEXT(V0)

done:
	RET

// func geluTanhGradVec(dst, src *float32, n int)
TEXT ·geluTanhGradVec(SB), NOSPLIT, $0-24
	PROLOGUE
	EXPCONSTS

loop:
	VLD1.P 16(R1), [V8.S4]
	K(vconst_negGeluXMax, V2)
	FMAX4S(8, 2, 8)
	K(vconst_geluXMax, V2)
	FMIN4S(8, 2, 8)               // x clamped to ±1e4
	GELUTANH
	FMUL4S(1, 8, 8)
	K(vconst_geluKappa3, V2)
	VMOV  V25.B16, V3.B16
	VFMLA V1.S4, V2.S4, V3.S4
	K(vconst_geluBeta2, V2)
	FMUL4S(3, 3, 2)               // 2u'
	FMUL4S(1, 8, 3)
	FMUL4S(1, 1, 6)               // (x·2u')·σ
	VMOV  V6.B16, V2.B16
	VFMLA V7.S4, V1.S4, V2.S4     // · (1-σ) + σ
	NEXT(V2)

done:
	RET
