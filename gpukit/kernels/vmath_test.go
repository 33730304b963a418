package kernels

import (
	"math"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/gpumem/course/gpukit/internal/racetest"
)

// vecCase is one function under test: its vecFunc, the float64
// reference it is measured against, its domain in float32 and the
// largest error in ulp it reaches: over the sample TestVecAccuracy
// checks by default (bound) and over every float32 (boundAll, with
// GPUKIT_VMATH_EXHAUSTIVE=1), each the measured maximum rounded up to
// 0.01 ulp, so that a change that loses accuracy fails.
type vecCase struct {
	name            string
	v               *vecFunc
	ref             func(float64) float64
	bound, boundAll float64
	lo, hi          float32
	// scale, when set, gives the size of the error unit for derivatives
	// (whose value crosses zero): the ulp of the largest term.
	scale func(float64) float64
}

func vecCases() []vecCase {
	inf := float32(math.Inf(1))
	return []vecCase{
		{name: "exp", v: &vecExp, ref: math.Exp, bound: 0.96, boundAll: 0.99, lo: -inf, hi: inf},
		{name: "log", v: &vecLog, ref: math.Log, bound: 0.54, boundAll: 0.57, lo: 0, hi: inf},
		{name: "sigmoid", v: &vecSigmoid, ref: sigmoid64, bound: 1.39, boundAll: 1.48, lo: -inf, hi: inf},
		{name: "tanh", v: &vecTanh, ref: math.Tanh, bound: 0.71, boundAll: 0.77, lo: -inf, hi: inf},
		{name: "erf", v: &vecErf, ref: math.Erf, bound: 0.66, boundAll: 0.72, lo: -inf, hi: inf},
		{name: "gelu", v: &vecGelu, ref: gelu64, bound: 6.47, boundAll: 7.20, lo: -13, hi: inf},
		{name: "gelu_grad", v: &vecGeluGrad, ref: geluGrad64, bound: 3.10, boundAll: 3.82, lo: -13, hi: inf, scale: geluGradUnit},
		{name: "gelu_tanh", v: &vecGeluTanh, ref: geluTanh64, bound: 28.34, boundAll: 39.35, lo: -5, hi: inf},
		{name: "gelu_tanh_grad", v: &vecGeluTanG, ref: geluTanhGrad64, bound: 28.61, boundAll: 37.48, lo: -5, hi: inf, scale: func(x float64) float64 {
			x = max(min(x, 1e4), -1e4)
			s := sigmoid64(geluTanhInner64(x))
			return max(s, math.Abs(geluTanhGrad64(x)-s))
		}},
	}
}

// geluGradUnit is the size of GELU's derivative's error unit at x: the
// larger of its terms Φ(x) and x·φ(x), whose sum cancels near x = -0.75.
func geluGradUnit(x float64) float64 {
	return max(0.5*math.Erfc(-x/math.Sqrt2), math.Abs(x*math.Exp(-0.5*x*x)/math.Sqrt(2*math.Pi)))
}

// ulp32 is the spacing of float32 values at magnitude |v|.
func ulp32(v float64) float64 {
	v = math.Abs(v)
	if v < 0x1p-126 {
		return 0x1p-149
	}
	_, e := math.Frexp(v) // v = f·2^e, f in [0.5, 1)
	return math.Ldexp(1, e-24)
}

// ulpErr is |got - want| in ulp of want (of unit, when unit > 0): 0 when
// both are the same NaN or infinity, +Inf when only one is.
func ulpErr(got float32, want, unit float64) float64 {
	g := float64(got)
	switch {
	case math.IsNaN(want) || math.IsNaN(g):
		if math.IsNaN(want) && math.IsNaN(g) {
			return 0
		}
		return math.Inf(1)
	case float64(float32(want)) == g:
		return 0 // includes overflow to ±Inf and ±0
	case math.IsInf(g, 0) || math.IsInf(want, 0):
		return math.Inf(1)
	}
	if unit == 0 {
		unit = want
	}
	return math.Abs(g-want) / ulp32(unit)
}

