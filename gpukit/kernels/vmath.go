package kernels

import "math"

// float32 elementary functions.
//
// Each function below is the reference for its AVX2+FMA version in
// vmath_*_amd64.s and its NEON version in vmath_*_arm64.s: the same
// operations in the same order, with every fused multiply-add done by
// fma32, which rounds once as VFMADD and FMLA do, and every other product
// rounded before it is added (an explicit conversion where the compiler
// could fuse it). They therefore agree bit for bit, and a lesson prints
// the same figures on an amd64 server, an arm64 laptop and a machine
// without either (TestVecMatchesScalar). The assembly runs four or eight
// lanes at a time and computes every branch of a piecewise formula, then
// blends; the Go version branches.
//
// Accuracy (maximum error in ulp against math's float64 result, over
// every float32 of the domain; TestVecAccuracy asserts it and
// gpukit/kernels/README.md has the figures for GELU and PyTorch's): exp
// 0.988, log 0.568, sigmoid 1.48, tanh 0.762, erf 0.719. On the sample
// TestVecAccuracy checks by default each is at or below what PyTorch's
// CPU kernels (SLEEF's 1-ulp functions, and its own erf) give on the same
// inputs.
// Special values follow PyTorch: exp overflows to +Inf above
// 88.72283 and underflows through the subnormals to 0 below -103.97;
// ±Inf and NaN go where the float64 functions send them.

const (
	log2e32 = float32(math.Log2E)
	ln2Hi32 = float32(0.693145751953125) // 15 significant bits: n·ln2Hi is exact
	ln2Lo32 = float32(math.Ln2 - 0.693145751953125)
	// expMax and expMin bound the reduction (|n| ≤ 150, so the scale
	// 2ⁿ splits into two normal powers of two); beyond them exp is +Inf
	// or 0 anyway.
	expMax = 104
	expMin = -104
)

// fma32 returns a·b+c rounded once to float32. The product of two
// float32 values is exact in float64, so only the sum rounds there; a
// float64 sum s that is not a float32 midpoint (bits below float32's
// precision other than exactly one half) rounds to the same float32 as
// the exact a·b+c, because every float32 midpoint is a float64 and
// rounding to float64 cannot cross one. That is the fast path (an add
// and two bit tests instead of TwoSum's six operations); midpoints,
// float32 subnormals and zero go to fma32Slow. The explicit
// float64 conversions keep the compiler from fusing the product into
// the sum (it does on arm64, and on amd64 with GOAMD64=v3).
func fma32(a, b, c float32) float32 {
	s := float64(float64(a)*float64(b)) + float64(c)
	bits := math.Float64bits(s)
	// Bits 0-28 of a float64 significand are those float32 drops; the
	// exponent field 0x381 is 2⁻¹²⁶, float32's smallest normal.
	if bits&(1<<29-1) != 1<<28 && bits&(0x7ff<<52) >= 0x381<<52 {
		return float32(s)
	}
	return fma32Slow(a, b, c)
}

// fma32Slow is fma32 for every input: the sum is rounded to odd (the
// inexact result keeps a 1 in its last bit), which makes the final
// rounding to float32 a correct single rounding (Boldo and Melquiond,
// "Emulation of FMA and correctly rounded sums", IEEE TC 2008).
func fma32Slow(a, b, c float32) float32 {
	p := float64(float64(a) * float64(b)) // exact; the conversion forbids fusing
	cc := float64(c)
	s := p + cc
	if math.IsInf(s, 0) || s != s {
		return float32(s)
	}
	// TwoSum: e is the exact error s - (p + c).
	bv := s - p
	e := (p - (s - bv)) + (cc - bv)
	if e != 0 {
		bits := math.Float64bits(s)
		if bits&1 == 0 {
			if (e > 0) == (s > 0) {
				bits++ // away from zero, toward the exact sum
			} else {
				bits--
			}
			s = math.Float64frombits(bits)
		}
	}
	return float32(s)
}

// exp2i returns 2ᵏ for k in [-126, 127].
func exp2i(k int32) float32 { return math.Float32frombits(uint32(k+127) << 23) }

// Coefficients of eʳ = 1 + r + r²·P(r), |r| ≤ ln2/2, P a least-squares
// fit at Chebyshev nodes (near minimax; with float32 coefficients it is
// within 5e-10 of (eʳ-1-r)/r²·r²).
const (
	expC2 = float32(0.5)
	expC3 = float32(0.1666666716337204)
	expC4 = float32(0.04166646674275398)
	expC5 = float32(0.0083332983776927)
	expC6 = float32(0.0013933643931522965)
	expC7 = float32(0.00019899275503121316)
)

