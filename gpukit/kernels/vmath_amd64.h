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

// EXPF: Y0 = exp32(Y0). Clobbers Y1-Y5.
#define EXPF \
	VBROADCASTSS K(LOG2E), Y1; \
	VMULPS       Y1, Y0, Y1; \
	VROUNDPS     $0, Y1, Y1; \
	VMOVAPS      Y0, Y3; \
	VBROADCASTSS K(LN2_HI), Y2; \
	VFNMADD231PS Y2, Y1, Y3; \
	VBROADCASTSS K(LN2_LO), Y2; \
	VFNMADD231PS Y2, Y1, Y3; \
	VBROADCASTSS K(EXP_C7), Y5; \
	HORNER3(Y5, Y3, Y2, K(EXP_C6), K(EXP_C5), K(EXP_C4)); \
	HORNER2(Y5, Y3, Y2, K(EXP_C3), K(EXP_C2)); \
	VMULPS       Y3, Y3, Y4; \
	VFMADD213PS  Y3, Y4, Y5; \
	VBROADCASTSS K(ONE), Y2; \
	VADDPS       Y2, Y5, Y5; \
	VCVTPS2DQ    Y1, Y1; \
	VPSRAD       $1, Y1, Y2; \
	VPSUBD       Y2, Y1, Y1; \
	VPBROADCASTD K(BIAS), Y4; \
	VPADDD       Y4, Y2, Y2; \
	VPSLLD       $23, Y2, Y2; \
	VPADDD       Y4, Y1, Y1; \
	VPSLLD       $23, Y1, Y1; \
	VMULPS       Y2, Y5, Y5; \
	VMULPS       Y1, Y5, Y5; \
	VBROADCASTSS K(EXP_MAX), Y2; \
	VCMPPS       $0x1e, Y2, Y0, Y3; \
	VBROADCASTSS K(INF), Y2; \
	VBLENDVPS    Y3, Y2, Y5, Y5; \
	VBROADCASTSS K(EXP_MIN), Y2; \
	VCMPPS       $0x11, Y2, Y0, Y3; \
	VANDNPS      Y5, Y3, Y0

// ALLSETZ(k) sets the carry flag when every lane of the mask k is set
// (JCS jumps then): ALLSET's test on sixteen lanes.
#define ALLSETZ(k) \
	KORTESTW k, k

// EXPFZ: Z0 = exp32(Z0), EXPF on sixteen lanes, instruction for
// instruction, with two AVX-512 substitutions that give the same bits:
// VRNDSCALEPS $0 for VROUNDPS $0 (both round to nearest even), and the
// blends as masked moves on K3 (x > EXP_MAX takes +Inf; x < EXP_MIN
// gives 0, as VANDNPS did: the move keeps the lanes where
// !(x < EXP_MIN), predicate NLT_UQ, NaN included). Clobbers Z1-Z5, K3.
#define EXPFZ \
	VBROADCASTSS K(LOG2E), Z1; \
	VMULPS       Z1, Z0, Z1; \
	VRNDSCALEPS  $0, Z1, Z1; \
	VMOVAPS      Z0, Z3; \
	VBROADCASTSS K(LN2_HI), Z2; \
	VFNMADD231PS Z2, Z1, Z3; \
	VBROADCASTSS K(LN2_LO), Z2; \
	VFNMADD231PS Z2, Z1, Z3; \
	VBROADCASTSS K(EXP_C7), Z5; \
	HORNER3(Z5, Z3, Z2, K(EXP_C6), K(EXP_C5), K(EXP_C4)); \
	HORNER2(Z5, Z3, Z2, K(EXP_C3), K(EXP_C2)); \
	VMULPS       Z3, Z3, Z4; \
	VFMADD213PS  Z3, Z4, Z5; \
	VBROADCASTSS K(ONE), Z2; \
	VADDPS       Z2, Z5, Z5; \
	VCVTPS2DQ    Z1, Z1; \
	VPSRAD       $1, Z1, Z2; \
	VPSUBD       Z2, Z1, Z1; \
	VPBROADCASTD K(BIAS), Z4; \
	VPADDD       Z4, Z2, Z2; \
	VPSLLD       $23, Z2, Z2; \
	VPADDD       Z4, Z1, Z1; \
	VPSLLD       $23, Z1, Z1; \
	VMULPS       Z2, Z5, Z5; \
	VMULPS       Z1, Z5, Z5; \
	VBROADCASTSS K(EXP_MAX), Z2; \
	VCMPPS       $0x1e, Z2, Z0, K3; \
	VBROADCASTSS K(INF), Z2; \
	VMOVAPS      Z2, K3, Z5; \
	VBROADCASTSS K(EXP_MIN), Z2; \
	VCMPPS       $0x15, Z2, Z0, K3; \
	VMOVAPS.Z    Z5, K3, Z0

