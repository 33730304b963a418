//go:build !purego

#include "textflag.h"
#include "vmath_amd64.h"

// GELU, x·Φ(x), and its derivative in AVX2+FMA: geluVec and geluGradVec
// (vmath_amd64.go), each the Go function of vmath.go it is named after,
// operation for operation, through phiGauss's parts below and, for the
// derivative, its own polynomial (GRADPOLY). Every function here also
// has an AVX-512 loop, sixteen lanes a vector, where useAVX512Math is
// set: the same operations, through the macros that take their
// registers as arguments (ERFP, ERFCXR, GELUPOLY2, GRADPOLY and the
// rest) with Z registers and the Z forms of the others (PHISMALLZ and
// the rest, after the Y forms), with the lane masks in K registers.

// ERFP(p, z, t): p = erfP(z). Clobbers t. ERFCXR(coff, x, u, one, c, r):
// r = erfcxR(x, K(coff)). Clobbers u, one and c. Their register arguments
// are all Y (the loops below) or all Z (the AVX-512 loops): the same
// instructions on eight or sixteen lanes.
#define ERFP(p, z, t) \
	VBROADCASTSS K(ERF_P8), p; \
	HORNER3(p, z, t, K(ERF_P7), K(ERF_P6), K(ERF_P5)); \
	HORNER3(p, z, t, K(ERF_P4), K(ERF_P3), K(ERF_P2)); \
	HORNER2(p, z, t, K(ERF_P1), K(ERF_P0))

#define ERFCXR(coff, x, u, one, c, r) \
	VBROADCASTSS K(coff), u; \
	VBROADCASTSS K(ONE), one; \
	VFMADD213PS  one, x, u; \
	VDIVPS       u, one, u; \
	VBROADCASTSS K(ERFC_C0), c; \
	VSUBPS       c, u, u; \
	VBROADCASTSS K(ERFC_R9), r; \
	HORNER3(r, u, c, K(ERFC_R8), K(ERFC_R7), K(ERFC_R6)); \
	HORNER3(r, u, c, K(ERFC_R5), K(ERFC_R4), K(ERFC_R3)); \
	HORNER3(r, u, c, K(ERFC_R2), K(ERFC_R1), K(ERFC_R0))

// HALFSQUARE: from x in Y8, Y9 = |x| and x²/2 in two parts, Y12 = x²/2
// rounded and Y13 its low part (the exact split of x², halved), as
// phiGauss begins. Clobbers Y1.
#define HALFSQUARE \
	VBROADCASTSS K(ABS_MASK), Y1; \
	VANDPS       Y1, Y8, Y9; \
	VMULPS       Y8, Y8, Y12; \
	VMOVAPS      Y12, Y13; \
	VFMSUB231PS  Y8, Y8, Y13; \
	VBROADCASTSS K(HALF), Y1; \
	VMULPS       Y1, Y12, Y12; \
	VMULPS       Y1, Y13, Y13

// PHIERFC(d): d = Φ by the erfc form, ½·e^(-x²/2)·erfcxR on the negative
// side and 1 minus it on the positive, from x in Y8, |x| in Y9 and
// e^(-x²/2) in Y14 (PHILARGE's lanes outside the polynomial's interval,
// and geluLargeVec's and geluGradLargeVec's). Clobbers Y1-Y4.
#define PHIERFC(d) \
	ERFCXR(PHI_T, Y9, Y1, Y2, Y3, Y4); \
	VBROADCASTSS K(HALF), Y1; \
	VMULPS       Y1, Y14, Y1; \
	VMULPS       Y4, Y1, Y1; \
	VBROADCASTSS K(ONE), Y2; \
	VSUBPS       Y1, Y2, Y2; \
	VXORPS       Y3, Y3, Y3; \
	VCMPPS       $0x1e, Y3, Y8, Y3; \
	VBLENDVPS    Y3, Y2, Y1, d

