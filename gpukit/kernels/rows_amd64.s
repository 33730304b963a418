//go:build !purego

#include "textflag.h"
#include "vmath_amd64.h"

// Row helpers of rows.go (AVX2; maxVec, expSubVec, scaleVec and
// subSubVec also AVX-512, and expSubPairVec AVX-512 only), declared in rows_amd64.go with the Go loop each equals; n is a multiple of 8 (≥ 8). Float64 lane sums keep
// lane i%8 of the row in acc[i%8], as the Go loops do; LayerNorm's row
// statistics (sumVec and sqDevVec, also AVX-512) lane i%32 in acc[i%32].
//
// The first pass over a row, the one that reads it from memory (maxVec,
// sumVec; lnBwdSumsVec until the change below), prefetches 2 KiB ahead:
// rows lie one after the other, so that is the rest of this row and the
// start of the next, which the hardware prefetcher, restarting at each
// call, was late for. On the build machine (2 vCPUs, loaded), one
// thread's CPU time for lnBwdSumsVec over 8192×1024 went from 4.9–6.6 to
// 3.5–4.0 ms and for LayerNorm's forward from 4.6–5.5 to 3.8–4.5 ms
// (BenchmarkLnBwdAVX2, BenchmarkMemBoundLayerNorm); prefetching changes
// no result.
//
// LayerNorm's passes also prefetch the rows to come, one line per line
// they read or write, at a distance in bytes set by PFDIST (R12 or R13):
// sqDevVec, the forward's second pass, reads the row two ahead (at most
// 8 KiB ahead); lnBwdSumsVec, the backward's first, reads the gradient
// and the input two rows ahead (at most 4 KiB; it read 2 KiB ahead
// before); normAffineVec and lnBwdDxVec, which write the output, read the
// output's next row (at most 4 KiB ahead) before their stores come to
// it. Without them the first pass over each row waited for memory while
// the others computed, and each output line was read in only when its
// store came. PREFETCHT0 for the output too: it measured as fast as
// PREFETCHW here, which some CPUs with AVX2 lack (CPUID's PRFCHW flag,
// Intel SDM Vol. 2, PREFETCHW). The limits keep the lines in L1 until
// they are used: with rows of 16 KiB and more, two rows ahead made the
// backward slower than before. Measured in
// BenchmarkMemBoundLayerNorm and BenchmarkMemBoundLayerNormShapes
// (gpukit/kernels/README.md, issue 39).

// ACC(arg) loads AX = arg, a *[8]float64, and the eight sums there into
// Y14 (acc[0..3]) and Y15 (acc[4..7]); ACCRET, at done, stores them back
// and returns.
#define ACC(arg) \
	MOVQ    arg, AX; \
	VMOVUPD (AX), Y14; \
	VMOVUPD 32(AX), Y15

#define ACCRET \
done: \
	VMOVUPD Y14, (AX); \
	VMOVUPD Y15, 32(AX); \
	VZEROUPPER; \
	RET

// WIDEN_ADD(x, y, lo, hi) is acc[i%8] += float64(v[i]) for the eight
// float32 of y (x, its low half): lanes 0-3 widened and added to lo, 4-7
// to hi (Y3 scratch). ADDCOL(x, y, p) is p[i] += float64(v[i]) for the
// eight float64 at p.
#define WIDEN_ADD(x, y, lo, hi) \
	VCVTPS2PD    x, Y3; \
	VADDPD       Y3, lo, lo; \
	VEXTRACTF128 $1, y, X3; \
	VCVTPS2PD    X3, Y3; \
	VADDPD       Y3, hi, hi

// WIDEN_ADDZ(z, y, acc) is acc[i%8] += float64(v[i]) for the sixteen
// float32 of z (y, its low half) into the eight float64 of acc: 0-7, then
// 8-15, the Go loop's order. ADDCOLZ(z, y, p) is p[i] += float64(v[i])
// for the sixteen float64 at p. Z3 (Y3) scratch.
#define WIDEN_ADDZ(z, y, acc) \
	VCVTPS2PD     y, Z3; \
	VADDPD        Z3, acc, acc; \
	VEXTRACTF64X4 $1, z, Y3; \
	VCVTPS2PD     Y3, Z3; \
	VADDPD        Z3, acc, acc

