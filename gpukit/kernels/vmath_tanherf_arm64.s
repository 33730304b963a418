//go:build !purego

#include "textflag.h"
#include "neon_arm64.h"
#include "vmath_arm64.h"

// tanh and erf in NEON: tanhVec and erfVec (vmath_arm64.go), each the Go
// function of vmath.go it is named after, operation for operation, as in
// vmath_tanherf_amd64.s: the odd polynomial below 0.75 and, above it, the
// eight intervals of vmath_tables.go, every lane's coefficients looked up
// with TBL on byte indices. The row offsets into tanhQ and erfQ are j·32
// (row j, eight float32); vmath_arm64.go checks at compile time the
// degrees unrolled here.

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
	K(TANH_SPLIT, V23)
	K(TANH_MAX, V24)
	K(TANH_BASE, V25)
	K(BYTE_SPREAD, V26)
	K(BYTE_OFFSETS, V27)
	K(SIGN_MASK, V28)
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
	K(ERF_SPLIT, V23)
	K(ERF_MAX, V24)
	K(ERF_BASE, V25)
	K(MAX_INDEX, V26)
	K(BYTE_SPREAD, V27)
	K(BYTE_OFFSETS, V28)
	K(SIGN_MASK, V29)
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
