//go:build !purego

#include "textflag.h"

// Eight-lane float32 elementary functions (AVX2 + FMA). Each macro is
// the Go function of the same name in vmath.go, operation for operation;
// every branch of a piecewise formula is computed and the lanes are
// blended. Constants come from ·vk (vmath_amd64.go) at the offsets noted.

#include "vmath_amd64.h"

// ERFCXR: Y4 = erfcxR(Y9, K(coff)). Clobbers Y1-Y4.
#define ERFCXR(coff) \
	VBROADCASTSS K(coff), Y1; \
	VBROADCASTSS K(36), Y2; \
	VFMADD213PS  Y2, Y9, Y1; \
	VDIVPS       Y1, Y2, Y1; \
	VBROADCASTSS K(176), Y3; \
	VSUBPS       Y3, Y1, Y1; \
	VBROADCASTSS K(216), Y4; \
	VBROADCASTSS K(212), Y3; \
	VFMADD213PS  Y3, Y1, Y4; \
	VBROADCASTSS K(208), Y3; \
	VFMADD213PS  Y3, Y1, Y4; \
	VBROADCASTSS K(204), Y3; \
	VFMADD213PS  Y3, Y1, Y4; \
	VBROADCASTSS K(200), Y3; \
	VFMADD213PS  Y3, Y1, Y4; \
	VBROADCASTSS K(196), Y3; \
	VFMADD213PS  Y3, Y1, Y4; \
	VBROADCASTSS K(192), Y3; \
	VFMADD213PS  Y3, Y1, Y4; \
	VBROADCASTSS K(188), Y3; \
	VFMADD213PS  Y3, Y1, Y4; \
	VBROADCASTSS K(184), Y3; \
	VFMADD213PS  Y3, Y1, Y4; \
	VBROADCASTSS K(180), Y3; \
	VFMADD213PS  Y3, Y1, Y4

// ERFP: Y11 = erfP(zreg). Clobbers Y1.
#define ERFP(zreg) \
	VBROADCASTSS K(284), Y11; \
	VBROADCASTSS K(280), Y1; \
	VFMADD213PS  Y1, zreg, Y11; \
	VBROADCASTSS K(276), Y1; \
	VFMADD213PS  Y1, zreg, Y11; \
	VBROADCASTSS K(168), Y1; \
	VFMADD213PS  Y1, zreg, Y11; \
	VBROADCASTSS K(164), Y1; \
	VFMADD213PS  Y1, zreg, Y11; \
	VBROADCASTSS K(160), Y1; \
	VFMADD213PS  Y1, zreg, Y11; \
	VBROADCASTSS K(156), Y1; \
	VFMADD213PS  Y1, zreg, Y11; \
	VBROADCASTSS K(152), Y1; \
	VFMADD213PS  Y1, zreg, Y11; \
	VBROADCASTSS K(148), Y1; \
	VFMADD213PS  Y1, zreg, Y11

// LOOP8 runs body over n/8 blocks: DI = dst, SI = src, CX = blocks.
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

// func expAVX2(dst, src *float32, n int)
TEXT ·expAVX2(SB), NOSPLIT, $0-24
	PROLOGUE
loop:
	VMOVUPS (SI), Y0
	EXPF
	NEXT
done:
	VZEROUPPER
	RET

// SIGMOID: from v in Y12, Y6 = σ(v) and Y7 = 1-σ(v) (sigmoidParts).
// Clobbers Y0-Y5.
#define SIGMOID \
	VBROADCASTSS K(52), Y1; \
	VANDPS       Y1, Y12, Y0; \
	VBROADCASTSS K(56), Y1; \
	VXORPS       Y1, Y0, Y0; \
	EXPF; \
	VBROADCASTSS K(36), Y1; \
	VADDPS       Y1, Y0, Y3; \
	VDIVPS       Y3, Y1, Y2; \
	VDIVPS       Y3, Y0, Y3; \
	VXORPS       Y4, Y4, Y4; \
	VCMPPS       $0x1d, Y4, Y12, Y4; \
	VBLENDVPS    Y4, Y2, Y3, Y6; \
	VBLENDVPS    Y4, Y3, Y2, Y7

