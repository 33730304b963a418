// Shared by vmath_*_amd64.s and rows_amd64.s.

#include "vmath_consts.h"

// K(EXP_C7) is the constant of ·vk at EXP_C7's offset (vmath_consts.h,
// generated with the table).
#define K(off) ·vk+off(SB)

// PROLOGUE(y) loads DI = dst, SI = src and CX = n/8 blocks, jumps to
// done when there are none and, at loop, loads the next eight of src
// into y; EPILOGUE stores Y0 to dst, loops to loop and, at done,
// returns. Between them stands the body of the Go loop.
#define PROLOGUE(y) \
	MOVQ dst+0(FP), DI; \
	MOVQ src+8(FP), SI; \
	MOVQ n+16(FP), CX; \
	SHRQ $3, CX; \
	JZ   done; \
loop: \
	VMOVUPS (SI), y

#define EPILOGUE \
	VMOVUPS Y0, (DI); \
	ADDQ    $32, DI; \
	ADDQ    $32, SI; \
	DECQ    CX; \
	JNZ     loop; \
done: \
	VZEROUPPER; \
	RET

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

