//go:build !purego

#include "textflag.h"
#include "neon_arm64.h"
#include "vmath_arm64.h"

// Row helpers of rows.go (NEON), as rows_amd64.s: n is a multiple of 8
// (≥ 8), two four-lane vectors an iteration. Float64 lane sums keep lane
// i%8 of the row in acc[i%8] as the Go loops do: acc[0..1] in V8,
// acc[2..3] in V9, acc[4..5] in V10, acc[6..7] in V11 (FCVTL widens
// lanes 0-1 of a float32 vector, FCVTL2 lanes 2-3); LayerNorm's row
// statistics (sumVec, sqDevVec) keep 32 lanes, in V8-V23 (STATS).

// WIDEN_ADD(v, accLo, accHi): the four values of V v widened to float64
// and added, lanes 0-1 to V accLo and lanes 2-3 to V accHi (V6 scratch).
#define WIDEN_ADD(v, accLo, accHi) \
	FCVTL2D(6, v); \
	FADD2D(accLo, accLo, 6); \
	FCVTL22D(6, v); \
	FADD2D(accHi, accHi, 6)

// ACC(arg) loads R3 = arg, a *[8]float64, and the eight sums there into
// V8-V11; ACCRET, at done, stores them back and returns.
#define ACC(arg) \
	MOVD arg, R3; \
	VLD1 (R3), [V8.D2, V9.D2, V10.D2, V11.D2]

#define ACCRET \
done: \
	VST1 [V8.D2, V9.D2, V10.D2, V11.D2], (R3); \
	RET

// STATS(OP) is the whole of sumVec and sqDevVec after R1 = s, R2 = n,
// R3 = acc (a *[32]float64): acc[i%32] += term(s[i]), 32 values a step,
// the lanes in V8-V23 (acc[2k..2k+1] in V(8+k)), so that each takes one
// add per 32 values (rows.go's rowSum says why); n mod 32 (8, 16 or 24)
// goes to the first lanes after the loop. OP(v, accLo, accHi) adds the
// terms of the four values in Vv (WIDEN_ADD: the values, SQDEV: their
// squared deviations). R4, R5 scratch.
#define STATS(OP) \
	MOVD   R3, R4; \
	VLD1.P 64(R4), [V8.D2, V9.D2, V10.D2, V11.D2]; \
	VLD1.P 64(R4), [V12.D2, V13.D2, V14.D2, V15.D2]; \
	VLD1.P 64(R4), [V16.D2, V17.D2, V18.D2, V19.D2]; \
	VLD1   (R4), [V20.D2, V21.D2, V22.D2, V23.D2]; \
	LSR    $5, R2, R5; \
	CBZ    R5, rest; \
loop: \
	VLD1.P 64(R1), [V0.S4, V1.S4, V2.S4, V3.S4]; \
	VLD1.P 64(R1), [V24.S4, V25.S4, V26.S4, V27.S4]; \
	OP(0, 8, 9); \
	OP(1, 10, 11); \
	OP(2, 12, 13); \
	OP(3, 14, 15); \
	OP(24, 16, 17); \
	OP(25, 18, 19); \
	OP(26, 20, 21); \
	OP(27, 22, 23); \
	SUBS   $1, R5; \
	BNE    loop; \
rest: \
	AND    $24, R2; \
	CBZ    R2, done; \
	VLD1.P 32(R1), [V0.S4, V1.S4]; \
	OP(0, 8, 9); \
	OP(1, 10, 11); \
	CMP    $8, R2; \
	BEQ    done; \
	VLD1.P 32(R1), [V0.S4, V1.S4]; \
	OP(0, 12, 13); \
	OP(1, 14, 15); \
	CMP    $16, R2; \
	BEQ    done; \
	VLD1.P 32(R1), [V0.S4, V1.S4]; \
	OP(0, 16, 17); \
	OP(1, 18, 19); \
done: \
	MOVD   R3, R4; \
	VST1.P [V8.D2, V9.D2, V10.D2, V11.D2], 64(R4); \
	VST1.P [V12.D2, V13.D2, V14.D2, V15.D2], 64(R4); \
	VST1.P [V16.D2, V17.D2, V18.D2, V19.D2], 64(R4); \
	VST1   [V20.D2, V21.D2, V22.D2, V23.D2], (R4); \
	RET

// ARG4S(arg, v): v = four copies of the float32 argument arg (R5
// scratch).
#define ARG4S(arg, v) \
	MOVD  $arg, R5; \
	VLD1R (R5), [v.S4]

// func maxVec(s *float32, n int) float32
TEXT ·maxVec(SB), NOSPLIT, $0-20
	MOVD   s+0(FP), R1
	MOVD   n+8(FP), R2
	LSR    $3, R2
	VLD1.P 32(R1), [V0.S4, V1.S4]
	SUBS   $1, R2
	BEQ    reduce