// func sigmoidAVX2(dst, src *float32, n int)
TEXT ·sigmoidAVX2(SB), NOSPLIT, $0-24
	PROLOGUE
loop:
	VMOVUPS      (SI), Y12
	VBROADCASTSS K(52), Y1
	VANDPS       Y1, Y12, Y0
	VBROADCASTSS K(56), Y1
	VXORPS       Y1, Y0, Y0
	EXPF                           // e = e^(-|x|)
	VBROADCASTSS K(36), Y1
	VADDPS       Y1, Y0, Y3        // d = 1 + e
	VSUBPS       Y3, Y1, Y4
	VADDPS       Y0, Y4, Y4        // dl = (1 - d) + e
	VDIVPS       Y3, Y1, Y2        // inv = 1/d
	VXORPS       Y6, Y6, Y6
	VCMPPS       $0x1d, Y6, Y12, Y6 // x >= 0
	VBLENDVPS    Y6, Y1, Y0, Y7    // n
	VMULPS       Y2, Y7, Y5        // q = n·inv
	VFNMADD231PS Y3, Y5, Y7        // n - q·d
	VFNMADD231PS Y4, Y5, Y7        // c = n - q·d - q·dl
	VFMADD213PS  Y5, Y2, Y7        // q + c·inv
	VMOVAPS      Y7, Y0
	NEXT
done:
	VZEROUPPER
	RET

// func logAVX2(dst, src *float32, n int)
TEXT ·logAVX2(SB), NOSPLIT, $0-24
	PROLOGUE
loop:
	VMOVUPS      (SI), Y0
	VPBROADCASTD K(92), Y1
	VPCMPGTD     Y1, Y0, Y2        // bits > 0x007fffff: at least 2⁻¹²⁶ (or +Inf, +NaN)
	VPBROADCASTD K(48), Y1
	VPCMPGTD     Y0, Y1, Y5        // bits < 0x7f800000: finite (or negative)
	VPAND        Y5, Y2, Y2
	VMOVMSKPS    Y2, AX            // lanes that are normal, positive and finite
	CMPL         AX, $0xff
	JNE          scale
	VMOVAPS      Y0, Y3            // all eight: no scaling, no special values
	VPBROADCASTD K(60), Y4
	JMP          reduced
scale:
	VBROADCASTSS K(104), Y1
	VCMPPS       $0x11, Y1, Y0, Y2 // subnormal (or ≤ 0: blended away below)
	VBROADCASTSS K(100), Y1
	VMULPS       Y1, Y0, Y1
	VBLENDVPS    Y2, Y1, Y0, Y3    // x scaled into the normal range
	VPBROADCASTD K(60), Y4
	VPBROADCASTD K(264), Y1
	VBLENDVPS    Y2, Y1, Y4, Y4    // exponent bias, 127 or 127+23
