// Shared by vmath_*_amd64.s and rows_amd64.s.

#include "vmath_consts.h"

// K(EXP_C7) is the constant of ·vk at EXP_C7's offset (vmath_consts.h,
// generated with the table).
#define K(off) ·vk+off(SB)

// PROLOGUE loads DI = dst, SI = src and CX = n/8 blocks, and jumps to
// done when there are none; NEXT stores Y0 and loops to loop.
#define PROLOGUE \
	MOVQ dst+0(FP), DI; \
	MOVQ src+8(FP), SI; \
	MOVQ n+16(FP), CX; \
	SHRQ $3, CX; \
	JZ   done

#define NEXT \
	VMOVUPS Y0, (DI); \
	ADDQ    $32, DI; \
	ADDQ    $32, SI; \
	DECQ    CX; \
	JNZ     loop

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
	VBROADCASTSS K(EXP_C6), Y2; \
	VFMADD213PS  Y2, Y3, Y5; \
	VBROADCASTSS K(EXP_C5), Y2; \
	VFMADD213PS  Y2, Y3, Y5; \
	VBROADCASTSS K(EXP_C4), Y2; \
	VFMADD213PS  Y2, Y3, Y5; \
	VBROADCASTSS K(EXP_C3), Y2; \
	VFMADD213PS  Y2, Y3, Y5; \
	VBROADCASTSS K(EXP_C2), Y2; \
	VFMADD213PS  Y2, Y3, Y5; \
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