#define ADDCOLZ(z, y, p) \
	VCVTPS2PD     y, Z3; \
	VADDPD        (p), Z3, Z3; \
	VMOVUPD       Z3, (p); \
	VEXTRACTF64X4 $1, z, Y3; \
	VCVTPS2PD     Y3, Z3; \
	VADDPD        64(p), Z3, Z3; \
	VMOVUPD       Z3, 64(p)

#define ADDCOL(x, y, p) \
	VCVTPS2PD    x, Y3; \
	VADDPD       (p), Y3, Y3; \
	VMOVUPD      Y3, (p); \
	VEXTRACTF128 $1, y, X3; \
	VCVTPS2PD    X3, Y3; \
	VADDPD       32(p), Y3, Y3; \
	VMOVUPD      Y3, 32(p)

// func maxVec(s *float32, n int) float32
//
// Where useAVX512Math is set and n ≥ 64, four running maxima of sixteen
// lanes, 64 values a step: one VMAXPS a step, as the AVX2 loop takes, waits
// on the one before it, and that chain, not the memory, set the pace (in
// cache, one thread: BenchmarkRows/softmax spent 14 % of its time here).
// Then the AVX2 loop takes the last n mod 64. The maximum is the same
// number in any order: only which zero (-0 or +0) or whether a NaN comes
// back can differ with the order, and neither changes a row's softmax or
// log-softmax (SoftmaxRows): with a NaN in the row every result is NaN;
// a zero maximum's sign reaches only x - m = ±0, whose exponential is 1
// either way, and a row holding both zeros has a sum of at least 2, so
// log-softmax subtracts a nonzero log(sum) from every ±0.
TEXT ·maxVec(SB), NOSPLIT, $0-20
	MOVQ    s+0(FP), SI
	MOVQ    n+8(FP), CX
	CMPB    ·useAVX512Math(SB), $0
	JEQ     ymm
	CMPQ    CX, $64
	JLT     ymm
	VMOVUPS (SI), Z0
	VMOVUPS 64(SI), Z1
	VMOVUPS 128(SI), Z2
	VMOVUPS 192(SI), Z3
	ADDQ    $256, SI
	MOVQ    CX, DX
	SHRQ    $6, DX
	DECQ    DX
	JZ      zreduce

zloop:
	PREFETCHT0 2048(SI)
	PREFETCHT0 2112(SI)
	PREFETCHT0 2176(SI)
	PREFETCHT0 2240(SI)
	VMAXPS     (SI), Z0, Z0
	VMAXPS     64(SI), Z1, Z1
	VMAXPS     128(SI), Z2, Z2
	VMAXPS     192(SI), Z3, Z3
	ADDQ       $256, SI
	DECQ       DX
	JNZ        zloop

zreduce:
	VMAXPS        Z1, Z0, Z0
	VMAXPS        Z3, Z2, Z2
	VMAXPS        Z2, Z0, Z0
	VEXTRACTF64X4 $1, Z0, Y1
	VMAXPS        Y1, Y0, Y0
	ANDQ          $63, CX
	SHRQ          $3, CX
	JZ            reduce

ztail:
	VMAXPS (SI), Y0, Y0
	ADDQ   $32, SI
	DECQ   CX
	JNZ    ztail
	JMP    reduce

ymm:
	SHRQ    $3, CX
	VMOVUPS (SI), Y0
	ADDQ    $32, SI
	DECQ    CX
	JZ      reduce

loop:
	PREFETCHT0 2048(SI)
	VMAXPS     (SI), Y0, Y0
	ADDQ       $32, SI
	DECQ       CX
	JNZ        loop

