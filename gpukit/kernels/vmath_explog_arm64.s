//go:build !purego

#include "textflag.h"
#include "neon_arm64.h"
#include "vmath_arm64.h"

// exp and log in NEON, four lanes at a time: expVec and logVec
// (vmath_arm64.go), each the Go function of vmath.go it is named after,
// operation for operation, as in vmath_explog_amd64.s.

// func expVec(dst, src *float32, n int)
TEXT ·expVec(SB), NOSPLIT, $0-24
	EXPCONSTS
	PROLOGUE(V0)
	EXPF
	EPILOGUE(V0)

// func logVec(dst, src *float32, n int)
TEXT ·logVec(SB), NOSPLIT, $0-24
	MOVD $·vk(SB), R4
	K(MIN_NORMAL, V16)
	K(TWO23, V17)
	K(BIAS, V18)
	K(BIAS150, V19)
	K(LOG_OFF, V20)
	K(MANT_MASK, V21)
	K(SQRT_HALF_BITS, V22)
	K(ONE, V23)
	K(TWO, V24)
	K(LOG_C4, V25)
	K(LOG_C3, V26)
	K(LOG_C2, V27)
	K(LOG_C1, V28)
	K(HALF, V29)
	K(LN2_HI, V30)
	K(LN2_LO, V31)
	PROLOGUE(V0)
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
	FMA(V5, V25, V4, V26)
	HORNER2(V5, V7, V4, V27, V28)
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
	K(INF, V6)
	FCMEQ4S(7, 0, 6)
	VBIT  V7.B16, V6.B16, V3.B16  // +Inf
	VEOR  V6.B16, V6.B16, V6.B16
	FCMEQ4S(7, 0, 6)
	K(NEG_INF, V5)
	VBIT  V7.B16, V5.B16, V3.B16  // ±0: -Inf
	FCMGE4S(7, 0, 6)              // x >= 0: false for negative and NaN
	K(NAN, V5)
	VBIF  V7.B16, V5.B16, V3.B16
	EPILOGUE(V3)