// GELU's Φ (phiGauss), in parts. PHISMALL: from x in Y8, Y9 = |x|,
// Y12 = x²/2 (rounded), Y13 = its low part, Y11 = Φ by the polynomial
// and Y15 = the lanes it serves (-1.2374 < x < 2.1213). GAUSS: Y14 =
// e^(-x²/2), 0 for |x| ≥ 16. PHILARGE: Y10 = Φ, Y11 in the small lanes and
// the erfc form in the others (needs Y14). They clobber Y0-Y5.
#define PHISMALL \
	HALFSQUARE; \
	VBROADCASTSS K(SQRT_HALF), Y1; \
	VMULPS       Y1, Y8, Y10; \
	ERFP(Y11, Y12, Y1); \
	VFMADD213PS  Y10, Y10, Y11; \
	VBROADCASTSS K(HALF), Y1; \
	VFMADD213PS  Y1, Y1, Y11; \
	SMALLLANES

// SMALLLANES: Y15 = the lanes of x in Y8 that Φ's polynomial serves
// (-1.2374 < x < 2.1213). Clobbers Y2.
#define SMALLLANES \
	VBROADCASTSS K(PHI_NEG), Y2; \
	VCMPPS       $0x1e, Y2, Y8, Y15; \
	VBROADCASTSS K(PHI_POS), Y2; \
	VCMPPS       $0x11, Y2, Y8, Y2; \
	VANDPS       Y2, Y15, Y15

// GRADPOLY(t, u, x, h, p): p = (½ + x·G₀) + x·(G(h) - G₀), h = x²/2 -
// c, geluGrad32's polynomial, on Y or Z registers. Clobbers t, u.
#define GRADPOLY(t, u, x, h, p) \
	VMULPS       x, x, h; \
	VBROADCASTSS K(HALF), t; \
	VMULPS       t, h, h; \
	VBROADCASTSS K(GELU_GRAD_C), t; \
	VSUBPS       t, h, h; \
	VBROADCASTSS K(GELU_GRAD_G8), p; \
	HORNER3(p, h, t, K(GELU_GRAD_G7), K(GELU_GRAD_G6), K(GELU_GRAD_G5)); \
	HORNER3(p, h, t, K(GELU_GRAD_G4), K(GELU_GRAD_G3), K(GELU_GRAD_G2)); \
	HORNER(p, h, t, K(GELU_GRAD_G1)); \
	VMULPS       h, p, p; \
	VBROADCASTSS K(GELU_GRAD_G0), u; \
	VBROADCASTSS K(HALF), t; \
	VFMADD213PS  t, x, u; \
	VFMADD213PS  u, x, p

// GRADSMALL: Y11 = GRADPOLY for x in Y8, and Y15 = the lanes it serves
// (SMALLLANES). Clobbers Y1, Y2, Y12.
#define GRADSMALL \
	GRADPOLY(Y1, Y2, Y8, Y12, Y11); \
	SMALLLANES

#define GAUSS \
	VBROADCASTSS K(SIGN_MASK), Y1; \
	VXORPS       Y1, Y12, Y0; \
	EXPF; \
	VFNMADD231PS Y13, Y0, Y0; \
	VBROADCASTSS K(PHI_HUGE), Y1; \
	VCMPPS       $0x1d, Y1, Y9, Y2; \
	VANDNPS      Y0, Y2, Y14

#define PHILARGE \
	PHIERFC(Y1); \
	VBLENDVPS    Y15, Y11, Y1, Y10

// GRADLARGE: Y0 = Φ(x) + x·φ(x) with Φ by the erfc form, for x in Y8:
// geluGrad32 outside the polynomial's interval. Clobbers Y1-Y5, Y9,
// Y10, Y12-Y14.
#define GRADLARGE \
	HALFSQUARE; \
	GAUSS; \
	PHIERFC(Y10); \
	VBROADCASTSS K(INV_SQRT2PI), Y1; \
	VMULPS       Y1, Y14, Y0; \
	VFMADD213PS  Y10, Y8, Y0

// The Z forms: the macros above on sixteen lanes, Zn for Yn, the same
// operations in the same order. The masks live in K registers (Y15 of
// PHISMALL is K1), the bitwise float operations are their AVX-512F
// integer forms (VPANDD for VANDPS, VPXORD for VXORPS: the same bits),
// and each blend is a masked move: VBLENDVPS m, a, b, d (d = m ? a : b)
// is d = b, then a moved into d under m; VANDNPS m, v (v where m is
// clear) is v moved with zeroing under the negated predicate (NGE_UQ,
// 0x19, for GE_OQ, 0x1d: true for NaN, which VANDNPS also kept).