reduced:
	VPBROADCASTD K(88), Y1
	VPADDD       Y1, Y3, Y3
	VPSRLD       $23, Y3, Y1
	VPSUBD       Y4, Y1, Y1
	VCVTDQ2PS    Y1, Y1            // dk
	VPBROADCASTD K(92), Y2
	VPAND        Y2, Y3, Y3
	VPBROADCASTD K(96), Y2
	VPADDD       Y2, Y3, Y3
	VBROADCASTSS K(36), Y2
	VSUBPS       Y2, Y3, Y3        // f
	VBROADCASTSS K(84), Y2
	VADDPS       Y3, Y2, Y2
	VDIVPS       Y2, Y3, Y2        // s = f/(2+f)
	VMULPS       Y2, Y2, Y4        // z
	VBROADCASTSS K(64), Y5
	VBROADCASTSS K(68), Y7
	VFMADD213PS  Y7, Y4, Y5
	VBROADCASTSS K(72), Y7
	VFMADD213PS  Y7, Y4, Y5
	VBROADCASTSS K(76), Y7
	VFMADD213PS  Y7, Y4, Y5
	VMULPS       Y4, Y5, Y5        // R
	VADDPS       Y2, Y2, Y7
	VSUBPS       Y7, Y3, Y7        // f - 2s
	VFNMADD231PS Y3, Y2, Y7        // r = (f - 2s) - s·f
	VBROADCASTSS K(80), Y6
	VMULPS       Y6, Y3, Y9        // hf = f/2
	VMULPS       Y3, Y2, Y8        // s·f
	VMULPS       Y3, Y9, Y10       // hi
	VMOVAPS      Y10, Y11
	VFMSUB231PS  Y3, Y9, Y11       // lo = hf·f - hi
	VSUBPS       Y10, Y3, Y12      // u = f - hi
	VSUBPS       Y12, Y3, Y13
	VSUBPS       Y10, Y13, Y13     // eu = (f - u) - hi
	VBROADCASTSS K(4), Y6
	VMOVAPS      Y12, Y14
	VFMADD231PS  Y6, Y1, Y14       // S = dk·ln2Hi + u
	VMOVAPS      Y14, Y15
	VFMSUB231PS  Y6, Y1, Y15       // dk·ln2Hi - S
	VADDPS       Y12, Y15, Y15     // es
	VSUBPS       Y11, Y13, Y13
	VADDPS       Y13, Y15, Y15     // es + (eu - lo)
	VBROADCASTSS K(8), Y6
	VFMADD231PS  Y6, Y1, Y15       // w = dk·ln2Lo + ...
	VFMADD231PS  Y8, Y7, Y15       // w += r·(s·f)
	VFMADD231PS  Y5, Y2, Y15       // s·R + w
	VFMADD231PS  Y10, Y2, Y15      // t = s·hi + (s·R + w)
	VADDPS       Y15, Y14, Y3      // S + t
	VMOVAPS      Y3, Y0
	CMPL         AX, $0xff
	JEQ          store
	VMOVUPS      (SI), Y0          // x again, for the special values
	VBROADCASTSS K(48), Y6
	VCMPPS       $0, Y6, Y0, Y7
	VBLENDVPS    Y7, Y6, Y3, Y3    // +Inf
	VXORPS       Y6, Y6, Y6
	VCMPPS       $0, Y6, Y0, Y7
	VBROADCASTSS K(112), Y5
	VBLENDVPS    Y7, Y5, Y3, Y3    // ±0: -Inf
	VCMPPS       $0x19, Y6, Y0, Y7 // !(x >= 0): negative or NaN
	VBROADCASTSS K(108), Y5
	VBLENDVPS    Y7, Y5, Y3, Y0
store:
	NEXT
done:
	VZEROUPPER
	RET

// func tanhAVX2(dst, src *float32, n int)
TEXT ·tanhAVX2(SB), NOSPLIT, $0-24
	PROLOGUE