// exp32 is eˣ: x = n·ln2 + r, eʳ by its polynomial, times 2ⁿ in two
// steps so that subnormal results round once.
func exp32(x float32) float32 {
	switch {
	case x != x:
		return x
	case x > expMax:
		return float32(math.Inf(1))
	case x < expMin:
		return 0
	}
	n := float32(math.RoundToEven(float64(x * log2e32)))
	r := fma32(-n, ln2Hi32, x)
	r = fma32(-n, ln2Lo32, r)
	p := fma32(expC7, r, expC6)
	p = fma32(p, r, expC5)
	p = fma32(p, r, expC4)
	p = fma32(p, r, expC3)
	p = fma32(p, r, expC2)
	r2 := r * r
	y := fma32(r2, p, r) + 1
	k := int32(n)
	k1 := k >> 1
	return y * exp2i(k1) * exp2i(k-k1)
}

// sigmoidParts returns σ(v) = 1/(1+e⁻ᵛ) and 1-σ(v) = σ(-v), both from
// e = e^(-|v|), which cannot overflow: σ(v) is 1/(1+e) for v ≥ 0 and
// e/(1+e) below, so it keeps its relative accuracy down through the
// subnormals (PyTorch's 1/(1+e⁻ˣ) flushes to 0 below -88.7).
func sigmoidParts(v float32) (s, sm float32) {
	e := exp32(-float32(math.Abs(float64(v))))
	d := 1 + e
	q := 1 / d
	p := e / d
	if v >= 0 {
		return q, p
	}
	return p, q
}

// sigmoid32 is σ(x) = n/(1+e), e = e^(-|x|), n = 1 for x ≥ 0 and e below
// (as in sigmoidParts), by one division and a correction step: 1 + e =
// d + dl exactly (Fast2Sum), q = n·(1/d), the residual n - q·d is exact
// (FMA), and q + (n - q·d - q·dl)/d is n/(1+e) to far below an ulp, so
// what is left is exp's own error.
func sigmoid32(x float32) float32 {
	e := exp32(-float32(math.Abs(float64(x))))
	d := 1 + e
	dl := (1 - d) + e
	inv := 1 / d
	n := e
	if x >= 0 {
		n = 1
	}
	q := n * inv
	c := fma32(-q, dl, fma32(-q, d, n))
	return fma32(c, inv, q)
}

// log(1+f) = f - (f²/2 - s·(f²/2 + R)), s = f/(2+f), R = 2·atanh(s)/s - 2
// = 2/3·s² + 2/5·s⁴ + ..., by the polynomial logC1..logC4 in s² of
// vmath_tables.go (|s| ≤ 0.1716).

// log32 is ln x: x = 2ᵏ·m with m in [√½, √2), f = m - 1 (exact), and
// log m = log(1+f) = f - f²/2 + s·(f²/2 + R) by the series above. The
// sum is compensated: f²/2 is split exactly into hi + lo, f - hi and
// k·ln2Hi + (f - hi) are exact two-term sums (Fast2Sum: the first term
// is the larger), so the only rounding of the large terms is the last
// one, and the error stays near half an ulp.
func log32(x float32) float32 {
	switch {
	case x != x || x < 0:
		return float32(math.NaN())
	case x == 0:
		return float32(math.Inf(-1))
	case math.IsInf(float64(x), 1):
		return x
	}
	k := int32(0)
	if x < 0x1p-126 { // subnormal: scale into the normal range
		x *= 0x1p23
		k = -23
	}
	ix := math.Float32bits(x) + (0x3f800000 - 0x3f3504f3)
	k += int32(ix>>23) - 127
	f := math.Float32frombits(ix&0x007fffff+0x3f3504f3) - 1
	s := f / (2 + f)
	z := s * s
	R := fma32(logC4, z, logC3)
	R = fma32(R, z, logC2)
	R = fma32(R, z, logC1)
	R = R * z
	hf := 0.5 * f
	hi := float32(hf * f)
	lo := fma32(hf, f, -hi) // f²/2 = hi + lo exactly
	u := f - hi
	eu := (f - u) - hi // f - hi = u + eu exactly
	dk := float32(k)
	S := fma32(dk, ln2Hi32, u)       // k·ln2Hi is exact
	es := fma32(dk, ln2Hi32, -S) + u // k·ln2Hi + u = S + es exactly
	w := fma32(dk, ln2Lo32, es+(eu-lo))
	// s is f/(2+f) rounded twice. Its residual f - s·(2+f) is
	// r = (f - 2s) - s·f, f - 2s exact (Sterbenz), so s is short by
	// r/(2+f). The sum's derivative in s is f²/2 + 2s²/(1-s²), about f²,
	// so it is short by about r·f²/(2+f) = r·s·f.
	r := fma32(-s, f, f-(s+s))
	w = fma32(r, float32(s*f), w)
	t := fma32(s, hi, fma32(s, R, w))
	return S + t
}