// HALFSQUAREZ is HALFSQUARE: Z9 = |x|, Z12 + Z13 = x²/2. Clobbers Z1.
#define HALFSQUAREZ \
	VBROADCASTSS K(ABS_MASK), Z1; \
	VPANDD       Z1, Z8, Z9; \
	VMULPS       Z8, Z8, Z12; \
	VMOVAPS      Z12, Z13; \
	VFMSUB231PS  Z8, Z8, Z13; \
	VBROADCASTSS K(HALF), Z1; \
	VMULPS       Z1, Z12, Z12; \
	VMULPS       Z1, Z13, Z13

// SMALLLANESZ is SMALLLANES: K1 = the lanes of x in Z8 that Φ's
// polynomial serves. Clobbers Z2, K2.
#define SMALLLANESZ \
	VBROADCASTSS K(PHI_NEG), Z2; \
	VCMPPS       $0x1e, Z2, Z8, K1; \
	VBROADCASTSS K(PHI_POS), Z2; \
	VCMPPS       $0x11, Z2, Z8, K2; \
	KANDW        K2, K1, K1

// PHISMALLZ is PHISMALL, the small lanes in K1. Clobbers Z1, Z2, K2.
#define PHISMALLZ \
	HALFSQUAREZ; \
	VBROADCASTSS K(SQRT_HALF), Z1; \
	VMULPS       Z1, Z8, Z10; \
	ERFP(Z11, Z12, Z1); \
	VFMADD213PS  Z10, Z10, Z11; \
	VBROADCASTSS K(HALF), Z1; \
	VFMADD213PS  Z1, Z1, Z11; \
	SMALLLANESZ

// GAUSSZ is GAUSS: Z14 = e^(-x²/2). Clobbers Z0-Z5, K2, K3.
#define GAUSSZ \
	VBROADCASTSS K(SIGN_MASK), Z1; \
	VPXORD       Z1, Z12, Z0; \
	EXPFZ; \
	VFNMADD231PS Z13, Z0, Z0; \
	VBROADCASTSS K(PHI_HUGE), Z1; \
	VCMPPS       $0x19, Z1, Z9, K2; \
	VMOVAPS.Z    Z0, K2, Z14

// PHIERFCZ(d) is PHIERFC: d = Φ by the erfc form (needs Z8, Z9 and
// Z14). Clobbers Z1-Z4, K2.
#define PHIERFCZ(d) \
	ERFCXR(PHI_T, Z9, Z1, Z2, Z3, Z4); \
	VBROADCASTSS K(HALF), Z1; \
	VMULPS       Z1, Z14, Z1; \
	VMULPS       Z4, Z1, Z1; \
	VBROADCASTSS K(ONE), Z2; \
	VSUBPS       Z1, Z2, Z2; \
	VPXORD       Z3, Z3, Z3; \
	VCMPPS       $0x1e, Z3, Z8, K2; \
	VMOVAPS      Z2, K2, Z1; \
	VMOVAPS      Z1, d

// PHILARGEZ is PHILARGE: Z10 = Φ (needs Z14 and K1). Clobbers Z0-Z5, K2.
#define PHILARGEZ \
	PHIERFCZ(Z10); \
	VMOVAPS      Z11, K1, Z10

// GRADSMALLZ is GRADSMALL, the small lanes in K1. Clobbers Z1, Z2,
// Z12, K2.
#define GRADSMALLZ \
	GRADPOLY(Z1, Z2, Z8, Z12, Z11); \
	SMALLLANESZ

// GRADLARGEZ is GRADLARGE: Z0 = Φ(x) + x·φ(x), Φ by the erfc form.
// Clobbers Z1-Z5, Z9, Z10, Z12-Z14, K2, K3.
#define GRADLARGEZ \
	HALFSQUAREZ; \
	GAUSSZ; \
	PHIERFCZ(Z10); \
	VBROADCASTSS K(INV_SQRT2PI), Z1; \
	VMULPS       Z1, Z14, Z0; \
	VFMADD213PS  Z10, Z8, Z0

