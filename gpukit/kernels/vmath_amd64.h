// Shared by vmath_*_amd64.s and rows_amd64.s.

#include "vmath_consts.h"

// K(EXP_C7) is the constant of ·vk at EXP_C7's offset (vmath_consts.h,
// generated with the table).
#define K(off) ·vk+off(SB)

// PROLOGUE(y) loads DI = dst, SI = src and CX = n/8 blocks, jumps to
// done when there are none and, at loop, loads the next eight of src
// into y; EPILOGUE stores Y0 to dst, loops to loop and, at done,
// returns. Between them stands the body of the Go loop. PROLOGUE is
// ARGS (the three registers, CX = n) and LOOP8 (the rest).
#define ARGS \
	MOVQ dst+0(FP), DI; \
	MOVQ src+8(FP), SI; \
	MOVQ n+16(FP), CX

#define LOOP8(y) \
	SHRQ $3, CX; \
	JZ   done; \
loop: \
	VMOVUPS (SI), y

#define PROLOGUE(y) \
	ARGS; \
	LOOP8(y)

#define EPILOGUE \
	VMOVUPS Y0, (DI); \
	ADDQ    $32, DI; \
	ADDQ    $32, SI; \
	DECQ    CX; \
	JNZ     loop; \
done: \
	VZEROUPPER; \
	RET

// The AVX-512 forms, sixteen lanes at a time, where useAVX512Math is
// set (vmath_amd64.go). A function with both forms is
//
//	ARGS; ZPROLOGUE(z); <body on Z registers>; ZEPILOGUE
//	LOOP8(y); <body on Y registers>; EPILOGUE
//
// ZPROLOGUE jumps to ymm (the AVX2 loop, CX = n) when useAVX512Math is
// false; otherwise it runs CX = n/16 blocks, at zloop loading the next
// sixteen of src into z. ZEPILOGUE stores Z0 to dst, loops and, at ztail,
// leaves CX = n&8, so that the AVX2 loop does the last eight when n is
// not a multiple of 16 and nothing otherwise. The lanes are independent:
// a value gets the same operations whichever loop computes it.
#define ZPROLOGUE(z) \
	CMPB ·useAVX512Math(SB), $0; \
	JEQ  ymm; \
	ZLOOPHEAD(z)

// ZPROLOGUEEXP(z) is ZPROLOGUE for a body that computes exponentials
// (EXPFZ): it loads their constants (EXPZCONSTS) before the loop.
#define ZPROLOGUEEXP(z) \
	CMPB ·useAVX512Math(SB), $0; \
	JEQ  ymm; \
	EXPZCONSTS; \
	ZLOOPHEAD(z)

// ZLOOPHEAD(z) is the two prologues' start of the loop: CX = n/16 blocks
// (none: on to ztail), zloop loading the next sixteen of src into z.
#define ZLOOPHEAD(z) \
	SHRQ $4, CX; \
	JZ   ztail; \
zloop: \
	VMOVUPS (SI), z

#define ZEPILOGUE \
	VMOVUPS Z0, (DI); \
	ADDQ    $64, DI; \
	ADDQ    $64, SI; \
	DECQ    CX; \
	JNZ     zloop; \
ztail: \
	MOVQ n+16(FP), CX; \
	ANDQ $8, CX; \
ymm:

// ALLSET sets the Z flag when every lane of mask is set (AX scratch).
#define ALLSET(mask) \
	VMOVMSKPS mask, AX; \
	CMPL      AX, $0xff

// HORNER(p, z, t, c) is p = fma32(p, z, c), c a float32 in memory
// broadcast through t: one step of poly32's loop. HORNER2 and HORNER3
// take two and three coefficients, highest first.
#define HORNER(p, z, t, c) \
	VBROADCASTSS c, t; \
	VFMADD213PS  t, z, p

#define HORNER2(p, z, t, c1, c0) \
	HORNER(p, z, t, c1); \
	HORNER(p, z, t, c0)