reduce:
	VEXTRACTF128 $1, Y0, X1
	VMAXPS       X1, X0, X0
	VPERMILPS    $0x4e, X0, X1
	VMAXPS       X1, X0, X0
	VPERMILPS    $0xb1, X0, X1
	VMAXPS       X1, X0, X0
	VMOVSS       X0, ret+16(FP)
	VZEROUPPER
	RET

// func expSubVec(dst, src *float32, n int, m float32, acc *[8]float64)
//
// Where useAVX512Math is set, sixteen values a step first (ZPROLOGUE's
// scheme, vmath_amd64.h; EXPFZNP, since src[i] - m is at most 0 or NaN
// for softmax's m, the row's maximum): Z14 holds acc[0..7]; of the
// sixteen values, 0-7 are widened and added to it, then 8-15, which is
// acc[i%8] += float64(dst[i]) in the Go loop's order. The AVX2 loop does the last
// eight when n is not a multiple of 16, with Y14, Y15 the halves of Z14.
TEXT ·expSubVec(SB), NOSPLIT, $0-40
	MOVQ          dst+0(FP), DI
	MOVQ          src+8(FP), SI
	MOVQ          n+16(FP), CX
	ACC(acc+32(FP))
	CMPB          ·useAVX512Math(SB), $0
	JEQ           ymm
	EXPZCONSTS
	VBROADCASTSS  m+24(FP), Z6
	VMOVUPD       (AX), Z14
	SHRQ          $4, CX
	JZ            ztail

zloop:
	VMOVUPS       (SI), Z0
	VSUBPS        Z6, Z0, Z0
	EXPFZNP
	VMOVUPS       Z0, (DI)
	VCVTPS2PD     Y0, Z3
	VADDPD        Z3, Z14, Z14
	VEXTRACTF64X4 $1, Z0, Y3
	VCVTPS2PD     Y3, Z3
	VADDPD        Z3, Z14, Z14
	ADDQ          $64, DI
	ADDQ          $64, SI
	DECQ          CX
	JNZ           zloop

ztail:
	VEXTRACTF64X4 $1, Z14, Y15
	MOVQ          n+16(FP), CX
	ANDQ          $8, CX

ymm:
	VBROADCASTSS m+24(FP), Y6
	MOVQ         CX, DX
	SHRQ         $4, DX
	JZ           one

	// Two vectors a step (EXPF2), their sums added in order; a last
	// vector alone.
two:
	VMOVUPS      (SI), Y0
	VMOVUPS      32(SI), Y7
	VSUBPS       Y6, Y0, Y0
	VSUBPS       Y6, Y7, Y7
	EXPF2(Y0, Y1, Y2, Y3, Y4, Y7, Y8, Y9, Y10, Y11, Y12)
	VMOVUPS      Y0, (DI)
	VMOVUPS      Y7, 32(DI)
	WIDEN_ADD(X0, Y0, Y14, Y15)
	WIDEN_ADD(X7, Y7, Y14, Y15)
	ADDQ         $64, DI
	ADDQ         $64, SI
	DECQ         DX
	JNZ          two

one:
	ANDQ         $15, CX
	SHRQ         $3, CX
	JZ           done

loop:
	VMOVUPS      (SI), Y0
	VSUBPS       Y6, Y0, Y0
	EXPF
	VMOVUPS      Y0, (DI)
	WIDEN_ADD(X0, Y0, Y14, Y15)
	ADDQ         $32, DI
	ADDQ         $32, SI
	DECQ         CX
	JNZ          loop
	ACCRET

