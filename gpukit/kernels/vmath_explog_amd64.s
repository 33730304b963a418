//go:build !purego

#include "textflag.h"
#include "vmath_amd64.h"

// exp and log in AVX2+FMA, eight lanes at a time: expVec and logVec
// (vmath_amd64.go), each the Go function of vmath.go it is named after,
// operation for operation. expVec also has an AVX-512 loop, sixteen lanes
// a step (EXPFZ), where useAVX512Math is set.

// func expVec(dst, src *float32, n int)
//
// The AVX2 loop takes two vectors a step (EXPF2), a last one alone.
TEXT ·expVec(SB), NOSPLIT, $0-24
	ARGS
	ZPROLOGUEEXP(Z0)
	EXPFZ
	ZEPILOGUE
	MOVQ    CX, DX
	SHRQ    $4, DX
	JZ      one

two:
	VMOVUPS (SI), Y0
	VMOVUPS 32(SI), Y6
	EXPF2(Y0, Y1, Y2, Y3, Y4, Y6, Y7, Y8, Y9, Y10, Y12)
	VMOVUPS Y0, (DI)
	VMOVUPS Y6, 32(DI)
	ADDQ    $64, DI
	ADDQ    $64, SI
	DECQ    DX
	JNZ     two

one:
	ANDQ    $15, CX
	LOOP8(Y0)
	EXPF
	EPILOGUE

// func logVec(dst, src *float32, n int)
TEXT ·logVec(SB), NOSPLIT, $0-24
	PROLOGUE(Y0)
	VPBROADCASTD K(MANT_MASK), Y1
	VPCMPGTD     Y1, Y0, Y2        // bits > 0x007fffff: at least 2⁻¹²⁶ (or +Inf, +NaN)
	VPBROADCASTD K(INF), Y1
	VPCMPGTD     Y0, Y1, Y5        // bits < 0x7f800000: finite (or negative)
	VPAND        Y5, Y2, Y2
	ALLSET(Y2)                     // lanes that are normal, positive and finite
	JNE          scale
	VMOVAPS      Y0, Y3            // all eight: no scaling, no special values
	VPBROADCASTD K(BIAS), Y4
	JMP          reduced
scale:
	VBROADCASTSS K(MIN_NORMAL), Y1
	VCMPPS       $0x11, Y1, Y0, Y2 // subnormal (or ≤ 0: blended away below)
	VBROADCASTSS K(TWO23), Y1
	VMULPS       Y1, Y0, Y1
	VBLENDVPS    Y2, Y1, Y0, Y3    // x scaled into the normal range
	VPBROADCASTD K(BIAS), Y4
	VPBROADCASTD K(BIAS150), Y1
	VBLENDVPS    Y2, Y1, Y4, Y4    // exponent bias, 127 or 127+23
reduced:
	VPBROADCASTD K(LOG_OFF), Y1
	VPADDD       Y1, Y3, Y3
	VPSRLD       $23, Y3, Y1
	VPSUBD       Y4, Y1, Y1
	VCVTDQ2PS    Y1, Y1            // dk
	VPBROADCASTD K(MANT_MASK), Y2
	VPAND        Y2, Y3, Y3
	VPBROADCASTD K(SQRT_HALF_BITS), Y2
	VPADDD       Y2, Y3, Y3
	VBROADCASTSS K(ONE), Y2
	VSUBPS       Y2, Y3, Y3        // f
	VBROADCASTSS K(TWO), Y2
	VADDPS       Y3, Y2, Y2
	VDIVPS       Y2, Y3, Y2        // s = f/(2+f)
	VMULPS       Y2, Y2, Y4        // z
	VBROADCASTSS K(LOG_C4), Y5
	HORNER3(Y5, Y4, Y7, K(LOG_C3), K(LOG_C2), K(LOG_C1))
	VMULPS       Y4, Y5, Y5        // R
	VADDPS       Y2, Y2, Y7
	VSUBPS       Y7, Y3, Y7        // f - 2s
	VFNMADD231PS Y3, Y2, Y7        // r = (f - 2s) - s·f
	VBROADCASTSS K(HALF), Y6
	VMULPS       Y6, Y3, Y9        // hf = f/2
	VMULPS       Y3, Y2, Y8        // s·f
	VMULPS       Y3, Y9, Y10       // hi
	VMOVAPS      Y10, Y11
	VFMSUB231PS  Y3, Y9, Y11       // lo = hf·f - hi
	VSUBPS       Y10, Y3, Y12      // u = f - hi
	VSUBPS       Y12, Y3, Y13
	VSUBPS       Y10, Y13, Y13     // eu = (f - u) - hi
	VBROADCASTSS K(LN2_HI), Y6
	VMOVAPS      Y12, Y14
	VFMADD231PS  Y6, Y1, Y14       // S = dk·ln2Hi + u
	VMOVAPS      Y14, Y15
	VFMSUB231PS  Y6, Y1, Y15       // dk·ln2Hi - S
	VADDPS       Y12, Y15, Y15     // es
	VSUBPS       Y11, Y13, Y13
	VADDPS       Y13, Y15, Y15     // es + (eu - lo)
	VBROADCASTSS K(LN2_LO), Y6
	VFMADD231PS  Y6, Y1, Y15       // w = dk·ln2Lo + ...
	VFMADD231PS  Y8, Y7, Y15       // w += r·(s·f)
	VFMADD231PS  Y5, Y2, Y15       // s·R + w
	VFMADD231PS  Y10, Y2, Y15      // t = s·hi + (s·R + w)
	VADDPS       Y15, Y14, Y3      // S + t
	VMOVAPS      Y3, Y0
	CMPL         AX, $0xff
	JEQ          store
	VMOVUPS      (SI), Y0          // x again, for the special values
	VBROADCASTSS K(INF), Y6
	VCMPPS       $0, Y6, Y0, Y7
	VBLENDVPS    Y7, Y6, Y3, Y3    // +Inf
	VXORPS       Y6, Y6, Y6
	VCMPPS       $0, Y6, Y0, Y7
	VBROADCASTSS K(NEG_INF), Y5
	VBLENDVPS    Y7, Y5, Y3, Y3    // ±0: -Inf
	VCMPPS       $0x19, Y6, Y0, Y7 // !(x >= 0): negative or NaN
	VBROADCASTSS K(NAN), Y5
	VBLENDVPS    Y7, Y5, Y3, Y0
store:
	EPILOGUE