// func geluVec(dst, src *float32, n int)
TEXT ·geluVec(SB), NOSPLIT, $0-24
	ARGS
	ZPROLOGUEEXP(Z8)
	PHISMALLZ
	VMOVAPS   Z11, Z10
	ALLSETZ(K1)
	JCS       zsmall
	GAUSSZ
	PHILARGEZ
zsmall:
	VMULPS    Z10, Z8, Z0
	ZEPILOGUE
	LOOP8(Y8)
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
	ARGS
	ZPROLOGUEEXP(Z8)
	GRADSMALLZ
	VMOVAPS   Z11, Z0
	ALLSETZ(K1)
	JCS       zsmall
	GRADLARGEZ
	VMOVAPS   Z11, K1, Z0
zsmall:
	ZEPILOGUE
	LOOP8(Y8)
	GRADSMALL
	VMOVAPS   Y11, Y0
	ALLSET(Y15)
	JEQ       small // every lane small: no exponential needed
	GRADLARGE
	VBLENDVPS Y15, Y11, Y0, Y0
small:
	EPILOGUE

// geluLanes are the lane numbers 0 to 7, as int32.
DATA geluLanes<>+0(SB)/4, $0
DATA geluLanes<>+4(SB)/4, $1
DATA geluLanes<>+8(SB)/4, $2
DATA geluLanes<>+12(SB)/4, $3
DATA geluLanes<>+16(SB)/4, $4
DATA geluLanes<>+20(SB)/4, $5
DATA geluLanes<>+24(SB)/4, $6
DATA geluLanes<>+28(SB)/4, $7
GLOBL geluLanes<>(SB), RODATA|NOPTR, $32

// geluEights are eight int32 8s: the step of a vector of lane indices.
DATA geluEights<>+0(SB)/4, $8
DATA geluEights<>+4(SB)/4, $8
DATA geluEights<>+8(SB)/4, $8
DATA geluEights<>+12(SB)/4, $8
DATA geluEights<>+16(SB)/4, $8
DATA geluEights<>+20(SB)/4, $8
DATA geluEights<>+24(SB)/4, $8
DATA geluEights<>+28(SB)/4, $8
GLOBL geluEights<>(SB), RODATA|NOPTR, $32

// func geluSmallVec(dst, src *float32, n int, large *int32, xs *float32, pack *[256][8]int32) int
// func geluGradSmallVec(dst, src *float32, n int, large *int32, xs *float32, pack *[256][8]int32) int
//
// The first halves of geluVec and geluGradVec, for geluSplit and
// geluGradSplit (vmath_amd64.go): dst[i] = x·Φ(x) with Φ by PHISMALL's
// polynomial, or ½ + x·G by GRADSMALL's, which is gelu32(x) or
// geluGrad32(x) for the lanes the polynomials serve (-1.2374 < x <
// 2.1213); each other lane's index i goes to large and its x to xs, in
// order, and their count is the result. No branch but the loop's: the
// other lanes' mask m selects the row pack[m] (the numbers of m's set
// bits, lowest first), which VPERMPS and VPERMD use to move those lanes'
// x and index to the front of a register; all eight are stored at the
// lists' ends, and the count grows by the number of bits of m
// (PACKLARGE).
//
// Sixteen lanes a step, two vectors of eight whose operations alternate
// (GELUSMALL2, GRADSMALL2): each lane's are PHISMALL's (GRADSMALL's), in
// its order, so the bits are the same, but the two chains of nine
// dependent multiply-adds overlap, where one vector a step left the core
// waiting on its chain (on one core here, 16 M normal values,
// BenchmarkMemBoundGelu -cpu 1: 19.4 to 21.0 ms a call with one vector a
// step, 15.8 to 16.0 with two). A last vector of eight takes the loop of
// one (GELUSMALL1, GRADSMALL).

// SMALLLANES2: SMALLLANES for x in Y8 and in Y9, into Y15 and Y3.
// Clobbers Y1, Y2.
#define SMALLLANES2 \
	VBROADCASTSS K(PHI_NEG), Y2; \
	VCMPPS       $0x1e, Y2, Y8, Y15; \
	VCMPPS       $0x1e, Y2, Y9, Y3; \
	VBROADCASTSS K(PHI_POS), Y2; \
	VCMPPS       $0x11, Y2, Y8, Y1; \
	VANDPS       Y1, Y15, Y15; \
	VCMPPS       $0x11, Y2, Y9, Y1; \
	VANDPS       Y1, Y3, Y3

