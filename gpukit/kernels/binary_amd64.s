//go:build !purego

#include "textflag.h"

// func arithVVAVX(op int, d, a, b *float32, n int, stream int)
//
// d[i] = a[i] op b[i] for i < n (a multiple of 32), op Add, Sub, Mul or
// Div (BinaryOp's values 0 to 3), 32 lanes a step in four YMM registers:
// binaryVV's loop, each lane rounded as the scalar operation is. With
// stream ≠ 0 the results go to memory with non-temporal stores (d must be
// 32-byte aligned), which do not read d's lines into the cache first: a
// quarter less traffic for an operation too large for the cache.
TEXT ·arithVVAVX(SB), NOSPLIT, $0-48
	MOVQ op+0(FP), AX
	MOVQ d+8(FP), DI
	MOVQ a+16(FP), SI
	MOVQ b+24(FP), DX
	MOVQ n+32(FP), CX
	MOVQ stream+40(FP), R8
	SHRQ $5, CX
	JZ   vvdone
	SHLQ $1, AX
	ORQ  R8, AX // 2·op + stream picks the loop
	CMPQ AX, $0
	JEQ  vvadd
	CMPQ AX, $1
	JEQ  vvaddnt
	CMPQ AX, $2
	JEQ  vvsub
	CMPQ AX, $3
	JEQ  vvsubnt
	CMPQ AX, $4
	JEQ  vvmul
	CMPQ AX, $5
	JEQ  vvmulnt
	CMPQ AX, $6
	JEQ  vvdiv
	CMPQ AX, $7
	JEQ  vvdivnt
	JMP  vvdone

vvadd:
	VMOVUPS 0(SI), Y0
	VMOVUPS 32(SI), Y1
	VMOVUPS 64(SI), Y2
	VMOVUPS 96(SI), Y3
	VADDPS  0(DX), Y0, Y0
	VADDPS  32(DX), Y1, Y1
	VADDPS  64(DX), Y2, Y2
	VADDPS  96(DX), Y3, Y3
	VMOVUPS  Y0, 0(DI)
	VMOVUPS  Y1, 32(DI)
	VMOVUPS  Y2, 64(DI)
	VMOVUPS  Y3, 96(DI)
	ADDQ    $128, SI
	ADDQ    $128, DX
	ADDQ    $128, DI
	DECQ    CX
	JNZ     vvadd
	JMP     vvfence

vvaddnt:
	VMOVUPS 0(SI), Y0
	VMOVUPS 32(SI), Y1
	VMOVUPS 64(SI), Y2
	VMOVUPS 96(SI), Y3
	VADDPS  0(DX), Y0, Y0
	VADDPS  32(DX), Y1, Y1
	VADDPS  64(DX), Y2, Y2
	VADDPS  96(DX), Y3, Y3
	VMOVNTPS Y0, 0(DI)
	VMOVNTPS Y1, 32(DI)
	VMOVNTPS Y2, 64(DI)
	VMOVNTPS Y3, 96(DI)
	ADDQ    $128, SI
	ADDQ    $128, DX
	ADDQ    $128, DI
	DECQ    CX
	JNZ     vvaddnt
	JMP     vvfence

vvsub:
	VMOVUPS 0(SI), Y0
	VMOVUPS 32(SI), Y1
	VMOVUPS 64(SI), Y2
	VMOVUPS 96(SI), Y3
	VSUBPS  0(DX), Y0, Y0
	VSUBPS  32(DX), Y1, Y1
	VSUBPS  64(DX), Y2, Y2
	VSUBPS  96(DX), Y3, Y3
	VMOVUPS  Y0, 0(DI)
	VMOVUPS  Y1, 32(DI)
	VMOVUPS  Y2, 64(DI)
	VMOVUPS  Y3, 96(DI)
	ADDQ    $128, SI
	ADDQ    $128, DX
	ADDQ    $128, DI
	DECQ    CX
	JNZ     vvsub
	JMP     vvfence

vvsubnt:
	VMOVUPS 0(SI), Y0
	VMOVUPS 32(SI), Y1
	VMOVUPS 64(SI), Y2
	VMOVUPS 96(SI), Y3
	VSUBPS  0(DX), Y0, Y0
	VSUBPS  32(DX), Y1, Y1
	VSUBPS  64(DX), Y2, Y2
	VSUBPS  96(DX), Y3, Y3
	VMOVNTPS Y0, 0(DI)
	VMOVNTPS Y1, 32(DI)
	VMOVNTPS Y2, 64(DI)
	VMOVNTPS Y3, 96(DI)
	ADDQ    $128, SI
	ADDQ    $128, DX
	ADDQ    $128, DI
	DECQ    CX
	JNZ     vvsubnt
	JMP     vvfence