// sample returns float32 values spread over every binade of [lo, hi]:
// every step-th bit pattern, plus the special values.
func sample(lo, hi float32, step uint32) []float32 {
	var xs []float32
	for b := uint64(0); b < 1<<32; b += uint64(step) {
		x := math.Float32frombits(uint32(b))
		if x >= lo && x <= hi {
			xs = append(xs, x)
		}
	}
	for _, x := range specials() {
		if x != x || (x >= lo && x <= hi) {
			xs = append(xs, x)
		}
	}
	return xs
}

func specials() []float32 {
	f := func(b uint32) float32 { return math.Float32frombits(b) }
	return []float32{0, f(0x80000000), f(1), f(0x807fffff), f(0x007fffff), f(0x00800000), 1, -1, 0.5, -0.5,
		88.72283, 88.72284, 88.7229, -87.33654, -103.97, -103.98, -104, 104, 0.875, -0.875, 0.9, -0.9, 4, -4,
		0.75, -0.75, math.Nextafter32(0.75, 0), 1.5, 2, 2.5, 3, 6, 8, 9.011, 9.125, -9.125, 9.2, 3.92, 1.4142135, 0.70710677,
		1.2374369, -1.2374369, 16, -16, 80, -80, 1e30, -1e30, math.MaxFloat32, -math.MaxFloat32,
		float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN())}
}

// TestVecMatchesScalar checks that the vector forms (AVX2+FMA on amd64,
// NEON on arm64, vmath_other.go's Go loops elsewhere) and the Go
// reference give the same bits for every input, so results do not depend
// on the CPU.
func TestVecMatchesScalar(t *testing.T) {
	if !useVecMath {
		t.Skip("no AVX2+FMA on this CPU: only the Go functions run")
	}
	step, extra := uint32(4099), 1<<16
	if testing.Short() || racetest.Enabled {
		step, extra = 65521, 1<<12
	}
	xs := sample(float32(math.Inf(-1)), float32(math.Inf(1)), step)
	r := rand.New(rand.NewPCG(1, 2))
	for range extra {
		xs = append(xs, float32(r.NormFloat64()*4))
	}
	// A length of 16k+8: with AVX-512, sixteen-lane blocks, then one of
	// eight in the AVX2 loop (forEachVecPath also runs that loop alone).
	xs = xs[:(len(xs)-8)&^15+8]
	got := make([]float32, len(xs))
	forEachVecPath(t, func(t *testing.T) {
		for _, c := range vecCases() {
			c.v.vec(&got[0], &xs[0], len(xs))
			bad := 0
			c.compareBits(t, xs, got, &bad)
			if bad > 0 {
				t.Errorf("%s: %d of %d inputs differ", c.name, bad, len(xs))
			}
		}
	})
}

// compareBits counts in bad the inputs xs whose vector results got are
// not the Go reference's bits (any NaN matches any NaN), reporting the
// first five.
func (c vecCase) compareBits(t *testing.T, xs, got []float32, bad *int) {
	t.Helper()
	for i, x := range xs {
		want := c.v.f32(x)
		if math.Float32bits(got[i]) != math.Float32bits(want) && !(got[i] != got[i] && want != want) {
			if *bad < 5 {
				t.Errorf("%s(%g = %#08x): assembly %g (%#08x), Go %g (%#08x)", c.name, x, math.Float32bits(x), got[i], math.Float32bits(got[i]), want, math.Float32bits(want))
			}
			*bad++
		}
	}
}

// TestVecMatchesScalarEveryFloat32 is TestVecMatchesScalar over every
// float32, each function and vector path a subtest, with
// GPUKIT_VMATH_EXHAUSTIVE=1 (minutes a function; skipped otherwise):
//
//	GPUKIT_VMATH_EXHAUSTIVE=1 go test -run 'EveryFloat32/avx512/exp$' ./gpukit/kernels
func TestVecMatchesScalarEveryFloat32(t *testing.T) {
	if os.Getenv("GPUKIT_VMATH_EXHAUSTIVE") == "" {
		t.Skip("GPUKIT_VMATH_EXHAUSTIVE=1 checks every float32")
	}
	if !useVecMath {
		t.Skip("no AVX2+FMA on this CPU: only the Go functions run")
	}
	const chunk = 1 << 16
	xs, got := make([]float32, chunk), make([]float32, chunk)
	forEachVecPath(t, func(t *testing.T) {
		for _, c := range vecCases() {
			t.Run(c.name, func(t *testing.T) {
				bad := 0
				for b := uint64(0); b < 1<<32; b += chunk {
					for i := range xs {
						xs[i] = math.Float32frombits(uint32(b) + uint32(i))
					}
					c.v.vec(&got[0], &xs[0], chunk)
					c.compareBits(t, xs, got, &bad)
				}
				if bad > 0 {
					t.Errorf("%s: %d float32 inputs differ", c.name, bad)
				}
			})
		}
	})
}