// SMALLLANES2Z: SMALLLANES2 on Z8 and Z9, into K1 and K3. Clobbers Z2,
// K2.
#define SMALLLANES2Z \
	VBROADCASTSS K(PHI_NEG), Z2; \
	VCMPPS       $0x1e, Z2, Z8, K1; \
	VCMPPS       $0x1e, Z2, Z9, K3; \
	VBROADCASTSS K(PHI_POS), Z2; \
	VCMPPS       $0x11, Z2, Z8, K2; \
	KANDW        K2, K1, K1; \
	VCMPPS       $0x11, Z2, Z9, K2; \
	KANDW        K2, K3, K3

// HALFSQUARE2(t, xa, xb, ha, hb): ha = xa²/2 and hb = xb²/2 (rounded).
// Clobbers t. This and the two below take Y or Z registers alike.
#define HALFSQUARE2(t, xa, xb, ha, hb) \
	VMULPS       xa, xa, ha; \
	VMULPS       xb, xb, hb; \
	VBROADCASTSS K(HALF), t; \
	VMULPS       t, ha, ha; \
	VMULPS       t, hb, hb

// GELUPOLY2(t, xa, xb, ha, hb, sa, sb, pa, pb): pa = xa·Φ(xa) and pb =
// xb·Φ(xb), Φ by PHISMALL's polynomial, leaving x²/2 in ha and hb and
// x·√½ in sa and sb (PHISMALL's low part of x², which only GAUSS reads,
// is left out). Clobbers t.
#define GELUPOLY2(t, xa, xb, ha, hb, sa, sb, pa, pb) \
	HALFSQUARE2(t, xa, xb, ha, hb); \
	VBROADCASTSS K(SQRT_HALF), t; \
	VMULPS       t, xa, sa; \
	VMULPS       t, xb, sb; \
	VBROADCASTSS K(ERF_P8), pa; \
	VMOVAPS      pa, pb; \
	HORNER2V4(t, ha, pa, hb, pb, K(ERF_P7), K(ERF_P6), K(ERF_P5), K(ERF_P4)); \
	HORNER2V4(t, ha, pa, hb, pb, K(ERF_P3), K(ERF_P2), K(ERF_P1), K(ERF_P0)); \
	VFMADD213PS  sa, sa, pa; \
	VFMADD213PS  sb, sb, pb; \
	VBROADCASTSS K(HALF), t; \
	VFMADD213PS  t, t, pa; \
	VFMADD213PS  t, t, pb; \
	VMULPS       pa, xa, pa; \
	VMULPS       pb, xb, pb

// GRADPOLY2(t, u, v, xa, xb, ha, hb, pa, pb): GRADPOLY for xa into pa
// and for xb into pb, their steps alternating. Clobbers t, u, v.
#define GRADPOLY2(t, u, v, xa, xb, ha, hb, pa, pb) \
	HALFSQUARE2(t, xa, xb, ha, hb); \
	VBROADCASTSS K(GELU_GRAD_C), t; \
	VSUBPS       t, ha, ha; \
	VSUBPS       t, hb, hb; \
	VBROADCASTSS K(GELU_GRAD_G8), pa; \
	VMOVAPS      pa, pb; \
	HORNER2V4(t, ha, pa, hb, pb, K(GELU_GRAD_G7), K(GELU_GRAD_G6), K(GELU_GRAD_G5), K(GELU_GRAD_G4)); \
	HORNER2V(K(GELU_GRAD_G3), t, ha, pa, hb, pb); \
	HORNER2V(K(GELU_GRAD_G2), t, ha, pa, hb, pb); \
	HORNER2V(K(GELU_GRAD_G1), t, ha, pa, hb, pb); \
	VMULPS       ha, pa, pa; \
	VMULPS       hb, pb, pb; \
	VBROADCASTSS K(GELU_GRAD_G0), u; \
	VMOVAPS      u, v; \
	VBROADCASTSS K(HALF), t; \
	VFMADD213PS  t, xa, u; \
	VFMADD213PS  t, xb, v; \
	VFMADD213PS  u, xa, pa; \
	VFMADD213PS  v, xb, pb