loop:
	VMOVUPS      (SI), Y8
	VBROADCASTSS K(52), Y1
	VANDPS       Y1, Y8, Y9        // a
	VMULPS       Y8, Y8, Y10       // z
	VBROADCASTSS ·tanhT+24(SB), Y11
	VBROADCASTSS ·tanhT+20(SB), Y1
	VFMADD213PS  Y1, Y10, Y11
	VBROADCASTSS ·tanhT+16(SB), Y1
	VFMADD213PS  Y1, Y10, Y11
	VBROADCASTSS ·tanhT+12(SB), Y1
	VFMADD213PS  Y1, Y10, Y11
	VBROADCASTSS ·tanhT+8(SB), Y1
	VFMADD213PS  Y1, Y10, Y11
	VBROADCASTSS ·tanhT+4(SB), Y1
	VFMADD213PS  Y1, Y10, Y11
	VBROADCASTSS ·tanhT+0(SB), Y1
	VFMADD213PS  Y1, Y10, Y11
	VMULPS       Y11, Y10, Y11
	VFMADD213PS  Y8, Y8, Y11       // small: x + x·(z·T(z))
	VBROADCASTSS K(120), Y1
	VMINPS       Y9, Y1, Y12       // min(a, tanhMax); NaN stays
	VPSRLD       $22, Y12, Y13
	VPBROADCASTD K(124), Y1
	VPSUBD       Y1, Y13, Y13      // interval
	VPERMPS      ·tanhC(SB), Y13, Y1
	VSUBPS       Y1, Y12, Y12      // t = a - c
	VPERMPS      ·tanhQ+224(SB), Y13, Y0
	VPERMPS      ·tanhQ+192(SB), Y13, Y1
	VFMADD213PS  Y1, Y12, Y0
	VPERMPS      ·tanhQ+160(SB), Y13, Y1
	VFMADD213PS  Y1, Y12, Y0
	VPERMPS      ·tanhQ+128(SB), Y13, Y1
	VFMADD213PS  Y1, Y12, Y0
	VPERMPS      ·tanhQ+96(SB), Y13, Y1
	VFMADD213PS  Y1, Y12, Y0
	VPERMPS      ·tanhQ+64(SB), Y13, Y1
	VFMADD213PS  Y1, Y12, Y0
	VPERMPS      ·tanhQ+32(SB), Y13, Y1
	VFMADD213PS  Y1, Y12, Y0
	VPERMPS      ·tanhQ+0(SB), Y13, Y1
	VFMADD213PS  Y1, Y12, Y0
	VPERMPS      ·tanhC0(SB), Y13, Y1
	VFMADD213PS  Y1, Y12, Y0        // c0 + t·q(t)
	VBROADCASTSS K(116), Y1
	VCMPPS       $0x11, Y1, Y9, Y2 // a < 0.75
	VBLENDVPS    Y2, Y11, Y0, Y0
	VBROADCASTSS K(56), Y1
	VANDPS       Y1, Y8, Y1
	VORPS        Y1, Y0, Y0        // the sign of x (also on -0)
	NEXT
done:
	VZEROUPPER
	RET

// func erfAVX2(dst, src *float32, n int)
TEXT ·erfAVX2(SB), NOSPLIT, $0-24
	PROLOGUE