// TestVecEveryLength runs apply32 (the vector form on the largest
// multiple of eight, the Go function on the rest) on every length 0..40
// at every offset 0..3 from an aligned start, over special values and
// random ones, and checks each result against the Go reference: the
// split between vector body and tail must not show in the bits.
func TestVecEveryLength(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 8))
	pool := specials()
	for range 64 {
		pool = append(pool, float32(r.NormFloat64()*8), math.Float32frombits(r.Uint32()))
	}
	r.Shuffle(len(pool), func(i, j int) { pool[i], pool[j] = pool[j], pool[i] })
	forEachVecPath(t, func(t *testing.T) {
		for _, c := range vecCases() {
			for off := range 4 {
				for n := 0; n <= 40; n++ {
					xs := pool[off : off+n]
					ys := make([]float32, n+off)[off:]
					c.v.apply32(ys, xs)
					for i, x := range xs {
						want := c.v.f32(x)
						if math.Float32bits(ys[i]) != math.Float32bits(want) && !(ys[i] != ys[i] && want != want) {
							t.Fatalf("%s, n=%d offset %d: element %d (%g = %#08x): %g (%#08x), Go %g (%#08x)",
								c.name, n, off, i, x, math.Float32bits(x), ys[i], math.Float32bits(ys[i]), want, math.Float32bits(want))
						}
					}
				}
			}
		}
	})
}

// TestVecAccuracy measures the largest error in ulp against the float64
// reference over a dense sample of all float32 values (every 1021st bit
// pattern, about 4.2 million; GPUKIT_VMATH_EXHAUSTIVE=1 checks every
// float32) and asserts the documented bound.
func TestVecAccuracy(t *testing.T) {
	step := uint32(1021)
	if testing.Short() || racetest.Enabled {
		step = 16381
	}
	exhaustive := os.Getenv("GPUKIT_VMATH_EXHAUSTIVE") != ""
	if exhaustive {
		step = 1
	}
	for _, c := range vecCases() {
		t.Run(c.name, func(t *testing.T) {
			// Normal results are measured in ulp; subnormal ones in
			// units of the smallest subnormal, 2⁻¹⁴⁹ (PyTorch flushes
			// most of them to 0).
			worst, at := 0.0, float32(0)
			worstSub, atSub := 0.0, float32(0)
			const chunk = 1 << 16
			xs := make([]float32, 0, chunk)
			ys := make([]float32, chunk)
			check := func() {
				c.v.apply32(ys[:len(xs)], xs)
				for i, x := range xs {
					unit := 0.0
					if c.scale != nil {
						unit = c.scale(float64(x))
					}
					want := c.ref(float64(x))
					e := ulpErr(ys[i], want, unit)
					if math.Abs(want) < 0x1p-126 && unit == 0 {
						if e > worstSub {
							worstSub, atSub = e, x
						}
					} else if e > worst {
						worst, at = e, x
					}
				}
				xs = xs[:0]
			}
			for b := uint64(0); b < 1<<32; b += uint64(step) {
				x := math.Float32frombits(uint32(b))
				if x != x || x < c.lo || x > c.hi {
					continue
				}
				if xs = append(xs, x); len(xs) == chunk {
					check()
				}
			}
			for _, x := range specials() {
				if x != x || (x >= c.lo && x <= c.hi) {
					xs = append(xs, x)
				}
			}
			check()
			t.Logf("%s: max error %.3f ulp at %g (%#08x); subnormal results: %.1f·2⁻¹⁴⁹ at %g", c.name, worst, at, math.Float32bits(at), worstSub, atSub)
			bound := c.bound
			if exhaustive {
				bound = c.boundAll
			}
			if worst > bound {
				t.Errorf("%s: max error %.3f ulp at %g, bound %g", c.name, worst, at, bound)
			}
			if worstSub > 16 {
				t.Errorf("%s: subnormal results off by %.1f·2⁻¹⁴⁹ at %g, bound 16", c.name, worstSub, atSub)
			}
		})
	}
}