vvmul:
	VMOVUPS 0(SI), Y0
	VMOVUPS 32(SI), Y1
	VMOVUPS 64(SI), Y2
	VMOVUPS 96(SI), Y3
	VMULPS  0(DX), Y0, Y0
	VMULPS  32(DX), Y1, Y1
	VMULPS  64(DX), Y2, Y2
	VMULPS  96(DX), Y3, Y3
	VMOVUPS  Y0, 0(DI)
	VMOVUPS  Y1, 32(DI)
	VMOVUPS  Y2, 64(DI)
	VMOVUPS  Y3, 96(DI)
	ADDQ    $128, SI
	ADDQ    $128, DX
	ADDQ    $128, DI
	DECQ    CX
	JNZ     vvmul
	JMP     vvfence

vvmulnt:
	VMOVUPS 0(SI), Y0
	VMOVUPS 32(SI), Y1
	VMOVUPS 64(SI), Y2
	VMOVUPS 96(SI), Y3
	VMULPS  0(DX), Y0, Y0
	VMULPS  32(DX), Y1, Y1
	VMULPS  64(DX), Y2, Y2
	VMULPS  96(DX), Y3, Y3
	VMOVNTPS Y0, 0(DI)
	VMOVNTPS Y1, 32(DI)
	VMOVNTPS Y2, 64(DI)
	VMOVNTPS Y3, 96(DI)
	ADDQ    $128, SI
	ADDQ    $128, DX
	ADDQ    $128, DI
	DECQ    CX
	JNZ     vvmulnt
	JMP     vvfence

vvdiv:
	VMOVUPS 0(SI), Y0
	VMOVUPS 32(SI), Y1
	VMOVUPS 64(SI), Y2
	VMOVUPS 96(SI), Y3
	VDIVPS  0(DX), Y0, Y0
	VDIVPS  32(DX), Y1, Y1
	VDIVPS  64(DX), Y2, Y2
	VDIVPS  96(DX), Y3, Y3
	VMOVUPS  Y0, 0(DI)
	VMOVUPS  Y1, 32(DI)
	VMOVUPS  Y2, 64(DI)
	VMOVUPS  Y3, 96(DI)
	ADDQ    $128, SI
	ADDQ    $128, DX
	ADDQ    $128, DI
	DECQ    CX
	JNZ     vvdiv
	JMP     vvfence

vvdivnt:
	VMOVUPS 0(SI), Y0
	VMOVUPS 32(SI), Y1
	VMOVUPS 64(SI), Y2
	VMOVUPS 96(SI), Y3
	VDIVPS  0(DX), Y0, Y0
	VDIVPS  32(DX), Y1, Y1
	VDIVPS  64(DX), Y2, Y2
	VDIVPS  96(DX), Y3, Y3
	VMOVNTPS Y0, 0(DI)
	VMOVNTPS Y1, 32(DI)
	VMOVNTPS Y2, 64(DI)
	VMOVNTPS Y3, 96(DI)
	ADDQ    $128, SI
	ADDQ    $128, DX
	ADDQ    $128, DI
	DECQ    CX
	JNZ     vvdivnt
	JMP     vvfence

vvfence:
	TESTQ R8, R8
	JZ    vvdone
	SFENCE // the streamed stores are seen before what follows

vvdone:
	VZEROUPPER
	RET

// func arithVSAVX(op int, d, a *float32, s float32, n int, stream int)
//
// d[i] = a[i] op s for i < n (a multiple of 32): binaryVS's loop, as
// arithVVAVX is binaryVV's.
TEXT ·arithVSAVX(SB), NOSPLIT, $0-48
	MOVQ op+0(FP), AX
	MOVQ d+8(FP), DI
	MOVQ a+16(FP), SI
	VBROADCASTSS s+24(FP), Y4
	MOVQ n+32(FP), CX
	MOVQ stream+40(FP), R8
	SHRQ $5, CX
	JZ   vsdone
	SHLQ $1, AX
	ORQ  R8, AX
	CMPQ AX, $0
	JEQ  vsadd
	CMPQ AX, $1
	JEQ  vsaddnt
	CMPQ AX, $2
	JEQ  vssub
	CMPQ AX, $3
	JEQ  vssubnt
	CMPQ AX, $4
	JEQ  vsmul
	CMPQ AX, $5
	JEQ  vsmulnt
	CMPQ AX, $6
	JEQ  vsdiv
	CMPQ AX, $7
	JEQ  vsdivnt
	JMP  vsdone

vsadd:
	VMOVUPS 0(SI), Y0
	VMOVUPS 32(SI), Y1
	VMOVUPS 64(SI), Y2
	VMOVUPS 96(SI), Y3
	VADDPS  Y4, Y0, Y0
	VADDPS  Y4, Y1, Y1
	VADDPS  Y4, Y2, Y2
	VADDPS  Y4, Y3, Y3
	VMOVUPS  Y0, 0(DI)
	VMOVUPS  Y1, 32(DI)
	VMOVUPS  Y2, 64(DI)
	VMOVUPS  Y3, 96(DI)
	ADDQ    $128, SI
	ADDQ    $128, DI
	DECQ    CX
	JNZ     vsadd
	JMP     vsfence

