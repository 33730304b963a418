//go:build !purego

#include "textflag.h"
#include "vmath_amd64.h"

// tanh and erf in AVX2+FMA: tanhVec and erfVec (vmath_amd64.go), each
// the Go function of vmath.go it is named after, operation for operation:
// the odd polynomial below 0.75 and, above it, the eight intervals of
// vmath_tables.go, every lane's coefficients looked up with one VPERMPS.
// The row offsets into tanhQ and erfQ are j·32 (row j, eight float32);
// vmath_amd64.go checks at compile time the degrees unrolled here.

// ODDPOLY(tab): from x in Y8, Y9 = a = |x|, Y10 = z = x² and Y11 =
// poly32(tab[:], z), tab the seven float32 of tanhT or erfT. Clobbers Y1.
#define ODDPOLY(tab) \
	VBROADCASTSS K(ABS_MASK), Y1; \
	VANDPS       Y1, Y8, Y9; \
	VMULPS       Y8, Y8, Y10; \
	VBROADCASTSS tab+24(SB), Y11; \
	HORNER3(Y11, Y10, Y1, tab+20(SB), tab+16(SB), tab+12(SB)); \
	HORNER3(Y11, Y10, Y1, tab+8(SB), tab+4(SB), tab+0(SB))

// QROW(row) is p = fma32(p, t, row[i]) with p in Y0, t in Y12 and each
// lane's interval i in Y13 (VPERMPS picks row[i]; Y1 scratch): one step
// of piece32's loop. PIECE(q, c0) ends it: rows 6 to 0 of q, then Y0 =
// fma32(t, p, c0[i]).
#define QROW(row) \
	VPERMPS     row, Y13, Y1; \
	VFMADD213PS Y1, Y12, Y0

#define PIECE(q, c0) \
	QROW(q+192(SB)); \
	QROW(q+160(SB)); \
	QROW(q+128(SB)); \
	QROW(q+96(SB)); \
	QROW(q+64(SB)); \
	QROW(q+32(SB)); \
	QROW(q+0(SB)); \
	QROW(c0(SB))

// func tanhVec(dst, src *float32, n int)
TEXT ·tanhVec(SB), NOSPLIT, $0-24
	PROLOGUE(Y8)
	ODDPOLY(·tanhT)                // a, z, T(z)
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
	PIECE(·tanhQ, ·tanhC0)         // c0 + t·q(t)
	VBROADCASTSS K(TANH_SPLIT), Y1
	VCMPPS       $0x11, Y1, Y9, Y2 // a < 0.75
	VBLENDVPS    Y2, Y11, Y0, Y0
	VBROADCASTSS K(SIGN_MASK), Y1
	VANDPS       Y1, Y8, Y1
	VORPS        Y1, Y0, Y0        // the sign of x (also on -0)
	EPILOGUE

// func erfVec(dst, src *float32, n int)
TEXT ·erfVec(SB), NOSPLIT, $0-24
	PROLOGUE(Y8)
	ODDPOLY(·erfT)                 // a, x², T(x²)
	VFMADD213PS  Y8, Y8, Y11       // small: x + x·T(x²)
	VMOVAPS      Y11, Y0
	VBROADCASTSS K(ERF_SPLIT), Y1
	VCMPPS       $0x11, Y1, Y9, Y15 // a < 0.75
	ALLSET(Y15)
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
	QROW(·erfQ+224(SB))
	PIECE(·erfQ, ·erfC0)           // c0 + t·q(t)
	VBROADCASTSS K(SIGN_MASK), Y1
	VANDPS       Y1, Y8, Y1
	VORPS        Y1, Y0, Y0        // the sign of x
	VBLENDVPS    Y15, Y11, Y0, Y0
store:
	EPILOGUE