loop:
	VMOVUPS      (SI), Y8
	VBROADCASTSS K(52), Y1
	VANDPS       Y1, Y8, Y9        // a
	VMULPS       Y8, Y8, Y10       // x²
	VBROADCASTSS ·erfT+24(SB), Y11
	VBROADCASTSS ·erfT+20(SB), Y1
	VFMADD213PS  Y1, Y10, Y11
	VBROADCASTSS ·erfT+16(SB), Y1
	VFMADD213PS  Y1, Y10, Y11
	VBROADCASTSS ·erfT+12(SB), Y1
	VFMADD213PS  Y1, Y10, Y11
	VBROADCASTSS ·erfT+8(SB), Y1
	VFMADD213PS  Y1, Y10, Y11
	VBROADCASTSS ·erfT+4(SB), Y1
	VFMADD213PS  Y1, Y10, Y11
	VBROADCASTSS ·erfT+0(SB), Y1
	VFMADD213PS  Y1, Y10, Y11
	VFMADD213PS  Y8, Y8, Y11       // small: x + x·T(x²)
	VMOVAPS      Y11, Y0
	VBROADCASTSS K(116), Y1
	VCMPPS       $0x11, Y1, Y9, Y15 // a < 0.75
	VMOVMSKPS    Y15, AX
	CMPL         AX, $0xff
	JEQ          store             // every lane small
	VBROADCASTSS K(220), Y1
	VMINPS       Y9, Y1, Y12       // min(a, erfMax); NaN stays
	VPSRLD       $21, Y12, Y13
	VPBROADCASTD K(128), Y1
	VPSUBD       Y1, Y13, Y13
	VPBROADCASTD K(132), Y1
	VPMINUD      Y1, Y13, Y13      // interval, at most 7
	VPERMPS      ·erfC(SB), Y13, Y1
	VSUBPS       Y1, Y12, Y12      // t = a - c
	VPERMPS      ·erfQ+256(SB), Y13, Y0
	VPERMPS      ·erfQ+224(SB), Y13, Y1
	VFMADD213PS  Y1, Y12, Y0
	VPERMPS      ·erfQ+192(SB), Y13, Y1
	VFMADD213PS  Y1, Y12, Y0
	VPERMPS      ·erfQ+160(SB), Y13, Y1
	VFMADD213PS  Y1, Y12, Y0
	VPERMPS      ·erfQ+128(SB), Y13, Y1
	VFMADD213PS  Y1, Y12, Y0
	VPERMPS      ·erfQ+96(SB), Y13, Y1
	VFMADD213PS  Y1, Y12, Y0
	VPERMPS      ·erfQ+64(SB), Y13, Y1
	VFMADD213PS  Y1, Y12, Y0
	VPERMPS      ·erfQ+32(SB), Y13, Y1
	VFMADD213PS  Y1, Y12, Y0
	VPERMPS      ·erfQ+0(SB), Y13, Y1
	VFMADD213PS  Y1, Y12, Y0
	VPERMPS      ·erfC0(SB), Y13, Y1
	VFMADD213PS  Y1, Y12, Y0        // c0 + t·q(t)
	VBROADCASTSS K(56), Y1
	VANDPS       Y1, Y8, Y1
	VORPS        Y1, Y0, Y0        // the sign of x
	VBLENDVPS    Y15, Y11, Y0, Y0
store:
	NEXT
done:
	VZEROUPPER
	RET

// GELU's Φ (phiGauss), in parts. PHIPRE: from x in Y8, Y9 = |x|,
// Y12 = x²/2 (rounded) and Y13 = its low part. PHISMALL: Y11 = Φ by the
// polynomial and Y15 = the lanes it serves (-1.2374 < x < 2.1213). GAUSS: Y14 =
// e^(-x²/2), 0 for |x| ≥ 16. PHILARGE: Y10 = Φ, Y11 in the small lanes and
// the erfc form in the others (needs Y14). They clobber Y0-Y5.
#define PHIPRE \
	VBROADCASTSS K(52), Y1; \
	VANDPS       Y1, Y8, Y9; \
	VMULPS       Y8, Y8, Y12; \
	VMOVAPS      Y12, Y13; \
	VFMSUB231PS  Y8, Y8, Y13; \
	VBROADCASTSS K(80), Y1; \
	VMULPS       Y1, Y12, Y12; \
	VMULPS       Y1, Y13, Y13

#define PHISMALL \
	VBROADCASTSS K(224), Y1; \
	VMULPS       Y1, Y8, Y10; \
	ERFP(Y12); \
	VFMADD213PS  Y10, Y10, Y11; \
	VBROADCASTSS K(80), Y1; \
	VFMADD213PS  Y1, Y1, Y11; \
	VBROADCASTSS K(228), Y2; \
	VCMPPS       $0x1e, Y2, Y8, Y15; \
	VBROADCASTSS K(288), Y2; \
	VCMPPS       $0x11, Y2, Y8, Y2; \
	VANDPS       Y2, Y15, Y15

#define GAUSS \
	VBROADCASTSS K(56), Y1; \
	VXORPS       Y1, Y12, Y0; \
	EXPF; \
	VFNMADD231PS Y13, Y0, Y0; \
	VBROADCASTSS K(240), Y1; \
	VCMPPS       $0x1d, Y1, Y9, Y2; \
	VANDNPS      Y0, Y2, Y14