// GELUSMALL2: x·Φ(x), Φ by PHISMALL's polynomial, for x in Y8 and in
// Y9, into Y11 and Y4, with their lanes' masks in Y15 and Y3 (x²/2 is
// left in Y12 and Y13, x·√½ in Y10 and Y14). Clobbers Y1, Y2.
// GELUSMALL2Z is the same on Z registers, the masks in K1 and K3.
#define GELUSMALL2 \
	GELUPOLY2(Y1, Y8, Y9, Y12, Y13, Y10, Y14, Y11, Y4); \
	SMALLLANES2

#define GELUSMALL2Z \
	GELUPOLY2(Z1, Z8, Z9, Z12, Z13, Z10, Z14, Z11, Z4); \
	SMALLLANES2Z

// GELUSMALL1: x·Φ(x), Φ by PHISMALL's polynomial, for x in Y8, into
// Y11, with the lanes' mask in Y15. Clobbers Y1, Y2, Y9, Y10, Y12, Y13.
#define GELUSMALL1 \
	PHISMALL; \
	VMULPS Y11, Y8, Y11

// GRADSMALL2: GRADSMALL for x in Y8 and in Y9, into Y11 and Y4, with
// their lanes' masks in Y15 and Y3. Clobbers Y1, Y2, Y10, Y12, Y13.
// GRADSMALL2Z is the same on Z registers, the masks in K1 and K3.
#define GRADSMALL2 \
	GRADPOLY2(Y1, Y2, Y10, Y8, Y9, Y12, Y13, Y11, Y4); \
	SMALLLANES2

#define GRADSMALL2Z \
	GRADPOLY2(Z1, Z2, Z10, Z8, Z9, Z12, Z13, Z11, Z4); \
	SMALLLANES2Z

// PACKLARGE(mask, x): the lanes of x not set in mask go to the lists: x
// to (R11)(R9*4), their indices (Y0's lanes: the step's first index plus
// the lane) to (R8)(R9*4); R9 += their number, and Y0 moves on by eight.
// R12 is pack. Clobbers AX, BX, Y5-Y7.
#define PACKLARGE(mask, x) \
	VMOVMSKPS    mask, AX; \
	XORL         $0xff, AX; \
	MOVL         AX, BX; \
	SHLL         $5, BX; \
	VMOVDQU      (R12)(BX*1), Y7; \
	VPERMPS      x, Y7, Y5; \
	VMOVUPS      Y5, (R11)(R9*4); \
	VPERMD       Y0, Y7, Y6; \
	VMOVDQU      Y6, (R8)(R9*4); \
	VPADDD       geluEights<>(SB), Y0, Y0; \
	POPCNTL      AX, AX; \
	ADDQ         AX, R9

// PACKLARGEZ(mask, x): PACKLARGE on sixteen lanes, the mask in a K
// register, the indices in Z0 moving on by the sixteens of Z16. AVX-512
// packs the lanes itself (VCOMPRESSPS, VPCOMPRESSD), so no table; into a
// register, then all sixteen stored at the lists' ends, as PACKLARGE
// stores its eight (the next step writes over what lies past the count).
// Clobbers AX, Z5, Z6, K2.
#define PACKLARGEZ(mask, x) \
	KNOTW        mask, K2; \
	VCOMPRESSPS  x, K2, Z5; \
	VMOVUPS      Z5, (R11)(R9*4); \
	VPCOMPRESSD  Z0, K2, Z6; \
	VMOVDQU32    Z6, (R8)(R9*4); \
	VPADDD       Z16, Z0, Z0; \
	KMOVW        K2, AX; \
	POPCNTL      AX, AX; \
	ADDQ         AX, R9