// tanh and erf are odd polynomials near 0, x + x·z·T(z) and x + x·T(z)
// (z = x²), below 0.75, and above it piecewise polynomials in a = |x|:
// eight intervals, split where the bits of a float32 make the interval a
// shift of its bits (vmath_tables.go; go generate fits them again), on
// each f(a) = c0 + t·q(t), t = a - c exactly, with f(c) within 2⁻¹⁴ ulp
// of the float32 c0. The last interval reaches tanhMax or erfMax, above
// which the function rounds to ±1; a is clamped there.
//
//go:generate go run ./internal/vmathfit
const (
	tanhSplit = float32(0.75)
	tanhMax   = float32(9.125)
	tanhBase  = 0x3f400000 >> 22 // 0.75: the bits of a >> 22, less this, index [0.75, 1), [1, 1.5), ..., [8, tanhMax]
	erfSplit  = tanhSplit
	erfMax    = float32(4)
	erfBase   = 0x3f400000 >> 21 // [0.75, 0.875), [0.875, 1), [1, 1.25), ..., [2, 2.5), [2.5, erfMax] (clamped to 7)
)

// poly32 is c[0] + z·(c[1] + z·(...)) by Horner's rule with FMA.
func poly32(c []float32, z float32) float32 {
	p := c[len(c)-1]
	for j := len(c) - 2; j >= 0; j-- {
		p = fma32(p, z, c[j])
	}
	return p
}

// piece32 is c0 + t·q(t), t = a - c, on interval i of a table.
func piece32(a float32, i uint32, c, c0 *[8]float32, q [][8]float32) float32 {
	t := a - c[i]
	p := q[len(q)-1][i]
	for j := len(q) - 2; j >= 0; j-- {
		p = fma32(p, t, q[j][i])
	}
	return fma32(t, p, c0[i])
}

func tanh32(x float32) float32 {
	if x != x {
		return x
	}
	a := float32(math.Abs(float64(x)))
	var y float32
	if a < tanhSplit {
		z := x * x
		y = fma32(x, float32(z*poly32(tanhT[:], z)), x) // +0 for -0: the sign is put back below
	} else {
		a = min(a, tanhMax)
		y = piece32(a, math.Float32bits(a)>>22-tanhBase, &tanhC, &tanhC0, tanhQ[:])
	}
	return float32(math.Copysign(float64(y), float64(x)))
}

func erf32(x float32) float32 {
	if x != x {
		return x
	}
	a := float32(math.Abs(float64(x)))
	if a < erfSplit {
		return fma32(x, poly32(erfT[:], x*x), x)
	}
	a = min(a, erfMax)
	y := piece32(a, min(math.Float32bits(a)>>21-erfBase, 7), &erfC, &erfC0, erfQ[:])
	return float32(math.Copysign(float64(y), float64(x)))
}

// GELU's Φ (phiGauss, below) has polynomials of its own: erf(u) =
// u + u·P(u²) (P fitted to erf(u)/u - 1 on [0, 1.5]) and erfc(a) =
// e^(-a²)·R(t), t = 1/(1 + a/4), R fitted to the scaled complementary
// error function e^(a²)·erfc(a) on [0.875, 10].
const (
	erfP0 = float32(0.12837916612625122)
	erfP1 = float32(-0.37612634897232056)
	erfP2 = float32(0.1128372848033905)
	erfP3 = float32(-0.026863213628530502)
	erfP4 = float32(0.005217034835368395)
	erfP5 = float32(-0.000845571921672672)
	erfP6 = float32(0.0001131538738263771)
	erfP7 = float32(-1.1344443009875249e-05)
	erfP8 = float32(6.223122568371764e-07)

	erfcC0 = float32(0.553113579750061) // the centre of t's interval
	erfcR0 = float32(0.1671992689371109)
	erfcR1 = float32(0.6233237385749817)
	erfcR2 = float32(1.117052435874939)
	erfcR3 = float32(1.7479113340377808)
	erfcR4 = float32(2.3736681938171387)
	erfcR5 = float32(2.764427423477173)
	erfcR6 = float32(2.702916145324707)
	erfcR7 = float32(2.12579083442688)
	erfcR8 = float32(1.2044614553451538)
	erfcR9 = float32(0.3506726920604706)
)