loop:
	VLD1.P 32(R1), [V2.S4, V3.S4]
	FMAX4S(0, 0, 2)
	FMAX4S(1, 1, 3)
	SUBS   $1, R2
	BNE    loop

reduce:
	FMAX4S(0, 0, 1)
	FMAXV4S(0, 0)
	FMOVS  F0, ret+16(FP)
	RET

// EXPSUB4(accLo, accHi): four values of expSubVec's loop, dst[i] =
// exp32(src[i] - m) (m in V12), added to two accumulators.
#define EXPSUB4(accLo, accHi) \
	VLD1.P 16(R1), [V0.S4]; \
	FSUB4S(0, 0, 12); \
	EXPF; \
	VST1.P [V0.S4], 16(R0); \
	WIDEN_ADD(0, accLo, accHi)

// func expSubVec(dst, src *float32, n int, m float32, acc *[8]float64)
TEXT ·expSubVec(SB), NOSPLIT, $0-40
	MOVD   dst+0(FP), R0
	MOVD   src+8(FP), R1
	MOVD   n+16(FP), R2
	ARG4S(m+24(FP), V12)
	ACC(acc+32(FP))
	LSR    $2, R2
	CBZ    R2, done
	EXPCONSTS

loop:
	// Four values an iteration, alternating between the accumulators
	// of lanes 0-3 (V8, V9) and 4-7 (V10, V11).
	EXPSUB4(8, 9)
	EXPSUB4(10, 11)
	SUBS   $2, R2
	BNE    loop
	ACCRET

// func scaleVec(dst *float32, n int, c float32)
TEXT ·scaleVec(SB), NOSPLIT, $0-20
	MOVD   dst+0(FP), R0
	MOVD   n+8(FP), R2
	ARG4S(c+16(FP), V2)
	LSR    $3, R2
	CBZ    R2, done

loop:
	VLD1   (R0), [V0.S4, V1.S4]
	FMUL4S(0, 0, 2)
	FMUL4S(1, 1, 2)
	VST1.P [V0.S4, V1.S4], 32(R0)
	SUBS   $1, R2
	BNE    loop

done:
	RET

// func subSubVec(dst, src *float32, n int, m, c float32)
TEXT ·subSubVec(SB), NOSPLIT, $0-32
	MOVD   dst+0(FP), R0
	MOVD   src+8(FP), R1
	MOVD   n+16(FP), R2
	ARG4S(m+24(FP), V4)
	ARG4S(c+28(FP), V5)
	LSR    $3, R2
	CBZ    R2, done

loop:
	VLD1.P 32(R1), [V0.S4, V1.S4]
	FSUB4S(0, 0, 4)
	FSUB4S(1, 1, 4)
	FSUB4S(0, 0, 5)
	FSUB4S(1, 1, 5)
	VST1.P [V0.S4, V1.S4], 32(R0)
	SUBS   $1, R2
	BNE    loop

done:
	RET

// func sumVec(s *float32, n int, acc *[32]float64)
TEXT ·sumVec(SB), NOSPLIT, $0-24
	MOVD   s+0(FP), R1
	MOVD   n+8(FP), R2
	MOVD   acc+16(FP), R3
	STATS(WIDEN_ADD)

// SQDEV(v, accLo, accHi): the squared deviations from mu (V7) of the
// four values in v, added to two accumulators.
#define SQDEV(v, accLo, accHi) \
	FCVTL2D(6, v); \
	FSUB2D(6, 6, 7); \
	FMUL2D(6, 6, 6); \
	FADD2D(accLo, accLo, 6); \
	FCVTL22D(6, v); \
	FSUB2D(6, 6, 7); \
	FMUL2D(6, 6, 6); \
	FADD2D(accHi, accHi, 6)

// func sqDevVec(s *float32, n int, mu float64, acc *[32]float64)
TEXT ·sqDevVec(SB), NOSPLIT, $0-32
	MOVD   s+0(FP), R1
	MOVD   n+8(FP), R2
	FMOVD  mu+16(FP), F7
	VDUP   V7.D[0], V7.D2
	MOVD   acc+24(FP), R3
	STATS(SQDEV)

// func normAffineVec(y, x, w, b *float32, n int, hi, lo, rs float32)
TEXT ·normAffineVec(SB), NOSPLIT, $0-52
	MOVD   y+0(FP), R0
	MOVD   x+8(FP), R1
	MOVD   w+16(FP), R6
	MOVD   b+24(FP), R7
	MOVD   n+32(FP), R2
	ARG4S(hi+40(FP), V16)
	ARG4S(lo+44(FP), V17)
	ARG4S(rs+48(FP), V18)
	LSR    $3, R2
	CBZ    R2, done