// TestGeluGradAccuracy checks that geluGrad32's polynomial, where it
// serves (phiNeg < x < phiPos), is no less accurate than the formula it
// replaced there, Φ + x·φ (geluGradPhi32, which still serves outside):
// over every 257th float32 of the interval, its largest error in units
// of the larger term (TestVecAccuracy's unit), its largest in ulp of
// the result for x ≥ 0, where nothing cancels, and its mean, each
// against float64.
func TestGeluGradAccuracy(t *testing.T) {
	step := uint32(257)
	if testing.Short() || racetest.Enabled {
		step = 4099
	}
	type errs struct{ worst, worstPos, mean float64 }
	measure := func(f func(float32) float32) (e errs) {
		n := 0
		for b := uint64(0); b < 1<<32; b += uint64(step) {
			x := math.Float32frombits(uint32(b))
			if !(x > phiNeg && x < phiPos) {
				continue
			}
			want := geluGrad64(float64(x))
			u := ulpErr(f(x), want, geluGradUnit(float64(x)))
			e.worst = max(e.worst, u)
			e.mean += u
			n++
			if x >= 0 {
				e.worstPos = max(e.worstPos, ulpErr(f(x), want, 0))
			}
		}
		e.mean /= float64(n)
		return e
	}
	poly, gauss := measure(geluGrad32), measure(geluGradPhi32)
	t.Logf("largest error %.3f (Φ + x·φ: %.3f), for x ≥ 0 %.3f ulp (%.3f), mean %.4f (%.4f)",
		poly.worst, gauss.worst, poly.worstPos, gauss.worstPos, poly.mean, gauss.mean)
	if poly.worst > gauss.worst || poly.worstPos > gauss.worstPos || poly.mean > gauss.mean {
		t.Errorf("geluGrad32's polynomial is less accurate than Φ + x·φ: %+v against %+v", poly, gauss)
	}
}

