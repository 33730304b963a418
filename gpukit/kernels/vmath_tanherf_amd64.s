//go:build !purego

#include "textflag.h"
#include "vmath_amd64.h"

// tanh and erf in AVX2+FMA: tanhVec and erfVec (vmath_amd64.go), each
// the Go function of vmath.go it is named after, operation for operation:
// the odd polynomial below 0.75 and, above it, the eight intervals of
// vmath_tables.go, every lane's coefficients looked up with one VPERMPS.
// The row offsets into tanhQ and erfQ are j·32 (row j, eight float32);
// vmath_amd64.go checks at compile time the degrees unrolled here.

// func tanhVec(dst, src *float32, n int)
TEXT ·tanhVec(SB), NOSPLIT, $0-24
	PROLOGUE
loop:
	VMOVUPS      (SI), Y8
	VBROADCASTSS K(ABS_MASK), Y1
	VANDPS       Y1, Y8, Y9        // a
	VMULPS       Y8, Y8, Y10       // z
	VBROADCASTSS ·tanhT+24(SB), Y11
	VBROADCASTSS ·tanhT+20(SB), Y1
	VFMADD213PS  Y1, Y10, Y11
	VBROADCASTSS ·tanhT+16(SB), Y1
	VFMADD213PS  Y1, Y10, Y11
	VBROADCASTSS ·tanhT+12(SB), Y1
	VFMADD213PS  Y1, Y10, Y11
	VBROADCASTSS ·tanhT+8(SB), Y1
	VFMADD213PS  Y1, Y10, Y11
	VBROADCASTSS ·tanhT+4(SB), Y1
	VFMADD213PS  Y1, Y10, Y11
	VBROADCASTSS ·tanhT+0(SB), Y1
	VFMADD213PS  Y1, Y10, Y11
	VMULPS       Y11, Y10, Y11
	VFMADD213PS  Y8, Y8, Y11       // small: x + x·(z·T(z))
	VBROADCASTSS K(TANH_MAX), Y1
	VMINPS       Y9, Y1, Y12       // min(a, tanhMax); NaN stays
	VPSRLD       $22, Y12, Y13
	VPBROADCASTD K(TANH_BASE), Y1
	VPSUBD       Y1, Y13, Y13      // interval
	VPERMPS      ·tanhC(SB), Y13, Y1
	VSUBPS       Y1, Y12, Y12      // t = a - c
	VPERMPS      ·tanhQ+224(SB), Y13, Y0
	VPERMPS      ·tanhQ+192(SB), Y13, Y1
	VFMADD213PS  Y1, Y12, Y0
	VPERMPS      ·tanhQ+160(SB), Y13, Y1
	VFMADD213PS  Y1, Y12, Y0
	VPERMPS      ·tanhQ+128(SB), Y13, Y1
	VFMADD213PS  Y1, Y12, Y0
	VPERMPS      ·tanhQ+96(SB), Y13, Y1
	VFMADD213PS  Y1, Y12, Y0
	VPERMPS      ·tanhQ+64(SB), Y13, Y1
	VFMADD213PS  Y1, Y12, Y0
	VPERMPS      ·tanhQ+32(SB), Y13, Y1
	VFMADD213PS  Y1, Y12, Y0
	VPERMPS      ·tanhQ+0(SB), Y13, Y1
	VFMADD213PS  Y1, Y12, Y0
	VPERMPS      ·tanhC0(SB), Y13, Y1
	VFMADD213PS  Y1, Y12, Y0        // c0 + t·q(t)
	VBROADCASTSS K(TANH_SPLIT), Y1
	VCMPPS       $0x11, Y1, Y9, Y2 // a < 0.75
	VBLENDVPS    Y2, Y11, Y0, Y0
	VBROADCASTSS K(SIGN_MASK), Y1
	VANDPS       Y1, Y8, Y1
	VORPS        Y1, Y0, Y0        // the sign of x (also on -0)
	NEXT
done:
	VZEROUPPER
	RET

// func erfVec(dst, src *float32, n int)
TEXT ·erfVec(SB), NOSPLIT, $0-24
	PROLOGUE
loop:
	VMOVUPS      (SI), Y8
	VBROADCASTSS K(ABS_MASK), Y1
	VANDPS       Y1, Y8, Y9        // a
	VMULPS       Y8, Y8, Y10       // x²
	VBROADCASTSS ·erfT+24(SB), Y11
	VBROADCASTSS ·erfT+20(SB), Y1
	VFMADD213PS  Y1, Y10, Y11
	VBROADCASTSS ·erfT+16(SB), Y1
	VFMADD213PS  Y1, Y10, Y11
	VBROADCASTSS ·erfT+12(SB), Y1
	VFMADD213PS  Y1, Y10, Y11
	VBROADCASTSS ·erfT+8(SB), Y1
	VFMADD213PS  Y1, Y10, Y11
	VBROADCASTSS ·erfT+4(SB), Y1
	VFMADD213PS  Y1, Y10, Y11
	VBROADCASTSS ·erfT+0(SB), Y1
	VFMADD213PS  Y1, Y10, Y11
	VFMADD213PS  Y8, Y8, Y11       // small: x + x·T(x²)
	VMOVAPS      Y11, Y0
	VBROADCASTSS K(ERF_SPLIT), Y1
	VCMPPS       $0x11, Y1, Y9, Y15 // a < 0.75
	VMOVMSKPS    Y15, AX
	CMPL         AX, $0xff
	JEQ          store             // every lane small
	VBROADCASTSS K(ERF_MAX), Y1
	VMINPS       Y9, Y1, Y12       // min(a, erfMax); NaN stays
	VPSRLD       $21, Y12, Y13
	VPBROADCASTD K(ERF_BASE), Y1
	VPSUBD       Y1, Y13, Y13
	VPBROADCASTD K(MAX_INDEX), Y1
	VPMINUD      Y1, Y13, Y13      // interval, at most 7
	VPERMPS      ·erfC(SB), Y13, Y1
	VSUBPS       Y1, Y12, Y12      // t = a - c
	VPERMPS      ·erfQ+256(SB), Y13, Y0
	VPERMPS      ·erfQ+224(SB), Y13, Y1
	VFMADD213PS  Y1, Y12, Y0
	VPERMPS      ·erfQ+192(SB), Y13, Y1
	VFMADD213PS  Y1, Y12, Y0
	VPERMPS      ·erfQ+160(SB), Y13, Y1
	VFMADD213PS  Y1, Y12, Y0
	VPERMPS      ·erfQ+128(SB), Y13, Y1
	VFMADD213PS  Y1, Y12, Y0
	VPERMPS      ·erfQ+96(SB), Y13, Y1
	VFMADD213PS  Y1, Y12, Y0
	VPERMPS      ·erfQ+64(SB), Y13, Y1
	VFMADD213PS  Y1, Y12, Y0
	VPERMPS      ·erfQ+32(SB), Y13, Y1
	VFMADD213PS  Y1, Y12, Y0
	VPERMPS      ·erfQ+0(SB), Y13, Y1
	VFMADD213PS  Y1, Y12, Y0
	VPERMPS      ·erfC0(SB), Y13, Y1
	VFMADD213PS  Y1, Y12, Y0        // c0 + t·q(t)
	VBROADCASTSS K(SIGN_MASK), Y1
	VANDPS       Y1, Y8, Y1
	VORPS        Y1, Y0, Y0        // the sign of x
	VBLENDVPS    Y15, Y11, Y0, Y0
store:
	NEXT
done:
	VZEROUPPER
	RET
