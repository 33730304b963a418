//go:build !purego

#include "textflag.h"

// func adamAVX(p, grad, m, v *float32, n int, c *[8]float32)
//
// One Adam step over n/8·8 float32 elements (the caller does the tail),
// eight at a time, with the operations of AdamUpdate in the same order
// and no fused multiply-add, so each lane rounds exactly as the scalar
// loop does. c holds decay, β1, 1-β1, β2, 1-β2, √(1-β2ᵗ), eps and
// lr/(1-β1ᵗ).
TEXT ·adamAVX(SB), NOSPLIT, $0-48
	MOVQ p+0(FP), DI
	MOVQ grad+8(FP), SI
	MOVQ m+16(FP), R8
	MOVQ v+24(FP), R9
	MOVQ n+32(FP), CX
	MOVQ c+40(FP), AX
	VBROADCASTSS 0(AX), Y8   // decay
	VBROADCASTSS 4(AX), Y9   // β1
	VBROADCASTSS 8(AX), Y10  // 1-β1
	VBROADCASTSS 12(AX), Y11 // β2
	VBROADCASTSS 16(AX), Y12 // 1-β2
	VBROADCASTSS 20(AX), Y13 // √(1-β2ᵗ)
	VBROADCASTSS 24(AX), Y14 // eps
	VBROADCASTSS 28(AX), Y15 // lr/(1-β1ᵗ)
	SHRQ $3, CX
	JZ   done

loop:
	VMOVUPS (DI), Y0      // p
	VMOVUPS (SI), Y1      // g
	VMOVUPS (R8), Y2      // m
	VMOVUPS (R9), Y3      // v
	VMULPS  Y8, Y0, Y0    // p·decay
	VMULPS  Y9, Y2, Y2    // m·β1
	VMULPS  Y10, Y1, Y4   // g·(1-β1)
	VADDPS  Y4, Y2, Y2    // m ← m·β1 + g·(1-β1)
	VMULPS  Y1, Y1, Y5    // g·g
	VMULPS  Y12, Y5, Y5   // g·g·(1-β2)
	VMULPS  Y11, Y3, Y3   // v·β2
	VADDPS  Y5, Y3, Y3    // v ← v·β2 + g·g·(1-β2)
	VMOVUPS Y2, (R8)
	VMOVUPS Y3, (R9)
	VSQRTPS Y3, Y6        // √v
	VDIVPS  Y13, Y6, Y6   // √v / √(1-β2ᵗ)
	VADDPS  Y14, Y6, Y6   // + eps
	VDIVPS  Y6, Y2, Y7    // m / denom
	VMULPS  Y15, Y7, Y7   // · lr/(1-β1ᵗ)
	VSUBPS  Y7, Y0, Y0    // p ← p - that
	VMOVUPS Y0, (DI)
	ADDQ    $32, DI
	ADDQ    $32, SI
	ADDQ    $32, R8
	ADDQ    $32, R9
	DECQ    CX
	JNZ     loop

done:
	VZEROUPPER
	RET
