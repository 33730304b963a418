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

// CASE(n, label) jumps to label when AX = n (2·op + stream).
#define CASE(n, label) \
	CMPQ AX, $n; \
	JEQ  label

// VVLOOP(label, OP, STORE) is, at label, binaryVV's loop for one op and
// store: d[0:32] = a[0:32] OP b[0:32] (STORE4(STORE)), a step until CX
// is spent, then on to vvfence. VSLOOP is binaryVS's, with VS and
// vsfence.
#define VVLOOP(label, OP, STORE) \
label: \
	VV(OP); \
	STORE4(STORE); \
	ADDQ $128, SI; \
	ADDQ $128, DX; \
	ADDQ $128, DI; \
	DECQ CX; \
	JNZ  label; \
	JMP  vvfence

#define VSLOOP(label, OP, STORE) \
label: \
	VS(OP); \
	STORE4(STORE); \
	ADDQ $128, SI; \
	ADDQ $128, DI; \
	DECQ CX; \
	JNZ  label; \
	JMP  vsfence

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
	CASE(0, vvadd)
	CASE(1, vvaddnt)
	CASE(2, vvsub)
	CASE(3, vvsubnt)
	CASE(4, vvmul)
	CASE(5, vvmulnt)
	CASE(6, vvdiv)
	CASE(7, vvdivnt)
	JMP  vvdone

	VVLOOP(vvadd, VADDPS, VMOVUPS)
	VVLOOP(vvaddnt, VADDPS, VMOVNTPS)
	VVLOOP(vvsub, VSUBPS, VMOVUPS)
	VVLOOP(vvsubnt, VSUBPS, VMOVNTPS)
	VVLOOP(vvmul, VMULPS, VMOVUPS)
	VVLOOP(vvmulnt, VMULPS, VMOVNTPS)
	VVLOOP(vvdiv, VDIVPS, VMOVUPS)
	VVLOOP(vvdivnt, VDIVPS, VMOVNTPS)

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
	CASE(0, vsadd)
	CASE(1, vsaddnt)
	CASE(2, vssub)
	CASE(3, vssubnt)
	CASE(4, vsmul)
	CASE(5, vsmulnt)
	CASE(6, vsdiv)
	CASE(7, vsdivnt)
	JMP  vsdone

	VSLOOP(vsadd, VADDPS, VMOVUPS)
	VSLOOP(vsaddnt, VADDPS, VMOVNTPS)
	VSLOOP(vssub, VSUBPS, VMOVUPS)
	VSLOOP(vssubnt, VSUBPS, VMOVNTPS)
	VSLOOP(vsmul, VMULPS, VMOVUPS)
	VSLOOP(vsmulnt, VMULPS, VMOVNTPS)
	VSLOOP(vsdiv, VDIVPS, VMOVUPS)
	VSLOOP(vsdivnt, VDIVPS, VMOVNTPS)

vsfence:
	TESTQ R8, R8
	JZ    vsdone
	SFENCE

vsdone:
	VZEROUPPER
	RET