// SPLITSMALL(small2z, small2, small1) is the body of geluSmallVec or
// geluGradSmallVec: small2 computes two vectors (x in Y8 and Y9, the
// results in Y11 and Y4, the masks in Y15 and Y3), small1 one (x in Y8,
// into Y11, the mask in Y15), small2z two of sixteen (Z8 and Z9 into Z11
// and Z4, the masks in K1 and K3). With useAVX512Math, the AVX-512 loop
// takes 32 values a step, then the AVX2 loops the last n mod 32, their
// indices going on from the low half of Z0 (Y0).
#define SPLITSMALL(small2z, small2, small1) \
	ARGS; \
	MOVQ large+24(FP), R8; \
	MOVQ xs+32(FP), R11; \
	MOVQ pack+40(FP), R12; \
	XORQ R9, R9; \
	VMOVDQU geluLanes<>(SB), Y0; \
	CMPB ·useAVX512Math(SB), $0; \
	JEQ  ymm; \
	VPADDD       geluEights<>(SB), Y0, Y1; \
	VINSERTI64X4 $1, Y1, Z0, Z0; \
	MOVL         $16, AX; \
	VPBROADCASTD AX, Z16; \
	MOVQ CX, DX; \
	SHRQ $5, DX; \
	JZ   ztail; \
ztwo: \
	VMOVUPS (SI), Z8; \
	VMOVUPS 64(SI), Z9; \
	small2z; \
	VMOVUPS Z11, (DI); \
	VMOVUPS Z4, 64(DI); \
	PACKLARGEZ(K1, Z8); \
	PACKLARGEZ(K3, Z9); \
	ADDQ    $128, DI; \
	ADDQ    $128, SI; \
	DECQ    DX; \
	JNZ     ztwo; \
ztail: \
	ANDQ $31, CX; \
ymm: \
	MOVQ CX, DX; \
	SHRQ $4, DX; \
	JZ   one; \
two: \
	VMOVUPS (SI), Y8; \
	VMOVUPS 32(SI), Y9; \
	small2; \
	VMOVUPS Y11, (DI); \
	VMOVUPS Y4, 32(DI); \
	PACKLARGE(Y15, Y8); \
	PACKLARGE(Y3, Y9); \
	ADDQ    $64, DI; \
	ADDQ    $64, SI; \
	DECQ    DX; \
	JNZ     two; \
one: \
	ANDQ $15, CX; \
	LOOP8(Y8); \
	small1; \
	VMOVUPS Y11, (DI); \
	PACKLARGE(Y15, Y8); \
	ADDQ    $32, DI; \
	ADDQ    $32, SI; \
	DECQ    CX; \
	JNZ     loop; \
done: \
	MOVQ R9, ret+48(FP); \
	VZEROUPPER; \
	RET

TEXT ·geluSmallVec(SB), NOSPLIT, $0-56
	SPLITSMALL(GELUSMALL2Z, GELUSMALL2, GELUSMALL1)

TEXT ·geluGradSmallVec(SB), NOSPLIT, $0-56
	SPLITSMALL(GRADSMALL2Z, GRADSMALL2, GRADSMALL)

// func geluLargeVec(dst, src *float32, n int)
//
// geluSplit's last pass, for the listed lanes: dst[i] = x·Φ(x) with Φ by
// the erfc form (GAUSS, then PHILARGE's erfc lanes), which is gelu32(x)
// where PHISMALL's polynomial does not serve: the operations geluVec
// gives those lanes, in its order, without the polynomial they do not
// use.
TEXT ·geluLargeVec(SB), NOSPLIT, $0-24
	ARGS
	ZPROLOGUEEXP(Z8)
	HALFSQUAREZ
	GAUSSZ
	PHIERFCZ(Z10)
	VMULPS       Z10, Z8, Z0
	ZEPILOGUE
	LOOP8(Y8)
	HALFSQUARE
	GAUSS
	PHIERFC(Y10)
	VMULPS       Y10, Y8, Y0
	EPILOGUE

// func geluGradLargeVec(dst, src *float32, n int)
//
// geluGradSplit's last pass, for the listed lanes: GRADLARGE, which is
// geluGrad32(x) where GRADSMALL's polynomial does not serve.
TEXT ·geluGradLargeVec(SB), NOSPLIT, $0-24
	ARGS
	ZPROLOGUEEXP(Z8)
	GRADLARGEZ
	ZEPILOGUE
	LOOP8(Y8)
	GRADLARGE
	EPILOGUE
