//go:build !purego

#include "textflag.h"
#include "neon_arm64.h"
#include "vmath_arm64.h"

// σ and the tanh form of GELU, x·σ(2u), with its derivative, in NEON:
// sigmoidVec, geluTanhVec and geluTanhGradVec (vmath_arm64.go), each the
// Go function of vmath.go it is named after, operation for operation, as
// in vmath_sigmoid_amd64.s.

// func sigmoidVec(dst, src *float32, n int)
TEXT ·sigmoidVec(SB), NOSPLIT, $0-24
	EXPCONSTS
	PROLOGUE(V12)
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
	EPILOGUE(V5)

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

// GELUTANH: from x in V8, V12 = 2u, V6 = σ(2u), V7 = 1-σ(2u). Clobbers
// V0-V5.
#define GELUTANH \
	FMUL4S(1, 8, 8); \
	FMUL4S(1, 1, 8); \
	K(GELU_KAPPA, V2); \
	FMA(V3, V1, V2, V8); \
	K(GELU_BETA2, V2); \
	FMUL4S(12, 3, 2); \
	SIGMOID

// func geluTanhVec(dst, src *float32, n int)
TEXT ·geluTanhVec(SB), NOSPLIT, $0-24
	EXPCONSTS
	PROLOGUE(V8)
	GELUTANH
	FMUL4S(0, 8, 6)
	EPILOGUE(V0)

// func geluTanhGradVec(dst, src *float32, n int)
TEXT ·geluTanhGradVec(SB), NOSPLIT, $0-24
	EXPCONSTS
	PROLOGUE(V8)
	K(NEG_GELU_XMAX, V2)
	FMAX4S(8, 2, 8)
	K(GELU_XMAX, V2)
	FMIN4S(8, 2, 8)               // x clamped to ±1e4
	GELUTANH
	FMUL4S(1, 8, 8)
	K(GELU_KAPPA3, V2)
	FMA(V3, V1, V2, V25)
	K(GELU_BETA2, V2)
	FMUL4S(3, 3, 2)               // 2u'
	FMUL4S(1, 8, 3)
	FMUL4S(1, 1, 6)               // (x·2u')·σ
	FMA(V2, V7, V1, V6)           // · (1-σ) + σ
	EPILOGUE(V2)