// func expSubPairVec(d1, s1, d2, s2 *float32, n int, m1, m2 float32, acc1, acc2 *[8]float64)
//
// expSubVec's AVX-512 loop on two rows at once (n a multiple of 16, at
// least 16): each row gets the operations expSubVec gives it, so the bits
// are the same, but the two rows' sums are two chains of additions. On
// one row the sum was one chain, two float64 additions a step each
// waiting on the one before, and it set the pace: without it the loop
// took a quarter less time (BenchmarkRows/softmax, in cache, one
// thread). Only the AVX-512 loop has a pair form.
TEXT ·expSubPairVec(SB), NOSPLIT, $0-64
	MOVQ          d1+0(FP), DI
	MOVQ          s1+8(FP), SI
	MOVQ          d2+16(FP), R8
	MOVQ          s2+24(FP), R9
	MOVQ          n+32(FP), CX
	VBROADCASTSS  m1+40(FP), Z6
	VBROADCASTSS  m2+44(FP), Z7
	MOVQ          acc1+48(FP), AX
	MOVQ          acc2+56(FP), BX
	EXPZCONSTS
	VMOVUPD       (AX), Z14
	VMOVUPD       (BX), Z15
	SHRQ          $4, CX
	JZ            pairdone

pairloop:
	VMOVUPS       (SI), Z0
	VSUBPS        Z6, Z0, Z0
	EXPFZNP
	VMOVUPS       Z0, (DI)
	VMOVAPS       Z0, Z8
	VMOVUPS       (R9), Z0
	VSUBPS        Z7, Z0, Z0
	EXPFZNP
	VMOVUPS       Z0, (R8)
	VCVTPS2PD     Y8, Z3
	VADDPD        Z3, Z14, Z14
	VCVTPS2PD     Y0, Z9
	VADDPD        Z9, Z15, Z15
	VEXTRACTF64X4 $1, Z8, Y3
	VCVTPS2PD     Y3, Z3
	VADDPD        Z3, Z14, Z14
	VEXTRACTF64X4 $1, Z0, Y9
	VCVTPS2PD     Y9, Z9
	VADDPD        Z9, Z15, Z15
	ADDQ          $64, DI
	ADDQ          $64, SI
	ADDQ          $64, R8
	ADDQ          $64, R9
	DECQ          CX
	JNZ           pairloop

pairdone:
	VMOVUPD Z14, (AX)
	VMOVUPD Z15, (BX)
	VZEROUPPER
	RET

// func scaleVec(dst *float32, n int, c float32)
//
// scaleVec and subSubVec also run sixteen lanes a step first where
// useAVX512Math is set, the AVX2 loop doing the last eight (as expSubVec).
TEXT ·scaleVec(SB), NOSPLIT, $0-20
	MOVQ         dst+0(FP), DI
	MOVQ         n+8(FP), CX
	CMPB         ·useAVX512Math(SB), $0
	JEQ          ymm
	VBROADCASTSS c+16(FP), Z1
	SHRQ         $4, CX
	JZ           ztail

zloop:
	VMULPS  (DI), Z1, Z0
	VMOVUPS Z0, (DI)
	ADDQ    $64, DI
	DECQ    CX
	JNZ     zloop

ztail:
	MOVQ n+8(FP), CX
	ANDQ $8, CX

ymm:
	VBROADCASTSS c+16(FP), Y1
	SHRQ         $3, CX
	JZ           done

loop:
	VMULPS  (DI), Y1, Y0
	VMOVUPS Y0, (DI)
	ADDQ    $32, DI
	DECQ    CX
	JNZ     loop

done:
	VZEROUPPER
	RET

// func subSubVec(dst, src *float32, n int, m, c float32)
TEXT ·subSubVec(SB), NOSPLIT, $0-32
	MOVQ         dst+0(FP), DI
	MOVQ         src+8(FP), SI
	MOVQ         n+16(FP), CX
	CMPB         ·useAVX512Math(SB), $0
	JEQ          ymm
	VBROADCASTSS m+24(FP), Z1
	VBROADCASTSS c+28(FP), Z2
	SHRQ         $4, CX
	JZ           ztail

zloop:
	VMOVUPS (SI), Z0
	VSUBPS  Z1, Z0, Z0
	VSUBPS  Z2, Z0, Z0
	VMOVUPS Z0, (DI)
	ADDQ    $64, DI
	ADDQ    $64, SI
	DECQ    CX
	JNZ     zloop

