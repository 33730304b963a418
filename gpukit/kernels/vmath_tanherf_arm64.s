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

// TABLES(tab, c, c0, q, split, max, base) loads what tanh's and erf's
// loops keep in registers: the seven float32 of tab (tanhT or erfT,
// T0..T6) in V16-V22; from ·vk (R4), split, max and base in V23-V25 and
// BYTE_SPREAD, BYTE_OFFSETS and SIGN_MASK in V26-V28; and the tables'
// addresses, R8 = c, R9 = c0, R10 = q.
#define TABLES(tab, c, c0, q, split, max, base) \
	MOVD    $·vk(SB), R4; \
	MOVD    $tab(SB), R6; \
	VLD4R.P 16(R6), [V16.S4, V17.S4, V18.S4, V19.S4]; \
	VLD3R   (R6), [V20.S4, V21.S4, V22.S4]; \
	K(split, V23); \
	K(max, V24); \
	K(base, V25); \
	K(BYTE_SPREAD, V26); \
	K(BYTE_OFFSETS, V27); \
	K(SIGN_MASK, V28); \
	MOVD    $c(SB), R8; \
	MOVD    $c0(SB), R9; \
	MOVD    $q(SB), R10

// ODDPOLY: from x in V8, V9 = a = |x|, V10 = z = x² and V1 = T(z) =
// poly32(T[:], z), T in V16-V22 (TABLES). Clobbers V11.
#define ODDPOLY \
	FABS4S(9, 8); \
	FMUL4S(10, 8, 8); \
	FMA(V11, V22, V10, V21); \
	HORNER2(V11, V1, V10, V20, V19); \
	HORNER2(V11, V1, V10, V18, V17); \
	FMA(V1, V11, V10, V16)

// QROW(base, off, p, d) is d = fma32(p, t, row[i]), t in V12, row the
// eight float32 at off(base): one step of piece32's loop. PIECE(p, d)
// ends it: rows 6 to 0 of q (R10), alternating between p and d, then p =
// fma32(t, d, c0[i]) (R9).
#define QROW(base, off, p, d) \
	TBL8(base, off, d); \
	VFMLA p.S4, V12.S4, d.S4

#define PIECE(p, d) \
	QROW(R10, 192, p, d); \
	QROW(R10, 160, d, p); \
	QROW(R10, 128, p, d); \
	QROW(R10, 96, d, p); \
	QROW(R10, 64, p, d); \
	QROW(R10, 32, d, p); \
	QROW(R10, 0, p, d); \
	QROW(R9, 0, d, p)

// func tanhVec(dst, src *float32, n int)
TEXT ·tanhVec(SB), NOSPLIT, $0-24
	TABLES(·tanhT, ·tanhC, ·tanhC0, ·tanhQ, TANH_SPLIT, TANH_MAX, TANH_BASE)
	PROLOGUE(V8)
	ODDPOLY                       // a, z, T(z)
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
	PIECE(V0, V1)                 // c0 + t·q(t)
	FCMGT4S(3, 23, 9)             // a < 0.75
	VBIT  V3.B16, V2.B16, V0.B16
	VAND  V28.B16, V8.B16, V1.B16
	VORR  V1.B16, V0.B16, V0.B16  // the sign of x (also on -0)
	EPILOGUE(V0)

// func erfVec(dst, src *float32, n int)
TEXT ·erfVec(SB), NOSPLIT, $0-24
	TABLES(·erfT, ·erfC, ·erfC0, ·erfQ, ERF_SPLIT, ERF_MAX, ERF_BASE)
	K(MAX_INDEX, V29)
	PROLOGUE(V8)
	ODDPOLY                       // a, x², T(x²)
	VMOV  V8.B16, V0.B16
	VFMLA V1.S4, V8.S4, V0.S4     // small: x + x·T(x²)
	FCMGT4S(15, 23, 9)            // a < 0.75
	ALLSET(V15)
	BEQ   store                   // every lane small
	FMIN4S(12, 24, 9)             // min(a, erfMax); NaN stays
	VUSHR $21, V12.S4, V13.S4
	VSUB  V25.S4, V13.S4, V13.S4
	VUMIN V29.S4, V13.S4, V13.S4  // interval, at most 7
	INDEX(26, V27)
	TBL8(R8, 0, V1)
	FSUB4S(12, 12, 1)             // t = a - c
	TBL8(R10, 256, V2)
	QROW(R10, 224, V2, V3)
	PIECE(V3, V2)                 // c0 + t·q(t)
	VAND  V28.B16, V8.B16, V1.B16
	VORR  V1.B16, V3.B16, V3.B16  // the sign of x
	VBIF  V15.B16, V3.B16, V0.B16 // the large lanes

store:
	EPILOGUE(V0)