// The coefficients of P and R in poly32's order, lowest first.
var (
	erfPs  = [...]float32{erfP0, erfP1, erfP2, erfP3, erfP4, erfP5, erfP6, erfP7, erfP8}
	erfcRs = [...]float32{erfcR0, erfcR1, erfcR2, erfcR3, erfcR4, erfcR5, erfcR6, erfcR7, erfcR8, erfcR9}
)

// erfP is P(z).
func erfP(z float32) float32 { return poly32(erfPs[:], z) }

// erfcxR is R at t = 1/(1 + c·a) (phiGauss passes |x| and c = 1/(4√2),
// for a = |x|/√2 ≥ 0.875).
func erfcxR(a, c float32) float32 {
	t := 1/fma32(a, c, 1) - erfcC0
	return poly32(erfcRs[:], t)
}

// GELU's Φ(x) = ½·erfc(-x/√2), from x directly: x²/2 is (h + l)/2 with
// the exact split of x², so e^(-x²/2) is as accurate far into the tail
// as exp itself, and for x ≤ -1.2374 (a = |x|/√2 ≥ 0.875) Φ is
// ½·e^(-x²/2)·R with no cancellation; gelu(x) = x·Φ(x) keeps its
// relative accuracy down to the subnormals. On the positive side, where
// ½ + ½·erf does not cancel, the polynomial serves up to x = 2.1213
// (a = 1.5), so that the assembly can skip the exponential for the eight
// lanes at once when all are in (-1.2374, 2.1213) (a third of the
// vectors of normal inputs). phiGauss also returns e^(-x²/2) for the
// derivative x·φ(x).
const (
	sqrtHalf32   = float32(math.Sqrt2 / 2)
	phiNeg       = float32(-0.875 * math.Sqrt2)
	phiPos       = float32(1.5 * math.Sqrt2)
	phiT         = float32(0.25 / math.Sqrt2)
	invSqrt2Pi32 = float32(0.3989422804014327) // 1/√(2π)
	phiHuge      = float32(16)                 // e^(-128) = 0 in float32
)

func phiGauss(x float32) (phi, gauss float32) {
	a := float32(math.Abs(float64(x)))
	h := x * x
	l := fma32(x, x, -h)
	hh, ll := 0.5*h, 0.5*l
	e := exp32(-hh)
	e = fma32(e, -ll, e)
	if a >= phiHuge {
		e = 0
	}
	if x > phiNeg && x < phiPos {
		u := x * sqrtHalf32
		erf := fma32(u, erfP(hh), u)
		return fma32(0.5, erf, 0.5), e
	}
	// Rounded before 1 - q: unconverted, arm64 would fuse the product
	// into the subtraction (the assembly rounds it, as amd64's Go does).
	q := float32((0.5 * e) * erfcxR(a, phiT))
	if x > 0 {
		return 1 - q, e
	}
	return q, e
}

// gelu32 is x·Φ(x).
func gelu32(x float32) float32 {
	phi, _ := phiGauss(x)
	return x * phi
}

// geluGrad32 is d gelu/dx = Φ(x) + x·φ(x), φ(x) = e^(-x²/2)/√(2π).
// Where phiGauss uses its polynomial of Φ (phiNeg < x < phiPos, seven
// normal values in eight) it is ½ + x·G(t), t = x²/2 - geluGradC, G a
// polynomial of its own (vmath_tables.go; internal/vmathfit says why it
// exists), added as (½ + x·G₀) + x·(G(t) - G₀), the latter t times a
// polynomial: no exponential, and more accurate than Φ + x·φ there
// (TestGeluGradAccuracy). The sum cancels for x near -0.75, where GELU'
// is 0, and adding ½ + x·G₀ first keeps the rounding of the larger
// part, G₀ ≈ 0.51, out of it.
func geluGrad32(x float32) float32 {
	if x > phiNeg && x < phiPos {
		t := 0.5*(x*x) - geluGradC
		return fma32(x, t*poly32(geluGradGs[1:], t), fma32(x, geluGradGs[0], 0.5))
	}
	return geluGradPhi32(x)
}

// geluGradPhi32 is Φ(x) + x·φ(x) through phiGauss: geluGrad32 outside its
// polynomial's interval, and what TestGeluGradAccuracy measures the
// polynomial against inside it.
func geluGradPhi32(x float32) float32 {
	phi, e := phiGauss(x)
	return fma32(x, e*invSqrt2Pi32, phi)
}