#define HORNER3(p, z, t, c2, c1, c0) \
	HORNER(p, z, t, c2); \
	HORNER2(p, z, t, c1, c0)

// HORNER2V(c, t, za, pa, zb, pb) is HORNER on two vectors, the constant
// broadcast once: pa = fma32(pa, za, c), pb = fma32(pb, zb, c).
#define HORNER2V(c, t, za, pa, zb, pb) \
	VBROADCASTSS c, t; \
	VFMADD213PS  t, za, pa; \
	VFMADD213PS  t, zb, pb

// HORNER2V4(t, za, pa, zb, pb, c3, c2, c1, c0) is HORNER2V with c3, c2,
// c1 and c0 in turn.
#define HORNER2V4(t, za, pa, zb, pb, c3, c2, c1, c0) \
	HORNER2V(c3, t, za, pa, zb, pb); \
	HORNER2V(c2, t, za, pa, zb, pb); \
	HORNER2V(c1, t, za, pa, zb, pb); \
	HORNER2V(c0, t, za, pa, zb, pb)

// exp32's steps, EXPF's (eight lanes, Y registers; EXPFZ, on sixteen,
// writes them out with its constants in registers).
// EXPSCALE(x, n): n = x·log₂e, which the caller rounds to an integer
// (its instruction differs by width). EXPREDUCE(x, n, r, t): r = x − n·ln2,
// ln2 in two parts. EXPPOLY(n, r, t, r2, p): p = eʳ's polynomial times 2ⁿ,
// applied in two halves so that |n| up to 255 stays in the exponent's
// range; clobbers n, t and r2.
#define EXPSCALE(x, n) \
	VBROADCASTSS K(LOG2E), n; \
	VMULPS       n, x, n

#define EXPREDUCE(x, n, r, t) \
	VMOVAPS      x, r; \
	VBROADCASTSS K(LN2_HI), t; \
	VFNMADD231PS t, n, r; \
	VBROADCASTSS K(LN2_LO), t; \
	VFNMADD231PS t, n, r

#define EXPPOLY(n, r, t, r2, p) \
	VBROADCASTSS K(EXP_C7), p; \
	HORNER3(p, r, t, K(EXP_C6), K(EXP_C5), K(EXP_C4)); \
	HORNER2(p, r, t, K(EXP_C3), K(EXP_C2)); \
	VMULPS       r, r, r2; \
	VFMADD213PS  r, r2, p; \
	VBROADCASTSS K(ONE), t; \
	VADDPS       t, p, p; \
	VCVTPS2DQ    n, n; \
	VPSRAD       $1, n, t; \
	VPSUBD       t, n, n; \
	VPBROADCASTD K(BIAS), r2; \
	VPADDD       r2, t, t; \
	VPSLLD       $23, t, t; \
	VPADDD       r2, n, n; \
	VPSLLD       $23, n, n; \
	VMULPS       t, p, p; \
	VMULPS       n, p, p

// EXPF: Y0 = exp32(Y0). Clobbers Y1-Y5.
#define EXPF \
	EXPSCALE(Y0, Y1); \
	VROUNDPS     $0, Y1, Y1; \
	EXPREDUCE(Y0, Y1, Y3, Y2); \
	EXPPOLY(Y1, Y3, Y2, Y4, Y5); \
	VBROADCASTSS K(EXP_MAX), Y2; \
	VCMPPS       $0x1e, Y2, Y0, Y3; \
	VBROADCASTSS K(INF), Y2; \
	VBLENDVPS    Y3, Y2, Y5, Y5; \
	VBROADCASTSS K(EXP_MIN), Y2; \
	VCMPPS       $0x11, Y2, Y0, Y3; \
	VANDNPS      Y5, Y3, Y0