// TestVecSpecialValues pins the values PyTorch gives at the edges.
func TestVecSpecialValues(t *testing.T) {
	inf, nan := float32(math.Inf(1)), float32(math.NaN())
	negZero := math.Float32frombits(0x80000000)
	tests := []struct {
		name string
		v    *vecFunc
		x    float32
		want float32
		tol  float64 // absolute; 0: exact, or 1e-5 relative for finite non-zero want
	}{
		{"exp", &vecExp, inf, inf, 0},
		{"exp", &vecExp, -inf, 0, 0},
		{"exp", &vecExp, 88.72283, 3.4028e38, 0},
		{"exp", &vecExp, 88.7229, inf, 0},
		{"exp", &vecExp, -103.97, 1.4e-45, 0},
		{"exp", &vecExp, -104, 0, 0},
		{"exp", &vecExp, negZero, 1, 0},
		{"exp", &vecExp, math.Float32frombits(1), 1, 0},
		{"log", &vecLog, 0, -inf, 0},
		{"log", &vecLog, negZero, -inf, 0},
		{"log", &vecLog, -1, nan, 0},
		{"log", &vecLog, inf, inf, 0},
		{"log", &vecLog, math.Float32frombits(1), -103.27893, 0},
		{"sigmoid", &vecSigmoid, inf, 1, 0},
		{"sigmoid", &vecSigmoid, -inf, 0, 0},
		{"tanh", &vecTanh, inf, 1, 0},
		{"tanh", &vecTanh, -inf, -1, 0},
		{"tanh", &vecTanh, negZero, negZero, 0},
		{"erf", &vecErf, inf, 1, 0},
		{"erf", &vecErf, -inf, -1, 0},
		{"erf", &vecErf, negZero, negZero, 0},
		{"erf", &vecErf, nan, nan, 0},
		{"erf", &vecErf, 3.92, 1, 0},
		{"erf", &vecErf, -5, -1, 0},
		{"erf", &vecErf, math.Float32frombits(0x00000100), math.Float32frombits(0x00000121), 0}, // 2/√π·x, subnormal
		{"tanh", &vecTanh, nan, nan, 0},
		{"tanh", &vecTanh, 9.125, 1, 0},
		{"tanh", &vecTanh, -20, -1, 0},
		{"tanh", &vecTanh, math.Float32frombits(0x00000100), math.Float32frombits(0x00000100), 0},
		{"log", &vecLog, nan, nan, 0},
		{"log", &vecLog, 1, 0, 0},
		{"log", &vecLog, math.MaxFloat32, 88.72284, 0},
		{"sigmoid", &vecSigmoid, nan, nan, 0},
		{"sigmoid", &vecSigmoid, negZero, 0.5, 0},
		{"sigmoid", &vecSigmoid, -100, 3.7200760e-44, 0}, // subnormal, kept
		{"gelu", &vecGelu, inf, inf, 0},
		{"gelu", &vecGelu, -inf, nan, 0}, // -Inf·0, as PyTorch's 0.5·x·(1+erf(x/√2))
		{"gelu", &vecGelu, negZero, negZero, 0},
		{"gelu_tanh", &vecGeluTanh, inf, inf, 0},
		{"gelu_tanh", &vecGeluTanh, -inf, nan, 0},
		{"gelu_grad", &vecGeluGrad, -inf, nan, 0},
		{"gelu_tanh_grad", &vecGeluTanG, inf, 1, 0},
		{"gelu_tanh_grad", &vecGeluTanG, -inf, 0, 1e-20},
	}
	forEachVecPath(t, func(t *testing.T) {
		for _, tt := range tests {
			for _, path := range []string{"go", "asm"} {
				if path == "asm" && !useVecMath {
					continue
				}
				// 24 values: a sixteen-lane block and an eight-lane one.
				xs := make([]float32, 24)
				for i := range xs {
					xs[i] = tt.x
				}
				ys := make([]float32, len(xs))
				if path == "asm" {
					tt.v.vec(&ys[0], &xs[0], len(xs))
				} else {
					for i := range ys {
						ys[i] = tt.v.f32(tt.x)
					}
				}
				for _, got := range []float32{ys[0], ys[len(ys)-1]} {
					ok := math.Abs(float64(got-tt.want)) <= tt.tol || math.Float32bits(got) == math.Float32bits(tt.want) || (got != got && tt.want != tt.want) ||
						(tt.want != 0 && !math.IsInf(float64(tt.want), 0) && math.Abs(float64(got-tt.want)) <= 1e-5*math.Abs(float64(tt.want)))
					if !ok {
						t.Errorf("%s %s(%g) = %g, want %g", path, tt.name, tt.x, got, tt.want)
					}
				}
			}
		}
	})
}

func TestFMA32(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 100000 {
		a, b, c := float32(r.NormFloat64()), float32(r.NormFloat64()), float32(r.NormFloat64()*1e-3)
		// big.Float-free check: in float64 the product is exact, and a
		// correctly rounded float32 result is within half an ulp.
		exact := float64(a)*float64(b) + float64(c)
		got := fma32(a, b, c)
		if e := math.Abs(float64(got) - exact); e > ulp32(exact)/2*(1+1e-9) {
			t.Fatalf("fma32(%g, %g, %g) = %g, off by %g ulp", a, b, c, got, e/ulp32(exact))
		}
	}
}

func BenchmarkVec(b *testing.B) {
	xs := make([]float32, 1<<14)
	r := rand.New(rand.NewPCG(1, 1))
	for i := range xs {
		xs[i] = float32(r.NormFloat64() * 3)
	}
	// Inputs in each function's domain: log gets |x|.
	abs := make([]float32, len(xs))
	for i, x := range xs {
		abs[i] = float32(math.Abs(float64(x)))
	}
	ys := make([]float32, len(xs))
	for _, c := range vecCases() {
		in := xs
		if c.lo >= 0 {
			in = abs
		}
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(8 * len(xs)))
			reportCPU(b, func() {
				for b.Loop() {
					c.v.apply32(ys, in)
				}
			})
		})
	}
}