// GELU's tanh form ½·x·(1 + tanh u), u = √(2/π)·(x + 0.044715·x³), is
// computed as x·σ(2u) (1 + tanh u = 2σ(2u)), which has no cancellation
// for negative x; gelu_tanh(-Inf) is -Inf·0 = NaN, as in PyTorch.
const (
	geluKappa = float32(0.044715)
	geluBeta2 = float32(2 * 0.7978845608028654) // 2·√(2/π)
	geluXMax  = float32(1e4)
)

func geluTanh32(x float32) float32 {
	s, _ := sigmoidParts(geluBeta2 * fma32(geluKappa, x*x*x, x))
	return x * s
}

// geluTanhGrad32 is σ + x·σ·(1-σ)·2u', 2u' = 2√(2/π)·(1 + 3·0.044715·x²).
// x is first clamped to ±10⁴, where σ(2u) is exactly 0 or 1, so the
// derivative is 1 above and 0 below, also at ±Inf (where PyTorch's
// formula gives NaN).
func geluTanhGrad32(x float32) float32 {
	x = clamp32(x, geluXMax)
	s, sm := sigmoidParts(geluBeta2 * fma32(geluKappa, x*x*x, x))
	du := geluBeta2 * fma32(3*geluKappa, x*x, 1)
	return fma32((x*du)*s, sm, s)
}

// clamp32 limits x to [-c, c]; NaN stays NaN (as VMAXPS and VMINPS with
// x as their second source do).
func clamp32(x, c float32) float32 {
	if x < -c {
		x = -c
	}
	if x > c {
		x = c
	}
	return x
}

// vecFunc is one elementwise function: its vector form (n a multiple of
// 8; expVec and the others, one decision per call: the assembly where
// the build has it, vmath_other.go's Go loops elsewhere), its Go
// reference for float32, and the float64 function float64 tensors use.
type vecFunc struct {
	vec func(dst, src *float32, n int)
	f32 func(float32) float32
	f64 func(float64) float64
}

// apply32 computes dst[i] = f(src[i]) over equal-length slices: the
// vector form for the largest multiple of eight where useVecMath allows
// it, the Go function for the rest (and everywhere when it does not).
func (v *vecFunc) apply32(dst, src []float32) {
	src = src[:len(dst)]
	i := 0
	if useVecMath && len(dst) >= 8 {
		i = len(dst) &^ 7
		v.vec(&dst[0], &src[0], i)
	}
	for ; i < len(dst); i++ {
		dst[i] = v.f32(src[i])
	}
}

func (v *vecFunc) apply64(dst, src []float64) {
	src = src[:len(dst)]
	for i := range dst {
		dst[i] = v.f64(src[i])
	}
}

var (
	vecExp      = vecFunc{expVec, exp32, math.Exp}
	vecLog      = vecFunc{logVec, log32, math.Log}
	vecSigmoid  = vecFunc{sigmoidVec, sigmoid32, sigmoid64}
	vecTanh     = vecFunc{tanhVec, tanh32, math.Tanh}
	vecErf      = vecFunc{erfVec, erf32, math.Erf}
	vecGelu     = vecFunc{geluVec, gelu32, gelu64}
	vecGeluGrad = vecFunc{geluGradVec, geluGrad32, geluGrad64}
	vecGeluTanh = vecFunc{geluTanhVec, geluTanh32, geluTanh64}
	vecGeluTanG = vecFunc{geluTanhGradVec, geluTanhGrad32, geluTanhGrad64}
)

// The float64 forms, for float64 tensors and as the accuracy references.

func gelu64(x float64) float64 { return 0.5 * x * math.Erfc(-x/math.Sqrt2) }

func geluGrad64(x float64) float64 {
	return 0.5*math.Erfc(-x/math.Sqrt2) + x*math.Exp(-0.5*x*x)/math.Sqrt(2*math.Pi)
}

func geluTanhInner64(x float64) float64 {
	return 2 * math.Sqrt(2/math.Pi) * (x + 0.044715*x*x*x)
}

// sigmoid64 is σ(x) without overflow.
func sigmoid64(x float64) float64 {
	if x >= 0 {
		return 1 / (1 + math.Exp(-x))
	}
	e := math.Exp(x)
	return e / (1 + e)
}

func geluTanh64(x float64) float64 { return x * sigmoid64(geluTanhInner64(x)) }

func geluTanhGrad64(x float64) float64 {
	x = max(min(x, 1e4), -1e4)
	v := geluTanhInner64(x)
	s, sm := sigmoid64(v), sigmoid64(-v)
	du := 2 * math.Sqrt(2/math.Pi) * (1 + 3*0.044715*x*x)
	return s + x*du*s*sm
}