vsaddnt:
	VMOVUPS 0(SI), Y0
	VMOVUPS 32(SI), Y1
	VMOVUPS 64(SI), Y2
	VMOVUPS 96(SI), Y3
	VADDPS  Y4, Y0, Y0
	VADDPS  Y4, Y1, Y1
	VADDPS  Y4, Y2, Y2
	VADDPS  Y4, Y3, Y3
	VMOVNTPS Y0, 0(DI)
	VMOVNTPS Y1, 32(DI)
	VMOVNTPS Y2, 64(DI)
	VMOVNTPS Y3, 96(DI)
	ADDQ    $128, SI
	ADDQ    $128, DI
	DECQ    CX
	JNZ     vsaddnt
	JMP     vsfence

vssub:
	VMOVUPS 0(SI), Y0
	VMOVUPS 32(SI), Y1
	VMOVUPS 64(SI), Y2
	VMOVUPS 96(SI), Y3
	VSUBPS  Y4, Y0, Y0
	VSUBPS  Y4, Y1, Y1
	VSUBPS  Y4, Y2, Y2
	VSUBPS  Y4, Y3, Y3
	VMOVUPS  Y0, 0(DI)
	VMOVUPS  Y1, 32(DI)
	VMOVUPS  Y2, 64(DI)
	VMOVUPS  Y3, 96(DI)
	ADDQ    $128, SI
	ADDQ    $128, DI
	DECQ    CX
	JNZ     vssub
	JMP     vsfence

vssubnt:
	VMOVUPS 0(SI), Y0
	VMOVUPS 32(SI), Y1
	VMOVUPS 64(SI), Y2
	VMOVUPS 96(SI), Y3
	VSUBPS  Y4, Y0, Y0
	VSUBPS  Y4, Y1, Y1
	VSUBPS  Y4, Y2, Y2
	VSUBPS  Y4, Y3, Y3
	VMOVNTPS Y0, 0(DI)
	VMOVNTPS Y1, 32(DI)
	VMOVNTPS Y2, 64(DI)
	VMOVNTPS Y3, 96(DI)
	ADDQ    $128, SI
	ADDQ    $128, DI
	DECQ    CX
	JNZ     vssubnt
	JMP     vsfence

vsmul:
	VMOVUPS 0(SI), Y0
	VMOVUPS 32(SI), Y1
	VMOVUPS 64(SI), Y2
	VMOVUPS 96(SI), Y3
	VMULPS  Y4, Y0, Y0
	VMULPS  Y4, Y1, Y1
	VMULPS  Y4, Y2, Y2
	VMULPS  Y4, Y3, Y3
	VMOVUPS  Y0, 0(DI)
	VMOVUPS  Y1, 32(DI)
	VMOVUPS  Y2, 64(DI)
	VMOVUPS  Y3, 96(DI)
	ADDQ    $128, SI
	ADDQ    $128, DI
	DECQ    CX
	JNZ     vsmul
	JMP     vsfence

vsmulnt:
	VMOVUPS 0(SI), Y0
	VMOVUPS 32(SI), Y1
	VMOVUPS 64(SI), Y2
	VMOVUPS 96(SI), Y3
	VMULPS  Y4, Y0, Y0
	VMULPS  Y4, Y1, Y1
	VMULPS  Y4, Y2, Y2
	VMULPS  Y4, Y3, Y3
	VMOVNTPS Y0, 0(DI)
	VMOVNTPS Y1, 32(DI)
	VMOVNTPS Y2, 64(DI)
	VMOVNTPS Y3, 96(DI)
	ADDQ    $128, SI
	ADDQ    $128, DI
	DECQ    CX
	JNZ     vsmulnt
	JMP     vsfence

vsdiv:
	VMOVUPS 0(SI), Y0
	VMOVUPS 32(SI), Y1
	VMOVUPS 64(SI), Y2
	VMOVUPS 96(SI), Y3
	VDIVPS  Y4, Y0, Y0
	VDIVPS  Y4, Y1, Y1
	VDIVPS  Y4, Y2, Y2
	VDIVPS  Y4, Y3, Y3
	VMOVUPS  Y0, 0(DI)
	VMOVUPS  Y1, 32(DI)
	VMOVUPS  Y2, 64(DI)
	VMOVUPS  Y3, 96(DI)
	ADDQ    $128, SI
	ADDQ    $128, DI
	DECQ    CX
	JNZ     vsdiv
	JMP     vsfence

vsdivnt:
	VMOVUPS 0(SI), Y0
	VMOVUPS 32(SI), Y1
	VMOVUPS 64(SI), Y2
	VMOVUPS 96(SI), Y3
	VDIVPS  Y4, Y0, Y0
	VDIVPS  Y4, Y1, Y1
	VDIVPS  Y4, Y2, Y2
	VDIVPS  Y4, Y3, Y3
	VMOVNTPS Y0, 0(DI)
	VMOVNTPS Y1, 32(DI)
	VMOVNTPS Y2, 64(DI)
	VMOVNTPS Y3, 96(DI)
	ADDQ    $128, SI
	ADDQ    $128, DI
	DECQ    CX
	JNZ     vsdivnt
	JMP     vsfence

vsfence:
	TESTQ R8, R8
	JZ    vsdone
	SFENCE

vsdone:
	VZEROUPPER
	RET