loop:
	VLD1.P 32(R1), [V0.S4, V1.S4]
	VLD1.P 32(R6), [V2.S4, V3.S4]
	VLD1.P 32(R7), [V4.S4, V5.S4]
	FSUB4S(0, 0, 16)
	FSUB4S(1, 1, 16)
	FSUB4S(0, 0, 17)
	FSUB4S(1, 1, 17)
	FMUL4S(0, 0, 18)
	FMUL4S(1, 1, 18)              // h = ((x - hi) - lo)·rs
	VFMLA  V2.S4, V0.S4, V4.S4
	VFMLA  V3.S4, V1.S4, V5.S4    // b + h·w, one rounding
	VST1.P [V4.S4, V5.S4], 32(R0)
	SUBS   $1, R2
	BNE    loop

done:
	RET

// ADDCOL(v, ptr): the four values of v widened and added to the four
// float64 at ptr, which moves on by 32 bytes.
#define ADDCOL(v, ptr) \
	VLD1 (ptr), [V20.D2, V21.D2]; \
	FCVTL2D(6, v); \
	FADD2D(20, 20, 6); \
	FCVTL22D(6, v); \
	FADD2D(21, 21, 6); \
	VST1.P [V20.D2, V21.D2], 32(ptr)

// LNBWD4(sgLo, sgHi, sgxLo, sgxHi): four values of lnBwdSumsVec's loop,
// x̂ = (x - mu)·rs (mu in V16, rs in V17), ĝ = g·w: sg += ĝ and sgx +=
// ĝ·x̂ into the accumulators named, pw += g·x̂ and pb += g at R8 and R9.
#define LNBWD4(sgLo, sgHi, sgxLo, sgxHi) \
	VLD1.P 16(R0), [V0.S4]; \
	FSUB4S(0, 0, 16); \
	FMUL4S(0, 0, 17); \
	VLD1.P 16(R1), [V1.S4]; \
	VLD1.P 16(R6), [V2.S4]; \
	FMUL4S(2, 1, 2); \
	WIDEN_ADD(2, sgLo, sgHi); \
	FMUL4S(2, 2, 0); \
	WIDEN_ADD(2, sgxLo, sgxHi); \
	FMUL4S(3, 1, 0); \
	ADDCOL(3, R8); \
	ADDCOL(1, R9)

// func lnBwdSumsVec(grad, x, w *float32, n int, mu, rs float32, sg, sgx *[8]float64, pw, pb *float64)
TEXT ·lnBwdSumsVec(SB), NOSPLIT, $0-72
	MOVD   grad+0(FP), R1
	MOVD   x+8(FP), R0
	MOVD   w+16(FP), R6
	MOVD   n+24(FP), R2
	ARG4S(mu+32(FP), V16)
	ARG4S(rs+36(FP), V17)
	MOVD   sg+40(FP), R3
	MOVD   sgx+48(FP), R7
	MOVD   pw+56(FP), R8
	MOVD   pb+64(FP), R9
	VLD1   (R3), [V8.D2, V9.D2, V10.D2, V11.D2]
	VLD1   (R7), [V12.D2, V13.D2, V14.D2, V15.D2]
	LSR    $2, R2
	CBZ    R2, done

loop:
	// Four values an iteration: lanes 0-3 of the eight (V8, V9; V12,
	// V13), then 4-7 (V10, V11; V14, V15).
	LNBWD4(8, 9, 12, 13)
	LNBWD4(10, 11, 14, 15)
	SUBS   $2, R2
	BNE    loop

done:
	VST1 [V8.D2, V9.D2, V10.D2, V11.D2], (R3)
	VST1 [V12.D2, V13.D2, V14.D2, V15.D2], (R7)
	RET

// func lnBwdDxVec(dx, grad, x, w *float32, n int, mu, rs, a, b float32)
TEXT ·lnBwdDxVec(SB), NOSPLIT, $0-56
	MOVD   dx+0(FP), R0
	MOVD   grad+8(FP), R1
	MOVD   x+16(FP), R6
	MOVD   w+24(FP), R7
	MOVD   n+32(FP), R2
	ARG4S(mu+40(FP), V16)
	ARG4S(rs+44(FP), V17)
	ARG4S(a+48(FP), V18)
	ARG4S(b+52(FP), V19)
	LSR    $2, R2
	CBZ    R2, done

loop:
	VLD1.P 16(R6), [V0.S4]
	FSUB4S(0, 0, 16)
	FMUL4S(0, 0, 17)              // x̂
	VLD1.P 16(R1), [V1.S4]
	VLD1.P 16(R7), [V2.S4]
	FMUL4S(1, 1, 2)               // ĝ
	FSUB4S(1, 1, 18)              // ĝ - a
	FMUL4S(0, 0, 19)              // x̂·b
	FSUB4S(1, 1, 0)
	FMUL4S(1, 17, 1)              // rs·(...)
	VST1.P [V1.S4], 16(R0)
	SUBS   $1, R2
	BNE    loop

done:
	RET
