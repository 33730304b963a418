//go:build !(amd64 || arm64) || purego

package kernels

import (
	"math"
	"unsafe"
)

// The vector forms of vmath.go's functions where the build has no
// assembly for them (another architecture, or the purego tag): each is
// the Go loop its assembly equals on amd64 and arm64, under the same
// name, over n elements (n a multiple of 8, as there). Each calls exp32
// and the others directly, not through vecFunc's f32, which saves an
// indirect call per element.

// useVecMath is true: the vector forms here are plain Go, so the callers
// may always hand them the bulk of a slice.
var useVecMath = true

// expVec is
//
//	for i := range n { dst[i] = exp32(src[i]) }
func expVec(dst, src *float32, n int) {
	d, s := unsafe.Slice(dst, n), unsafe.Slice(src, n)
	for i, x := range s {
		slow := false
		y := exp32Try(x, &slow)
		if slow {
			y = exp32(x)
		}
		d[i] = y
	}
}

// logVec is
//
//	for i := range n { dst[i] = log32(src[i]) }
func logVec(dst, src *float32, n int) {
	d, s := unsafe.Slice(dst, n), unsafe.Slice(src, n)
	for i, x := range s {
		d[i] = log32(x)
	}
}

// sigmoidVec is
//
//	for i := range n { dst[i] = sigmoid32(src[i]) }
func sigmoidVec(dst, src *float32, n int) {
	d, s := unsafe.Slice(dst, n), unsafe.Slice(src, n)
	for i, x := range s {
		slow := false
		y := sigmoid32Try(x, &slow)
		if slow {
			y = sigmoid32(x)
		}
		d[i] = y
	}
}

// tanhVec is
//
//	for i := range n { dst[i] = tanh32(src[i]) }
func tanhVec(dst, src *float32, n int) {
	d, s := unsafe.Slice(dst, n), unsafe.Slice(src, n)
	for i, x := range s {
		d[i] = tanh32(x)
	}
}

// erfVec is
//
//	for i := range n { dst[i] = erf32(src[i]) }
func erfVec(dst, src *float32, n int) {
	d, s := unsafe.Slice(dst, n), unsafe.Slice(src, n)
	for i, x := range s {
		d[i] = erf32(x)
	}
}

// geluVec is
//
//	for i := range n { dst[i] = gelu32(src[i]) }
func geluVec(dst, src *float32, n int) {
	d, s := unsafe.Slice(dst, n), unsafe.Slice(src, n)
	for i, x := range s {
		d[i] = gelu32(x)
	}
}

// geluGradVec is
//
//	for i := range n { dst[i] = geluGrad32(src[i]) }
func geluGradVec(dst, src *float32, n int) {
	d, s := unsafe.Slice(dst, n), unsafe.Slice(src, n)
	for i, x := range s {
		d[i] = geluGrad32(x)
	}
}

// geluTanhVec is
//
//	for i := range n { dst[i] = geluTanh32(src[i]) }
func geluTanhVec(dst, src *float32, n int) {
	d, s := unsafe.Slice(dst, n), unsafe.Slice(src, n)
	for i, x := range s {
		slow := false
		y := geluTanh32Try(x, &slow)
		if slow {
			y = geluTanh32(x)
		}
		d[i] = y
	}
}

// geluTanhGradVec is
//
//	for i := range n { dst[i] = geluTanhGrad32(src[i]) }
func geluTanhGradVec(dst, src *float32, n int) {
	d, s := unsafe.Slice(dst, n), unsafe.Slice(src, n)
	for i, x := range s {
		slow := false
		y := geluTanhGrad32Try(x, &slow)
		if slow {
			y = geluTanhGrad32(x)
		}
		d[i] = y
	}
}

// The Go loops above call exp32 and the others, whose every fma32 is a
// call (fma32 cannot inline: it calls fma32Slow). For the functions built
// on exp, the loops below use copies that take the fast path of fma32
// inline (fmaTry) and flag the rare input where one of its sums needs
// fma32Slow; that input is recomputed by the reference function. Where
// nothing is flagged, each fmaTry returned fma32's bits, so the copies
// give the reference's bits (TestVecMatchesScalar checks them in this
// build as it checks the assembly in the others).

// fmaTry is fma32(a, b, c) unless it sets *slow: the float64 sum is a
// float32 midpoint or below 2⁻¹²⁶, where fma32 goes to fma32Slow.
func fmaTry(a, b, c float32, slow *bool) float32 {
	s := float64(float64(a)*float64(b)) + float64(c)
	if bits := math.Float64bits(s); bits&(1<<29-1) == 1<<28 || bits&(0x7ff<<52) < 0x381<<52 {
		*slow = true
	}
	return float32(s)
}

// exp32Try is exp32 with fmaTry; NaN and the saturated ranges are flagged
// for exp32.
func exp32Try(x float32, slow *bool) float32 {
	if !(x >= expMin && x <= expMax) {
		*slow = true
		return 0
	}
	n := float32(math.RoundToEven(float64(x * log2e32)))
	r := fmaTry(-n, ln2Hi32, x, slow)
	r = fmaTry(-n, ln2Lo32, r, slow)
	p := fmaTry(expC7, r, expC6, slow)
	p = fmaTry(p, r, expC5, slow)
	p = fmaTry(p, r, expC4, slow)
	p = fmaTry(p, r, expC3, slow)
	p = fmaTry(p, r, expC2, slow)
	r2 := r * r
	y := fmaTry(r2, p, r, slow) + 1
	k := int32(n)
	k1 := k >> 1
	return y * exp2i(k1) * exp2i(k-k1)
}

// sigmoidPartsTry is sigmoidParts with exp32Try.
func sigmoidPartsTry(v float32, slow *bool) (s, sm float32) {
	e := exp32Try(-float32(math.Abs(float64(v))), slow)
	d := 1 + e
	q := 1 / d
	p := e / d
	if v >= 0 {
		return q, p
	}
	return p, q
}

// sigmoid32Try is sigmoid32 with exp32Try and fmaTry.
func sigmoid32Try(x float32, slow *bool) float32 {
	e := exp32Try(-float32(math.Abs(float64(x))), slow)
	d := 1 + e
	dl := (1 - d) + e
	inv := 1 / d
	n := e
	if x >= 0 {
		n = 1
	}
	q := n * inv
	c := fmaTry(-q, dl, fmaTry(-q, d, n, slow), slow)
	return fmaTry(c, inv, q, slow)
}

// geluTanh32Try is geluTanh32 with sigmoidPartsTry and fmaTry.
func geluTanh32Try(x float32, slow *bool) float32 {
	s, _ := sigmoidPartsTry(geluBeta2*fmaTry(geluKappa, x*x*x, x, slow), slow)
	return x * s
}

// geluTanhGrad32Try is geluTanhGrad32 with sigmoidPartsTry and fmaTry.
func geluTanhGrad32Try(x float32, slow *bool) float32 {
	x = clamp32(x, geluXMax)
	s, sm := sigmoidPartsTry(geluBeta2*fmaTry(geluKappa, x*x*x, x, slow), slow)
	du := geluBeta2 * fmaTry(3*geluKappa, x*x, 1, slow)
	return fmaTry((x*du)*s, sm, s, slow)
}
