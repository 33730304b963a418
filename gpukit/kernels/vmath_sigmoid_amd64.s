//go:build !purego

#include "textflag.h"
#include "vmath_amd64.h"

// σ and the tanh form of GELU, x·σ(2u), with its derivative, in AVX2+FMA:
// sigmoidVec, geluTanhVec and geluTanhGradVec (vmath_amd64.go), each the
// Go function of vmath.go it is named after, operation for operation.
// Each also has an AVX-512 loop, sixteen lanes a step, where
// useAVX512Math is set, through the Z forms of the macros below.

// EXPNEGABS: Y0 = e = exp32(-|v|) from v in Y12, as sigmoid32 and
// sigmoidParts begin. Clobbers Y1-Y5.
#define EXPNEGABS \
	VBROADCASTSS K(ABS_MASK), Y1; \
	VANDPS       Y1, Y12, Y0; \
	VBROADCASTSS K(SIGN_MASK), Y1; \
	VXORPS       Y1, Y0, Y0; \
	EXPF

// SIGMOID: from v in Y12, Y6 = σ(v) and Y7 = 1-σ(v) (sigmoidParts).
// Clobbers Y0-Y5.
#define SIGMOID \
	EXPNEGABS; \
	VBROADCASTSS K(ONE), Y1; \
	VADDPS       Y1, Y0, Y3; \
	VDIVPS       Y3, Y1, Y2; \
	VDIVPS       Y3, Y0, Y3; \
	VXORPS       Y4, Y4, Y4; \
	VCMPPS       $0x1d, Y4, Y12, Y4; \
	VBLENDVPS    Y4, Y2, Y3, Y6; \
	VBLENDVPS    Y4, Y3, Y2, Y7

// GELUTANH: from x in Y8, Y12 = 2u, Y6 = σ(2u), Y7 = 1-σ(2u). Clobbers
// Y0-Y5.
#define GELUTANH \
	VMULPS       Y8, Y8, Y1; \
	VMULPS       Y8, Y1, Y1; \
	VBROADCASTSS K(GELU_KAPPA), Y2; \
	VFMADD213PS  Y8, Y2, Y1; \
	VBROADCASTSS K(GELU_BETA2), Y2; \
	VMULPS       Y2, Y1, Y12; \
	SIGMOID

// The Z forms: the macros above on sixteen lanes, Zn for Yn, the same
// operations in the same order; VPANDD and VPXORD for VANDPS and VXORPS
// (the same bits), the mask of v ≥ 0 in K2 and each VBLENDVPS m, a, b, d
// (d = m ? a : b) as d = b, then a moved into d under K2.

// EXPNEGABSZ: Z0 = exp32(-|v|) from v in Z12. Clobbers Z1-Z5, K3.
#define EXPNEGABSZ \
	VBROADCASTSS K(ABS_MASK), Z1; \
	VPANDD       Z1, Z12, Z0; \
	VBROADCASTSS K(SIGN_MASK), Z1; \
	VPXORD       Z1, Z0, Z0; \
	EXPFZ

// SIGMOIDZ: from v in Z12, Z6 = σ(v) and Z7 = 1-σ(v). Clobbers Z0-Z5,
// K2, K3.
#define SIGMOIDZ \
	EXPNEGABSZ; \
	VBROADCASTSS K(ONE), Z1; \
	VADDPS       Z1, Z0, Z3; \
	VDIVPS       Z3, Z1, Z2; \
	VDIVPS       Z3, Z0, Z3; \
	VPXORD       Z4, Z4, Z4; \
	VCMPPS       $0x1d, Z4, Z12, K2; \
	VMOVAPS      Z3, Z6; \
	VMOVAPS      Z2, K2, Z6; \
	VMOVAPS      Z2, Z7; \
	VMOVAPS      Z3, K2, Z7

// GELUTANHZ: from x in Z8, Z12 = 2u, Z6 = σ(2u), Z7 = 1-σ(2u). Clobbers
// Z0-Z5, K2, K3.
#define GELUTANHZ \
	VMULPS       Z8, Z8, Z1; \
	VMULPS       Z8, Z1, Z1; \
	VBROADCASTSS K(GELU_KAPPA), Z2; \
	VFMADD213PS  Z8, Z2, Z1; \
	VBROADCASTSS K(GELU_BETA2), Z2; \
	VMULPS       Z2, Z1, Z12; \
	SIGMOIDZ

