//go:build !purego

#include "textflag.h"

// 128 bytes of results, from four YMM registers, with ordinary stores
// (STORE VMOVUPS) or non-temporal ones (STORE VMOVNTPS).
#define STORE4(STORE) \
	STORE Y0, 0(DI); \
	STORE Y1, 32(DI); \
	STORE Y2, 64(DI); \
	STORE Y3, 96(DI)

// Y0..Y3 = a[0:32] OP b[0:32] (a at SI, b at DX).
#define VV(OP) \
	VMOVUPS 0(SI), Y0; \
	VMOVUPS 32(SI), Y1; \
	VMOVUPS 64(SI), Y2; \
	VMOVUPS 96(SI), Y3; \
	OP      0(DX), Y0, Y0; \
	OP      32(DX), Y1, Y1; \
	OP      64(DX), Y2, Y2; \
	OP      96(DX), Y3, Y3

// Y0..Y3 = a[0:32] OP s (a at SI, s broadcast in Y4).
#define VS(OP) \
	VMOVUPS 0(SI), Y0; \
	VMOVUPS 32(SI), Y1; \
	VMOVUPS 64(SI), Y2; \
	VMOVUPS 96(SI), Y3; \
	OP      Y4, Y0, Y0; \
	OP      Y4, Y1, Y1; \
	OP      Y4, Y2, Y2; \
	OP      Y4, Y3, Y3

// func arithVVAVX(op int, d, a, b *float32, n int, stream int)
//
// d[i] = a[i] op b[i] for i < n (a multiple of 32), op Add, Sub, Mul or
// Div (BinaryOp's values 0 to 3), 32 lanes a step in four YMM registers:
// binaryVV's loop, each lane rounded as the scalar operation is. With
// stream ≠ 0 the results go to memory with non-temporal stores (d must be
// 32-byte aligned), which do not read d's lines into the cache first: a
// quarter less traffic for an operation too large for the cache. One loop
// per op and store, chosen once (2·op + stream).
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
	ORQ  R8, AX
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
	VV(VADDPS)
	STORE4(VMOVUPS)
	ADDQ $128, SI
	ADDQ $128, DX
	ADDQ $128, DI
	DECQ CX
	JNZ  vvadd
	JMP  vvfence

vvaddnt:
	VV(VADDPS)
	STORE4(VMOVNTPS)
	ADDQ $128, SI
	ADDQ $128, DX
	ADDQ $128, DI
	DECQ CX
	JNZ  vvaddnt
	JMP  vvfence

vvsub:
	VV(VSUBPS)
	STORE4(VMOVUPS)
	ADDQ $128, SI
	ADDQ $128, DX
	ADDQ $128, DI
	DECQ CX
	JNZ  vvsub
	JMP  vvfence

vvsubnt:
	VV(VSUBPS)
	STORE4(VMOVNTPS)
	ADDQ $128, SI
	ADDQ $128, DX
	ADDQ $128, DI
	DECQ CX
	JNZ  vvsubnt
	JMP  vvfence

vvmul:
	VV(VMULPS)
	STORE4(VMOVUPS)
	ADDQ $128, SI
	ADDQ $128, DX
	ADDQ $128, DI
	DECQ CX
	JNZ  vvmul
	JMP  vvfence

vvmulnt:
	VV(VMULPS)
	STORE4(VMOVNTPS)
	ADDQ $128, SI
	ADDQ $128, DX
	ADDQ $128, DI
	DECQ CX
	JNZ  vvmulnt
	JMP  vvfence

vvdiv:
	VV(VDIVPS)
	STORE4(VMOVUPS)
	ADDQ $128, SI
	ADDQ $128, DX
	ADDQ $128, DI
	DECQ CX
	JNZ  vvdiv
	JMP  vvfence

vvdivnt:
	VV(VDIVPS)
	STORE4(VMOVNTPS)
	ADDQ $128, SI
	ADDQ $128, DX
	ADDQ $128, DI
	DECQ CX
	JNZ  vvdivnt
	JMP  vvfence

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
	MOVQ         op+0(FP), AX
	MOVQ         d+8(FP), DI
	MOVQ         a+16(FP), SI
	VBROADCASTSS s+24(FP), Y4
	MOVQ         n+32(FP), CX
	MOVQ         stream+40(FP), R8
	SHRQ         $5, CX
	JZ           vsdone
	SHLQ         $1, AX
	ORQ          R8, AX
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
	VS(VADDPS)
	STORE4(VMOVUPS)
	ADDQ $128, SI
	ADDQ $128, DI
	DECQ CX
	JNZ  vsadd
	JMP  vsfence

vsaddnt:
	VS(VADDPS)
	STORE4(VMOVNTPS)
	ADDQ $128, SI
	ADDQ $128, DI
	DECQ CX
	JNZ  vsaddnt
	JMP  vsfence

vssub:
	VS(VSUBPS)
	STORE4(VMOVUPS)
	ADDQ $128, SI
	ADDQ $128, DI
	DECQ CX
	JNZ  vssub
	JMP  vsfence

vssubnt:
	VS(VSUBPS)
	STORE4(VMOVNTPS)
	ADDQ $128, SI
	ADDQ $128, DI
	DECQ CX
	JNZ  vssubnt
	JMP  vsfence

vsmul:
	VS(VMULPS)
	STORE4(VMOVUPS)
	ADDQ $128, SI
	ADDQ $128, DI
	DECQ CX
	JNZ  vsmul
	JMP  vsfence

vsmulnt:
	VS(VMULPS)
	STORE4(VMOVNTPS)
	ADDQ $128, SI
	ADDQ $128, DI
	DECQ CX
	JNZ  vsmulnt
	JMP  vsfence

vsdiv:
	VS(VDIVPS)
	STORE4(VMOVUPS)
	ADDQ $128, SI
	ADDQ $128, DI
	DECQ CX
	JNZ  vsdiv
	JMP  vsfence

vsdivnt:
	VS(VDIVPS)
	STORE4(VMOVNTPS)
	ADDQ $128, SI
	ADDQ $128, DI
	DECQ CX
	JNZ  vsdivnt
	JMP  vsfence

vsfence:
	TESTQ R8, R8
	JZ    vsdone
	SFENCE

vsdone:
	VZEROUPPER
	RET