// EXPF2(xa, na, ra, sa, pa, xb, nb, rb, sb, pb, t): xa = exp32(xa) and
// xb = exp32(xb), EXPF's instructions each written twice, once per
// vector, in EXPF's order (the integer temporary of 2ⁿ is r, BIAS and
// the constants are broadcast once into t for both): the same bits as
// two EXPFs, with two independent chains for the core to overlap where
// one vector a step left it waiting on one. Clobbers n, r, s, p and t
// of both.
#define EXPF2(xa, na, ra, sa, pa, xb, nb, rb, sb, pb, t) \
	VBROADCASTSS K(LOG2E), t; \
	VMULPS       t, xa, na; \
	VMULPS       t, xb, nb; \
	VROUNDPS     $0, na, na; \
	VROUNDPS     $0, nb, nb; \
	VMOVAPS      xa, ra; \
	VMOVAPS      xb, rb; \
	VBROADCASTSS K(LN2_HI), t; \
	VFNMADD231PS t, na, ra; \
	VFNMADD231PS t, nb, rb; \
	VBROADCASTSS K(LN2_LO), t; \
	VFNMADD231PS t, na, ra; \
	VFNMADD231PS t, nb, rb; \
	VBROADCASTSS K(EXP_C7), pa; \
	VMOVAPS      pa, pb; \
	HORNER2V(K(EXP_C6), t, ra, pa, rb, pb); \
	HORNER2V(K(EXP_C5), t, ra, pa, rb, pb); \
	HORNER2V(K(EXP_C4), t, ra, pa, rb, pb); \
	HORNER2V(K(EXP_C3), t, ra, pa, rb, pb); \
	HORNER2V(K(EXP_C2), t, ra, pa, rb, pb); \
	VMULPS       ra, ra, sa; \
	VMULPS       rb, rb, sb; \
	VFMADD213PS  ra, sa, pa; \
	VFMADD213PS  rb, sb, pb; \
	VBROADCASTSS K(ONE), t; \
	VADDPS       t, pa, pa; \
	VADDPS       t, pb, pb; \
	VCVTPS2DQ    na, na; \
	VCVTPS2DQ    nb, nb; \
	VPSRAD       $1, na, ra; \
	VPSRAD       $1, nb, rb; \
	VPSUBD       ra, na, na; \
	VPSUBD       rb, nb, nb; \
	VPBROADCASTD K(BIAS), t; \
	VPADDD       t, ra, ra; \
	VPADDD       t, rb, rb; \
	VPSLLD       $23, ra, ra; \
	VPSLLD       $23, rb, rb; \
	VPADDD       t, na, na; \
	VPADDD       t, nb, nb; \
	VPSLLD       $23, na, na; \
	VPSLLD       $23, nb, nb; \
	VMULPS       ra, pa, pa; \
	VMULPS       rb, pb, pb; \
	VMULPS       na, pa, pa; \
	VMULPS       nb, pb, pb; \
	VBROADCASTSS K(EXP_MAX), t; \
	VCMPPS       $0x1e, t, xa, sa; \
	VCMPPS       $0x1e, t, xb, sb; \
	VBROADCASTSS K(INF), t; \
	VBLENDVPS    sa, t, pa, pa; \
	VBLENDVPS    sb, t, pb, pb; \
	VBROADCASTSS K(EXP_MIN), t; \
	VCMPPS       $0x11, t, xa, sa; \
	VCMPPS       $0x11, t, xb, sb; \
	VANDNPS      pa, sa, xa; \
	VANDNPS      pb, sb, xb

// ALLSETZ(k) sets the carry flag when every lane of the mask k is set
// (JCS jumps then): ALLSET's test on sixteen lanes.
#define ALLSETZ(k) \
	KORTESTW k, k

