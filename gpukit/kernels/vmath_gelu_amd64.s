//go:build !purego

#include "textflag.h"
#include "vmath_amd64.h"

// GELU, x·Φ(x), and its derivative in AVX2+FMA: geluVec and geluGradVec
// (vmath_amd64.go), each the Go function of vmath.go it is named after,
// operation for operation, through phiGauss's parts below.

// ERFP: Y11 = erfP(zreg). Clobbers Y1.
#define ERFP(zreg) \
	VBROADCASTSS K(ERF_P8), Y11; \
	HORNER3(Y11, zreg, Y1, K(ERF_P7), K(ERF_P6), K(ERF_P5)); \
	HORNER3(Y11, zreg, Y1, K(ERF_P4), K(ERF_P3), K(ERF_P2)); \
	HORNER2(Y11, zreg, Y1, K(ERF_P1), K(ERF_P0))

// ERFCXR: Y4 = erfcxR(Y9, K(coff)). Clobbers Y1-Y4.
#define ERFCXR(coff) \
	VBROADCASTSS K(coff), Y1; \
	VBROADCASTSS K(ONE), Y2; \
	VFMADD213PS  Y2, Y9, Y1; \
	VDIVPS       Y1, Y2, Y1; \
	VBROADCASTSS K(ERFC_C0), Y3; \
	VSUBPS       Y3, Y1, Y1; \
	VBROADCASTSS K(ERFC_R9), Y4; \
	HORNER3(Y4, Y1, Y3, K(ERFC_R8), K(ERFC_R7), K(ERFC_R6)); \
	HORNER3(Y4, Y1, Y3, K(ERFC_R5), K(ERFC_R4), K(ERFC_R3)); \
	HORNER3(Y4, Y1, Y3, K(ERFC_R2), K(ERFC_R1), K(ERFC_R0))

// GELU's Φ (phiGauss), in parts. PHISMALL: from x in Y8, Y9 = |x|,
// Y12 = x²/2 (rounded), Y13 = its low part, Y11 = Φ by the polynomial
// and Y15 = the lanes it serves (-1.2374 < x < 2.1213). GAUSS: Y14 =
// e^(-x²/2), 0 for |x| ≥ 16. PHILARGE: Y10 = Φ, Y11 in the small lanes and
// the erfc form in the others (needs Y14). They clobber Y0-Y5.
#define PHISMALL \
	VBROADCASTSS K(ABS_MASK), Y1; \
	VANDPS       Y1, Y8, Y9; \
	VMULPS       Y8, Y8, Y12; \
	VMOVAPS      Y12, Y13; \
	VFMSUB231PS  Y8, Y8, Y13; \
	VBROADCASTSS K(HALF), Y1; \
	VMULPS       Y1, Y12, Y12; \
	VMULPS       Y1, Y13, Y13; \
	VBROADCASTSS K(SQRT_HALF), Y1; \
	VMULPS       Y1, Y8, Y10; \
	ERFP(Y12); \
	VFMADD213PS  Y10, Y10, Y11; \
	VBROADCASTSS K(HALF), Y1; \
	VFMADD213PS  Y1, Y1, Y11; \
	VBROADCASTSS K(PHI_NEG), Y2; \
	VCMPPS       $0x1e, Y2, Y8, Y15; \
	VBROADCASTSS K(PHI_POS), Y2; \
	VCMPPS       $0x11, Y2, Y8, Y2; \
	VANDPS       Y2, Y15, Y15

#define GAUSS \
	VBROADCASTSS K(SIGN_MASK), Y1; \
	VXORPS       Y1, Y12, Y0; \
	EXPF; \
	VFNMADD231PS Y13, Y0, Y0; \
	VBROADCASTSS K(PHI_HUGE), Y1; \
	VCMPPS       $0x1d, Y1, Y9, Y2; \
	VANDNPS      Y0, Y2, Y14

#define PHILARGE \
	ERFCXR(PHI_T); \
	VBROADCASTSS K(HALF), Y1; \
	VMULPS       Y1, Y14, Y1; \
	VMULPS       Y4, Y1, Y1; \
	VBROADCASTSS K(ONE), Y2; \
	VSUBPS       Y1, Y2, Y2; \
	VXORPS       Y3, Y3, Y3; \
	VCMPPS       $0x1e, Y3, Y8, Y3; \
	VBLENDVPS    Y3, Y2, Y1, Y1; \
	VBLENDVPS    Y15, Y11, Y1, Y10

// func geluVec(dst, src *float32, n int)
TEXT ·geluVec(SB), NOSPLIT, $0-24
	PROLOGUE(Y8)
	PHISMALL
	VMOVAPS   Y11, Y10
	ALLSET(Y15)
	JEQ       small // every lane small: no exponential needed
	GAUSS
	PHILARGE
small:
	VMULPS    Y10, Y8, Y0
	EPILOGUE

// func geluGradVec(dst, src *float32, n int)
TEXT ·geluGradVec(SB), NOSPLIT, $0-24
	PROLOGUE(Y8)
	PHISMALL
	GAUSS
	VMOVAPS      Y11, Y10
	ALLSET(Y15)
	JEQ          small
	PHILARGE
small:
	VBROADCASTSS K(INV_SQRT2PI), Y1
	VMULPS       Y1, Y14, Y0
	VFMADD213PS  Y10, Y8, Y0
	EPILOGUE