#define PHILARGE \
	ERFCXR(232); \
	VBROADCASTSS K(80), Y1; \
	VMULPS       Y1, Y14, Y1; \
	VMULPS       Y4, Y1, Y1; \
	VBROADCASTSS K(36), Y2; \
	VSUBPS       Y1, Y2, Y2; \
	VXORPS       Y3, Y3, Y3; \
	VCMPPS       $0x1e, Y3, Y8, Y3; \
	VBLENDVPS    Y3, Y2, Y1, Y1; \
	VBLENDVPS    Y15, Y11, Y1, Y10

// func geluAVX2(dst, src *float32, n int)
TEXT ·geluAVX2(SB), NOSPLIT, $0-24
	PROLOGUE
loop:
	VMOVUPS   (SI), Y8
	PHIPRE
	PHISMALL
	VMOVAPS   Y11, Y10
	VMOVMSKPS Y15, AX
	CMPL      AX, $0xff
	JEQ       small // every lane small: no exponential needed
	GAUSS
	PHILARGE
small:
	VMULPS    Y10, Y8, Y0
	NEXT
done:
	VZEROUPPER
	RET

// func geluGradAVX2(dst, src *float32, n int)
TEXT ·geluGradAVX2(SB), NOSPLIT, $0-24
	PROLOGUE
loop:
	VMOVUPS      (SI), Y8
	PHIPRE
	PHISMALL
	GAUSS
	VMOVAPS      Y11, Y10
	VMOVMSKPS    Y15, AX
	CMPL         AX, $0xff
	JEQ          small
	PHILARGE
small:
	VBROADCASTSS K(236), Y1
	VMULPS       Y1, Y14, Y0
	VFMADD213PS  Y10, Y8, Y0
	NEXT
done:
	VZEROUPPER
	RET

// GELUTANH: from x in Y8, Y12 = 2u, Y6 = σ(2u), Y7 = 1-σ(2u). Clobbers
// Y0-Y5.
#define GELUTANH \
	VMULPS       Y8, Y8, Y1; \
	VMULPS       Y8, Y1, Y1; \
	VBROADCASTSS K(244), Y2; \
	VFMADD213PS  Y8, Y2, Y1; \
	VBROADCASTSS K(248), Y2; \
	VMULPS       Y2, Y1, Y12; \
	SIGMOID

// func geluTanhAVX2(dst, src *float32, n int)
TEXT ·geluTanhAVX2(SB), NOSPLIT, $0-24
	PROLOGUE
loop:
	VMOVUPS (SI), Y8
	GELUTANH
	VMULPS  Y6, Y8, Y0
	NEXT
done:
	VZEROUPPER
	RET

// func geluTanhGradAVX2(dst, src *float32, n int)
TEXT ·geluTanhGradAVX2(SB), NOSPLIT, $0-24
	PROLOGUE
loop:
	VMOVUPS      (SI), Y8
	VBROADCASTSS K(272), Y2
	VMAXPS       Y8, Y2, Y8
	VBROADCASTSS K(268), Y2
	VMINPS       Y8, Y2, Y8        // x clamped to ±1e4
	GELUTANH
	VMULPS       Y8, Y8, Y1
	VBROADCASTSS K(260), Y2
	VBROADCASTSS K(36), Y3
	VFMADD213PS  Y3, Y2, Y1
	VBROADCASTSS K(248), Y2
	VMULPS       Y2, Y1, Y1        // 2u'
	VMULPS       Y1, Y8, Y1
	VMULPS       Y6, Y1, Y1        // (x·2u')·σ
	VFMADD213PS  Y6, Y7, Y1        // · (1-σ) + σ
	VMOVAPS      Y1, Y0
	NEXT
done:
	VZEROUPPER
	RET