// EXPFZ: Z0 = exp32(Z0), EXPF on sixteen lanes, with its constants in
// Z19-Z31 (EXPZCONSTS loads them, once, before the loop; ZPROLOGUEEXP
// does it for a ZPROLOGUE function) rather than broadcast from memory at
// each use, and three AVX-512 substitutions that give the same bits:
//
//   - VRNDSCALEPS $0 for VROUNDPS $0 (both round to nearest even);
//   - VSCALEFPS n, p for EXPPOLY's last ten instructions (n to an
//     integer, split in two halves, each made a power of two and
//     multiplied in): VSCALEFPS is p·2^floor(n) rounded once, and so is
//     p·2^(n>>1)·2^(n-(n>>1)), since the first product is exact (p in
//     [0.7, 1.5), |n>>1| ≤ 75 keeps it normal) and only the second can
//     round, where the result is subnormal or overflows. A NaN lane
//     gives p's NaN either way;
//   - the blends as masked moves on K3 (x > EXP_MAX takes +Inf; x <
//     EXP_MIN gives 0, as VANDNPS did: the move keeps the lanes where
//     !(x < EXP_MIN), predicate NLT_UQ, NaN included).
//
// Forty instructions, fourteen of them loads of a constant, became
// nineteen, none a load: exp's in-cache time (BenchmarkInCache/exp) went
// from 0.21 to 0.15 ns an element on one Zen 5 core. Clobbers Z1-Z5, K3.
#define EXPFZ \
	EXPFZPOLY; \
	VCMPPS       $0x1e, Z29, Z0, K3; \
	VMOVAPS      Z30, K3, Z5; \
	VCMPPS       $0x15, Z31, Z0, K3; \
	VMOVAPS.Z    Z5, K3, Z0

// EXPFZPOLY is EXPFZ up to the range tests: Z5 = exp32's e^r·2ⁿ of Z0.
#define EXPFZPOLY \
	VMULPS       Z19, Z0, Z1; \
	VRNDSCALEPS  $0, Z1, Z1; \
	VMOVAPS      Z0, Z3; \
	VFNMADD231PS Z20, Z1, Z3; \
	VFNMADD231PS Z21, Z1, Z3; \
	VMOVAPS      Z22, Z5; \
	VFMADD213PS  Z23, Z3, Z5; \
	VFMADD213PS  Z24, Z3, Z5; \
	VFMADD213PS  Z25, Z3, Z5; \
	VFMADD213PS  Z26, Z3, Z5; \
	VFMADD213PS  Z27, Z3, Z5; \
	VMULPS       Z3, Z3, Z4; \
	VFMADD213PS  Z3, Z4, Z5; \
	VADDPS       Z28, Z5, Z5; \
	VSCALEFPS    Z1, Z5, Z5

// EXPFZNP is EXPFZ for x ≤ 0 or NaN (softmax's x − max): it leaves out
// the x > EXP_MAX test, which no such x passes, and so gives EXPFZ's bits
// for them. Clobbers Z1-Z5, K3.
#define EXPFZNP \
	EXPFZPOLY; \
	VCMPPS       $0x15, Z31, Z0, K3; \
	VMOVAPS.Z    Z5, K3, Z0

// EXPZCONSTS loads EXPFZ's constants: log₂e, ln2 in two parts, the
// polynomial's coefficients C7 to C2, 1, EXP_MAX, +Inf and EXP_MIN into
// Z19-Z31, which no other code of this package's exp functions uses.
#define EXPZCONSTS \
	VBROADCASTSS K(LOG2E), Z19; \
	VBROADCASTSS K(LN2_HI), Z20; \
	VBROADCASTSS K(LN2_LO), Z21; \
	VBROADCASTSS K(EXP_C7), Z22; \
	VBROADCASTSS K(EXP_C6), Z23; \
	VBROADCASTSS K(EXP_C5), Z24; \
	VBROADCASTSS K(EXP_C4), Z25; \
	VBROADCASTSS K(EXP_C3), Z26; \
	VBROADCASTSS K(EXP_C2), Z27; \
	VBROADCASTSS K(ONE), Z28; \
	VBROADCASTSS K(EXP_MAX), Z29; \
	VBROADCASTSS K(INF), Z30; \
	VBROADCASTSS K(EXP_MIN), Z31

