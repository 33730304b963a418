//go:build !purego

#include "textflag.h"
#include "neon_arm64.h"
#include "vmath_arm64.h"

// GELU, x·Φ(x), and its derivative in NEON: geluVec and geluGradVec
// (vmath_arm64.go), each the Go function of vmath.go it is named after,
// operation for operation, through phiGauss's parts below and, for the
// derivative, its own polynomial (GRADSMALL), as in vmath_gelu_amd64.s.

// KHORNER2(p, q, z, c1, c0) is HORNER2 (vmath_arm64.h) with the
// coefficients read from ·vk at offsets c1 and c0.
#define KHORNER2(p, q, z, c1, c0) \
	K(c1, q); \
	VFMLA p.S4, z.S4, q.S4; \
	K(c0, p); \
	VFMLA q.S4, z.S4, p.S4

// ERFP: V11 = erfP(z). Clobbers V3.
#define ERFP(z) \
	K(ERF_P8, V11); \
	KHORNER2(V11, V3, z, ERF_P7, ERF_P6); \
	KHORNER2(V11, V3, z, ERF_P5, ERF_P4); \
	KHORNER2(V11, V3, z, ERF_P3, ERF_P2); \
	KHORNER2(V11, V3, z, ERF_P1, ERF_P0)

// ERFCXR: V4 = erfcxR(V9, phiT). Clobbers V1-V4.
#define ERFCXR \
	K(PHI_T, V1); \
	FMA(V3, V1, V9, V25); \
	FDIV4S(1, 25, 3); \
	K(ERFC_C0, V2); \
	FSUB4S(1, 1, 2); \
	K(ERFC_R9, V3); \
	K(ERFC_R8, V4); \
	VFMLA V3.S4, V1.S4, V4.S4; \
	KHORNER2(V4, V3, V1, ERFC_R7, ERFC_R6); \
	KHORNER2(V4, V3, V1, ERFC_R5, ERFC_R4); \
	KHORNER2(V4, V3, V1, ERFC_R3, ERFC_R2); \
	KHORNER2(V4, V3, V1, ERFC_R1, ERFC_R0)

// GELU's Φ (phiGauss), in parts, as in vmath_gelu_amd64.s. HALFSQUARE:
// from x in V8, V9 = |x|, V12 = x²/2 (rounded), V13 = its low part.
// PHISMALL: HALFSQUARE, V11 = Φ by the polynomial and V15 = the lanes
// it serves (-1.2374 < x < 2.1213, SMALLLANES). GAUSS: V14 = e^(-x²/2),
// 0 for |x| ≥ 16. PHIERFC: V1 = Φ by the erfc form (needs V14). PHILARGE:
// V10 = Φ, V11 in the small lanes and the erfc form in the others. They
// clobber V0-V5.
#define HALFSQUARE \
	FABS4S(9, 8); \
	FMUL4S(12, 8, 8); \
	FNEG4S(13, 12); \
	VFMLA V8.S4, V8.S4, V13.S4; \
	K(HALF, V1); \
	FMUL4S(12, 12, 1); \
	FMUL4S(13, 13, 1)

#define SMALLLANES \
	K(PHI_NEG, V2); \
	FCMGT4S(15, 8, 2); \
	K(PHI_POS, V2); \
	FCMGT4S(2, 2, 8); \
	VAND  V2.B16, V15.B16, V15.B16

#define PHISMALL \
	HALFSQUARE; \
	K(SQRT_HALF, V1); \
	FMUL4S(10, 8, 1); \
	ERFP(V12); \
	FMA(V2, V11, V10, V10); \
	K(HALF, V1); \
	FMA(V11, V2, V1, V1); \
	SMALLLANES

// GRADSMALL: V11 = (½ + x·G₀) + x·(G(t) - G₀), t = x²/2 - c,
// geluGrad32's polynomial, for x in V8, and V15 = the lanes it serves
// (SMALLLANES). Clobbers V1-V3, V12.
#define GRADSMALL \
	FMUL4S(12, 8, 8); \
	K(HALF, V1); \
	FMUL4S(12, 12, 1); \
	K(GELU_GRAD_C, V1); \
	FSUB4S(12, 12, 1); \
	K(GELU_GRAD_G8, V11); \
	KHORNER2(V11, V3, V12, GELU_GRAD_G7, GELU_GRAD_G6); \
	KHORNER2(V11, V3, V12, GELU_GRAD_G5, GELU_GRAD_G4); \
	KHORNER2(V11, V3, V12, GELU_GRAD_G3, GELU_GRAD_G2); \
	K(GELU_GRAD_G1, V3); \
	VFMLA V11.S4, V12.S4, V3.S4; \
	FMUL4S(11, 3, 12); \
	K(GELU_GRAD_G0, V1); \
	K(HALF, V2); \
	VFMLA V8.S4, V1.S4, V2.S4; \
	VFMLA V8.S4, V11.S4, V2.S4; \
	VMOV  V2.B16, V11.B16; \
	SMALLLANES

#define GAUSS \
	FNEG4S(0, 12); \
	EXPF; \
	VFMLS V13.S4, V0.S4, V0.S4; \
	K(PHI_HUGE, V1); \
	FCMGE4S(2, 9, 1); \
	BIC16B(14, 0, 2)

#define PHIERFC \
	ERFCXR; \
	K(HALF, V1); \
	FMUL4S(1, 14, 1); \
	FMUL4S(1, 1, 4); \
	FSUB4S(2, 25, 1); \
	VEOR V3.B16, V3.B16, V3.B16; \
	FCMGT4S(3, 8, 3); \
	VBIT V3.B16, V2.B16, V1.B16

#define PHILARGE \
	PHIERFC; \
	VMOV V1.B16, V10.B16; \
	VBIT V15.B16, V11.B16, V10.B16

// func geluVec(dst, src *float32, n int)
TEXT ·geluVec(SB), NOSPLIT, $0-24
	EXPCONSTS
	PROLOGUE(V8)
	PHISMALL
	VMOV   V11.B16, V10.B16
	ALLSET(V15)
	BEQ    small                  // every lane small: no exponential needed
	GAUSS
	PHILARGE

small:
	FMUL4S(0, 8, 10)
	EPILOGUE(V0)

// func geluGradVec(dst, src *float32, n int)
TEXT ·geluGradVec(SB), NOSPLIT, $0-24
	EXPCONSTS
	PROLOGUE(V8)
	GRADSMALL
	VMOV   V11.B16, V2.B16
	ALLSET(V15)
	BEQ    small                  // every lane small: no exponential needed
	HALFSQUARE
	GAUSS
	PHIERFC
	K(INV_SQRT2PI, V2)
	FMUL4S(0, 14, 2)
	FMA(V2, V0, V8, V1)
	VBIT   V15.B16, V11.B16, V2.B16

small:
	EPILOGUE(V2)
