//go:build !purego

#include "textflag.h"
#include "vmath_amd64.h"

// σ and the tanh form of GELU, x·σ(2u), with its derivative, in AVX2+FMA:
// sigmoidVec, geluTanhVec and geluTanhGradVec (vmath_amd64.go), each the
// Go function of vmath.go it is named after, operation for operation.

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

// func sigmoidVec(dst, src *float32, n int)
TEXT ·sigmoidVec(SB), NOSPLIT, $0-24
	PROLOGUE(Y12)
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
	PROLOGUE(Y8)
	GELUTANH
	VMULPS  Y6, Y8, Y0
	EPILOGUE

// func geluTanhGradVec(dst, src *float32, n int)
TEXT ·geluTanhGradVec(SB), NOSPLIT, $0-24
	PROLOGUE(Y8)
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