ztail:
	MOVQ n+16(FP), CX
	ANDQ $8, CX

ymm:
	VBROADCASTSS m+24(FP), Y1
	VBROADCASTSS c+28(FP), Y2
	SHRQ         $3, CX
	JZ           done

loop:
	VMOVUPS (SI), Y0
	VSUBPS  Y1, Y0, Y0
	VSUBPS  Y2, Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ    $32, DI
	ADDQ    $32, SI
	DECQ    CX
	JNZ     loop

done:
	VZEROUPPER
	RET

// LayerNorm's row statistics, acc[i%32] += term(s[i]) (sumVec: the
// values; sqDevVec: their squared deviations from mu), 32 values a step:
// AVX-512 holds the 32 lanes in Z12-Z15 (eight each), AVX2 in Y8-Y15
// (four each), so that each accumulator takes one add per 32 values.
// TZ(off, t, acc) and TY(off, t, acc) add the terms of the eight (four)
// float32 at off(SI), widened into t, to acc. STATS(TZ, TY, PF) is the
// whole function after AX = acc, SI = s, CX = n, R11 = n: n mod 32 (8,
// 16 or 24) goes to the first lanes after the loop. PF prefetches, in
// the pass that reads the row from memory.

// Z or Y registers alike.
#define SUM(off, t, acc) \
	VCVTPS2PD off(SI), t; \
	VADDPD    t, acc, acc

// mu in Z6 (Y6); the square is rounded before the add, as float64(d*d).
#define SQDEV_Z(off, t, acc) \
	VCVTPS2PD off(SI), t; \
	VSUBPD    Z6, t, t; \
	VMULPD    t, t, t; \
	VADDPD    t, acc, acc

#define SQDEV_Y(off, t, acc) \
	VCVTPS2PD off(SI), t; \
	VSUBPD    Y6, t, t; \
	VMULPD    t, t, t; \
	VADDPD    t, acc, acc

#define PF_AHEAD \
	PREFETCHT0 2048(SI); \
	PREFETCHT0 2112(SI)

#define PF_NONE

// PFDIST(n, shift, limit, reg, tmp) sets reg = min(n << shift, limit):
// a prefetch distance of some rows of n float32, in bytes, at most limit.
#define PFDIST(n, shift, limit, reg, tmp) \
	MOVQ    n, reg; \
	SHLQ    $shift, reg; \
	MOVQ    $limit, tmp; \
	CMPQ    reg, tmp; \
	CMOVQGT tmp, reg

// sqDevVec's prefetch, R12 bytes on (PFDIST: two rows, at most 8 KiB):
// 128 bytes a step, two lines.
#define PF_NEXT2 \
	PREFETCHT0 (SI)(R12*1); \
	PREFETCHT0 64(SI)(R12*1)

#define STATS(TZ, TY, PF) \
	SHRQ    $5, CX; \
	CMPB    ·useAVX512Math(SB), $0; \
	JEQ     ymm; \
	VMOVUPD (AX), Z12; \
	VMOVUPD 64(AX), Z13; \
	VMOVUPD 128(AX), Z14; \
	VMOVUPD 192(AX), Z15; \
	TESTQ   CX, CX; \
	JZ      zrest; \
zloop: \
	PF; \
	TZ(0, Z0, Z12); \
	TZ(32, Z1, Z13); \
	TZ(64, Z2, Z14); \
	TZ(96, Z3, Z15); \
	ADDQ    $128, SI; \
	DECQ    CX; \
	JNZ     zloop; \
zrest: \
	ANDQ    $24, R11; \
	JZ      zdone; \
	TZ(0, Z0, Z12); \
	CMPQ    R11, $8; \
	JEQ     zdone; \
	TZ(32, Z1, Z13); \
	CMPQ    R11, $16; \
	JEQ     zdone; \
	TZ(64, Z2, Z14); \