// func sigmoidVec(dst, src *float32, n int)
TEXT ·sigmoidVec(SB), NOSPLIT, $0-24
	ARGS
	ZPROLOGUEEXP(Z12)
	EXPNEGABSZ
	VBROADCASTSS K(ONE), Z1
	VADDPS       Z1, Z0, Z3
	VSUBPS       Z3, Z1, Z4
	VADDPS       Z0, Z4, Z4
	VDIVPS       Z3, Z1, Z2
	VPXORD       Z6, Z6, Z6
	VCMPPS       $0x1d, Z6, Z12, K2
	VMOVAPS      Z0, Z7
	VMOVAPS      Z1, K2, Z7
	VMULPS       Z2, Z7, Z5
	VFNMADD231PS Z3, Z5, Z7
	VFNMADD231PS Z4, Z5, Z7
	VFMADD213PS  Z5, Z2, Z7
	VMOVAPS      Z7, Z0
	ZEPILOGUE
	LOOP8(Y12)
	EXPNEGABS                      // e = e^(-|x|)
	VBROADCASTSS K(ONE), Y1
	VADDPS       Y1, Y0, Y3        // d = 1 + e
	VSUBPS       Y3, Y1, Y4
	VADDPS       Y0, Y4, Y4        // dl = (1 - d) + e
	VDIVPS       Y3, Y1, Y2        // inv = 1/d
	VXORPS       Y6, Y6, Y6
	VCMPPS       $0x1d, Y6, Y12, Y6 // x >= 0
	VBLENDVPS    Y6, Y1, Y0, Y7    // n
	VMULPS       Y2, Y7, Y5        // q = n·inv
	VFNMADD231PS Y3, Y5, Y7        // n - q·d
	VFNMADD231PS Y4, Y5, Y7        // c = n - q·d - q·dl
	VFMADD213PS  Y5, Y2, Y7        // q + c·inv
	VMOVAPS      Y7, Y0
	EPILOGUE

// func geluTanhVec(dst, src *float32, n int)
TEXT ·geluTanhVec(SB), NOSPLIT, $0-24
	ARGS
	ZPROLOGUEEXP(Z8)
	GELUTANHZ
	VMULPS  Z6, Z8, Z0
	ZEPILOGUE
	LOOP8(Y8)
	GELUTANH
	VMULPS  Y6, Y8, Y0
	EPILOGUE

// func geluTanhGradVec(dst, src *float32, n int)
TEXT ·geluTanhGradVec(SB), NOSPLIT, $0-24
	ARGS
	ZPROLOGUEEXP(Z8)
	VBROADCASTSS K(NEG_GELU_XMAX), Z2
	VMAXPS       Z8, Z2, Z8
	VBROADCASTSS K(GELU_XMAX), Z2
	VMINPS       Z8, Z2, Z8
	GELUTANHZ
	VMULPS       Z8, Z8, Z1
	VBROADCASTSS K(GELU_KAPPA3), Z2
	VBROADCASTSS K(ONE), Z3
	VFMADD213PS  Z3, Z2, Z1
	VBROADCASTSS K(GELU_BETA2), Z2
	VMULPS       Z2, Z1, Z1
	VMULPS       Z1, Z8, Z1
	VMULPS       Z6, Z1, Z1
	VFMADD213PS  Z6, Z7, Z1
	VMOVAPS      Z1, Z0
	ZEPILOGUE
	LOOP8(Y8)
	VBROADCASTSS K(NEG_GELU_XMAX), Y2
	VMAXPS       Y8, Y2, Y8
	VBROADCASTSS K(GELU_XMAX), Y2
	VMINPS       Y8, Y2, Y8        // x clamped to ±1e4
	GELUTANH
	VMULPS       Y8, Y8, Y1
	VBROADCASTSS K(GELU_KAPPA3), Y2
	VBROADCASTSS K(ONE), Y3
	VFMADD213PS  Y3, Y2, Y1
	VBROADCASTSS K(GELU_BETA2), Y2
	VMULPS       Y2, Y1, Y1        // 2u'
	VMULPS       Y1, Y8, Y1
	VMULPS       Y6, Y1, Y1        // (x·2u')·σ
	VFMADD213PS  Y6, Y7, Y1        // · (1-σ) + σ
	VMOVAPS      Y1, Y0
	EPILOGUE
