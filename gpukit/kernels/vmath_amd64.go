//go:build !purego

package kernels

import "math"

// The AVX2+FMA versions of the functions in vmath.go, in vmath_amd64.s.
// Each processes n elements, n a multiple of 8; the caller does the tail
// with the Go functions, which round alike.

//go:noescape
func expAVX2(dst, src *float32, n int)

//go:noescape
func logAVX2(dst, src *float32, n int)

//go:noescape
func sigmoidAVX2(dst, src *float32, n int)

//go:noescape
func tanhAVX2(dst, src *float32, n int)

//go:noescape
func erfAVX2(dst, src *float32, n int)

//go:noescape
func geluAVX2(dst, src *float32, n int)

//go:noescape
func geluGradAVX2(dst, src *float32, n int)

//go:noescape
func geluTanhAVX2(dst, src *float32, n int)

//go:noescape
func geluTanhGradAVX2(dst, src *float32, n int)

// useVecMath selects the assembly (FMA is what makes the polynomials
// round as fma32 does; AVX2 gives the integer lanes for 2ⁿ).
var useVecMath = useAVX2

// vk is the constant table of vmath_amd64.s; its offsets are fixed there.
var vk = [...]uint32{
	f32bits(log2e32), f32bits(ln2Hi32), f32bits(ln2Lo32), // 0 4 8
	f32bits(expC7), f32bits(expC6), f32bits(expC5), f32bits(expC4), f32bits(expC3), f32bits(expC2), // 12 .. 32
	f32bits(1), f32bits(expMax), f32bits(expMin), 0x7f800000, // 36 40 44 48
	0x7fffffff, 0x80000000, 127, // 52 56 60
	f32bits(logC4), f32bits(logC3), f32bits(logC2), f32bits(logC1), // 64 68 72 76
	f32bits(0.5), f32bits(2), 0x3f800000 - 0x3f3504f3, 0x007fffff, 0x3f3504f3, // 80 84 88 92 96
	f32bits(0x1p23), f32bits(0x1p-126), 0x7fc00000, 0xff800000, // 100 104 108 112
	f32bits(tanhSplit), f32bits(tanhMax), tanhBase, erfBase, 7, 0, 0, // 116 .. 140 (erfSplit = tanhSplit)
	0, f32bits(erfP0), f32bits(erfP1), f32bits(erfP2), f32bits(erfP3), f32bits(erfP4), f32bits(erfP5), // 144 .. 168
	0, f32bits(erfcC0), // 172 176
	f32bits(erfcR0), f32bits(erfcR1), f32bits(erfcR2), f32bits(erfcR3), f32bits(erfcR4), // 180 .. 196
	f32bits(erfcR5), f32bits(erfcR6), f32bits(erfcR7), f32bits(erfcR8), f32bits(erfcR9), // 200 .. 216
	f32bits(4), f32bits(sqrtHalf32), f32bits(phiNeg), f32bits(phiT), f32bits(invSqrt2Pi32), f32bits(phiHuge), // 220 .. 240
	f32bits(geluKappa), f32bits(geluBeta2), 0, 0, f32bits(3 * geluKappa), // 244 .. 260
	150, f32bits(geluXMax), f32bits(-geluXMax), // 264 268 272
	f32bits(erfP6), f32bits(erfP7), f32bits(erfP8), f32bits(phiPos), // 276 280 284 288
}

func f32bits(f float32) uint32 { return math.Float32bits(f) }

// The assembly unrolls the polynomials of vmath_tables.go: a fit of
// another degree (internal/vmathfit) fails to compile here until
// vmath_amd64.s follows.
var (
	_ [len(tanhT) - 7]struct{}
	_ [7 - len(tanhT)]struct{}
	_ [len(erfT) - 7]struct{}
	_ [7 - len(erfT)]struct{}
	_ [len(tanhQ) - 8]struct{}
	_ [8 - len(tanhQ)]struct{}
	_ [len(erfQ) - 9]struct{}
	_ [9 - len(erfQ)]struct{}
)

// Row helpers (rows_amd64.s); n is a multiple of 8, at least 8.

//go:noescape
func maxAVX2(s *float32, n int) float32

//go:noescape
func expSubAVX2(dst, src *float32, n int, m float32, acc *[8]float64)

//go:noescape
func scaleAVX2(dst *float32, n int, c float32)

//go:noescape
func subSubAVX2(dst, src *float32, n int, m, c float32)

//go:noescape
func sumAVX2(s *float32, n int, acc *[8]float64)

//go:noescape
func sqDevAVX2(s *float32, n int, mu float64, acc *[8]float64)

//go:noescape
func normAffineAVX2(y, x, w, b *float32, n int, hi, lo, rs float32)

//go:noescape
func lnBwdSumsAVX2(grad, x, w *float32, n int, mu, rs float32, sg, sgx *[8]float64, pw, pb *float64)

//go:noescape
func lnBwdDxAVX2(dx, grad, x, w *float32, n int, mu, rs, a, b float32)