zdone: \
	VMOVUPD Z12, (AX); \
	VMOVUPD Z13, 64(AX); \
	VMOVUPD Z14, 128(AX); \
	VMOVUPD Z15, 192(AX); \
	VZEROUPPER; \
	RET; \
ymm: \
	VMOVUPD (AX), Y8; \
	VMOVUPD 32(AX), Y9; \
	VMOVUPD 64(AX), Y10; \
	VMOVUPD 96(AX), Y11; \
	VMOVUPD 128(AX), Y12; \
	VMOVUPD 160(AX), Y13; \
	VMOVUPD 192(AX), Y14; \
	VMOVUPD 224(AX), Y15; \
	TESTQ   CX, CX; \
	JZ      yrest; \
yloop: \
	PF; \
	TY(0, Y0, Y8); \
	TY(16, Y1, Y9); \
	TY(32, Y2, Y10); \
	TY(48, Y3, Y11); \
	TY(64, Y0, Y12); \
	TY(80, Y1, Y13); \
	TY(96, Y2, Y14); \
	TY(112, Y3, Y15); \
	ADDQ    $128, SI; \
	DECQ    CX; \
	JNZ     yloop; \
yrest: \
	ANDQ    $24, R11; \
	JZ      ydone; \
	TY(0, Y0, Y8); \
	TY(16, Y1, Y9); \
	CMPQ    R11, $8; \
	JEQ     ydone; \
	TY(32, Y2, Y10); \
	TY(48, Y3, Y11); \
	CMPQ    R11, $16; \
	JEQ     ydone; \
	TY(64, Y0, Y12); \
	TY(80, Y1, Y13); \
ydone: \
	VMOVUPD Y8, (AX); \
	VMOVUPD Y9, 32(AX); \
	VMOVUPD Y10, 64(AX); \
	VMOVUPD Y11, 96(AX); \
	VMOVUPD Y12, 128(AX); \
	VMOVUPD Y13, 160(AX); \
	VMOVUPD Y14, 192(AX); \
	VMOVUPD Y15, 224(AX); \
	VZEROUPPER; \
	RET

// func sumVec(s *float32, n int, acc *[32]float64)
TEXT ·sumVec(SB), NOSPLIT, $0-24
	MOVQ s+0(FP), SI
	MOVQ n+8(FP), CX
	MOVQ CX, R11
	MOVQ acc+16(FP), AX
	STATS(SUM, SUM, PF_AHEAD)

// func sqDevVec(s *float32, n int, mu float64, acc *[32]float64)
TEXT ·sqDevVec(SB), NOSPLIT, $0-32
	MOVQ         s+0(FP), SI
	MOVQ         n+8(FP), CX
	MOVQ         CX, R11
	MOVQ         acc+24(FP), AX
	PFDIST(CX, 3, 8192, R12, R13)
	VBROADCASTSD mu+16(FP), Y6
	CMPB         ·useAVX512Math(SB), $0
	JEQ          sqdev
	VBROADCASTSD mu+16(FP), Z6

sqdev:
	STATS(SQDEV_Z, SQDEV_Y, PF_NEXT2)

// NORMAFFINE(v, t, hi, lo, rs): one vector of y = fma(((x - hi) - lo)·rs,
// w, b), x at SI, w at R8, b at R9, into DI; Y or Z registers alike.
#define NORMAFFINE(v, t, hi, lo, rs) \
	VMOVUPS     (SI), v; \
	VSUBPS      hi, v, v; \
	VSUBPS      lo, v, v; \
	VMULPS      rs, v, v; \
	VMOVUPS     (R8), t; \
	VFMADD213PS (R9), t, v; \
	VMOVUPS     v, (DI)

// func normAffineVec(y, x, w, b *float32, n int, hi, lo, rs float32)
TEXT ·normAffineVec(SB), NOSPLIT, $0-52
	MOVQ         y+0(FP), DI
	MOVQ         x+8(FP), SI
	MOVQ         w+16(FP), R8
	MOVQ         b+24(FP), R9
	MOVQ         n+32(FP), CX
	PFDIST(CX, 2, 4096, R12, R13)
	VBROADCASTSS hi+40(FP), Y6
	VBROADCASTSS lo+44(FP), Y8
	VBROADCASTSS rs+48(FP), Y7
	CMPB         ·useAVX512Math(SB), $0
	JEQ          ymm
	VBROADCASTSS hi+40(FP), Z6
	VBROADCASTSS lo+44(FP), Z8
	VBROADCASTSS rs+48(FP), Z7
	SHRQ         $4, CX
	JZ           ztail

zloop:
	PREFETCHT0  (DI)(R12*1)
	NORMAFFINE(Z0, Z1, Z6, Z8, Z7)
	ADDQ        $64, DI
	ADDQ        $64, SI
	ADDQ        $64, R8
	ADDQ        $64, R9
	DECQ        CX
	JNZ         zloop

ztail:
	MOVQ n+32(FP), CX
	ANDQ $8, CX

ymm:
	SHRQ $3, CX
	JZ   done

loop:
	PREFETCHT0  (DI)(R12*1)
	NORMAFFINE(Y0, Y1, Y6, Y8, Y7)
	ADDQ        $32, DI
	ADDQ        $32, SI
	ADDQ        $32, R8
	ADDQ        $32, R9
	DECQ        CX
	JNZ         loop

done:
	VZEROUPPER
	RET

// func lnBwdSumsVec(grad, x, w *float32, n int, mu, rs float32, sg, sgx *[8]float64, pw, pb *float64)
TEXT ·lnBwdSumsVec(SB), NOSPLIT, $0-72
	MOVQ         grad+0(FP), SI
	MOVQ         x+8(FP), DX
	MOVQ         w+16(FP), R8
	MOVQ         n+24(FP), CX
	PFDIST(CX, 3, 4096, R12, R13)
	VBROADCASTSS mu+32(FP), Y6
	VBROADCASTSS rs+36(FP), Y7
	MOVQ         sg+40(FP), AX
	MOVQ         sgx+48(FP), BX
	MOVQ         pw+56(FP), R9
	MOVQ         pb+64(FP), R10
	CMPB         ·useAVX512Math(SB), $0
	JEQ          ymm
	VBROADCASTSS mu+32(FP), Z6
	VBROADCASTSS rs+36(FP), Z7
	VMOVUPD      (AX), Z12
	VMOVUPD      (BX), Z14
	SHRQ         $4, CX
	JZ           ztail

zloop:
	PREFETCHT0   (DX)(R12*1)
	PREFETCHT0   (SI)(R12*1)
	VMOVUPS      (DX), Z0
	VSUBPS       Z6, Z0, Z0
	VMULPS       Z7, Z0, Z0        // x̂
	VMOVUPS      (SI), Z1          // g
	VMULPS       (R8), Z1, Z2      // ĝ = g·w
	WIDEN_ADDZ(Z2, Y2, Z12)
	VMULPS       Z0, Z2, Z2        // ĝ·x̂
	WIDEN_ADDZ(Z2, Y2, Z14)
	VMULPS       Z0, Z1, Z2        // g·x̂
	ADDCOLZ(Z2, Y2, R9)
	ADDCOLZ(Z1, Y1, R10)           // g
	ADDQ         $64, SI
	ADDQ         $64, DX
	ADDQ         $64, R8
	ADDQ         $128, R9
	ADDQ         $128, R10
	DECQ         CX
	JNZ          zloop

ztail:
	VEXTRACTF64X4 $1, Z12, Y13
	VEXTRACTF64X4 $1, Z14, Y15
	MOVQ          n+24(FP), CX
	ANDQ          $8, CX
	JMP           ycount

ymm:
	VMOVUPD      (AX), Y12
	VMOVUPD      32(AX), Y13
	VMOVUPD      (BX), Y14
	VMOVUPD      32(BX), Y15

ycount:
	SHRQ         $3, CX
	JZ           done

loop:
	PREFETCHT0   (DX)(R12*1)
	PREFETCHT0   (SI)(R12*1)
	VMOVUPS      (DX), Y0
	VSUBPS       Y6, Y0, Y0
	VMULPS       Y7, Y0, Y0        // x̂
	VMOVUPS      (SI), Y1          // g
	VMULPS       (R8), Y1, Y2      // ĝ = g·w
	WIDEN_ADD(X2, Y2, Y12, Y13)
	VMULPS       Y0, Y2, Y2        // ĝ·x̂
	WIDEN_ADD(X2, Y2, Y14, Y15)
	VMULPS       Y0, Y1, Y2        // g·x̂
	ADDCOL(X2, Y2, R9)
	ADDCOL(X1, Y1, R10)            // g
	ADDQ         $32, SI
	ADDQ         $32, DX
	ADDQ         $32, R8
	ADDQ         $64, R9
	ADDQ         $64, R10
	DECQ         CX
	JNZ          loop

done:
	VMOVUPD Y12, (AX)
	VMOVUPD Y13, 32(AX)
	VMOVUPD Y14, (BX)
	VMOVUPD Y15, 32(BX)
	VZEROUPPER
	RET

// LNDX(xh, gh, mu, rs, a, b): one vector of dx = rs·((ĝ - a) - x̂·b),
// x at DX, grad at SI, w at R8, into DI; Y or Z registers alike.
#define LNDX(xh, gh, mu, rs, a, b) \
	VMOVUPS (DX), xh; \
	VSUBPS  mu, xh, xh; \
	VMULPS  rs, xh, xh; \
	VMOVUPS (SI), gh; \
	VMULPS  (R8), gh, gh; \
	VSUBPS  a, gh, gh; \
	VMULPS  b, xh, xh; \
	VSUBPS  xh, gh, gh; \
	VMULPS  rs, gh, gh; \
	VMOVUPS gh, (DI)

// func lnBwdDxVec(dx, grad, x, w *float32, n int, mu, rs, a, b float32)
TEXT ·lnBwdDxVec(SB), NOSPLIT, $0-56
	MOVQ         dx+0(FP), DI
	MOVQ         grad+8(FP), SI
	MOVQ         x+16(FP), DX
	MOVQ         w+24(FP), R8
	MOVQ         n+32(FP), CX
	PFDIST(CX, 2, 4096, R13, R12)
	VBROADCASTSS mu+40(FP), Y6
	VBROADCASTSS rs+44(FP), Y7
	VBROADCASTSS a+48(FP), Y8
	VBROADCASTSS b+52(FP), Y9
	CMPB         ·useAVX512Math(SB), $0
	JEQ          ymm
	VBROADCASTSS mu+40(FP), Z6
	VBROADCASTSS rs+44(FP), Z7
	VBROADCASTSS a+48(FP), Z8
	VBROADCASTSS b+52(FP), Z9
	SHRQ         $4, CX
	JZ           ztail

zloop:
	PREFETCHT0 (DI)(R13*1)
	LNDX(Z0, Z1, Z6, Z7, Z8, Z9)
	ADDQ    $64, DI
	ADDQ    $64, SI
	ADDQ    $64, DX
	ADDQ    $64, R8
	DECQ    CX
	JNZ     zloop

ztail:
	MOVQ n+32(FP), CX
	ANDQ $8, CX

ymm:
	SHRQ $3, CX
	JZ   done

loop:
	PREFETCHT0 (DI)(R13*1)
	LNDX(Y0, Y1, Y6, Y7, Y8, Y9)
	ADDQ    $32, DI
	ADDQ    $32, SI
	ADDQ    $32, DX
	ADDQ    $32, R8
	DECQ    CX
	JNZ     loop

done:
	VZEROUPPER
	RET
