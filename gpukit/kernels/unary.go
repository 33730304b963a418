package kernels

import (
	"fmt"
	"math"

	"github.com/gpumem/course/gpukit/ops"
)

// unaryImpl is one op's kernels: the contiguous loops for float32 and
// float64 and the scalar functions. The op is resolved to these once per
// call (or per contiguous run), never per element.
type unaryImpl struct {
	f32 func(d, s []float32)
	f64 func(d, s []float64)
	s32 func(float32) float32
	s64 func(float64) float64
}

// loop returns the contiguous loop of a scalar function.
func loop[T Float](f func(T) T) func(d, s []T) {
	return func(d, s []T) {
		s = s[:len(d)]
		for i := range d {
			d[i] = f(s[i])
		}
	}
}

// fromVec builds an op from a vectorised function (vmath.go).
func fromVec(v *vecFunc) unaryImpl {
	return unaryImpl{f32: v.apply32, f64: v.apply64, s32: v.f32, s64: v.f64}
}

// fromScalar builds an op whose float32 and float64 forms are one
// generic function, with its own inlined loop.
func fromScalar(f32 func(float32) float32, f64 func(float64) float64) unaryImpl {
	return unaryImpl{f32: loop(f32), f64: loop(f64), s32: f32, s64: f64}
}

// unaryImpls is indexed by op; init fills every op of ops.Unaries.
var unaryImpls []unaryImpl

func init() {
	unaryImpls = []unaryImpl{
		ops.Identity: {f32: func(d, s []float32) { copy(d, s) }, f64: func(d, s []float64) { copy(d, s) },
			s32: func(x float32) float32 { return x }, s64: func(x float64) float64 { return x }},
		ops.Neg: {f32: func(d, s []float32) { negLoop(d, s) }, f64: func(d, s []float64) { negLoop(d, s) },
			s32: func(x float32) float32 { return -x }, s64: func(x float64) float64 { return -x }},
		ops.Abs: fromScalar(func(x float32) float32 { return math.Float32frombits(math.Float32bits(x) &^ (1 << 31)) }, math.Abs),
		ops.Square: {f32: func(d, s []float32) { squareLoop(d, s) }, f64: func(d, s []float64) { squareLoop(d, s) },
			s32: func(x float32) float32 { return x * x }, s64: func(x float64) float64 { return x * x }},
		ops.Sqrt: fromScalar(func(x float32) float32 { return float32(math.Sqrt(float64(x))) }, math.Sqrt),
		ops.Reciprocal: {f32: func(d, s []float32) { reciprocalLoop(d, s) }, f64: func(d, s []float64) { reciprocalLoop(d, s) },
			s32: func(x float32) float32 { return 1 / x }, s64: func(x float64) float64 { return 1 / x }},
		ops.Exp: fromVec(&vecExp),
		ops.Log: fromVec(&vecLog),
		ops.Sin: fromScalar(func(x float32) float32 { return float32(math.Sin(float64(x))) }, math.Sin),
		ops.Cos: fromScalar(func(x float32) float32 { return float32(math.Cos(float64(x))) }, math.Cos),
		ops.Relu: {f32: func(d, s []float32) { reluLoop(d, s) }, f64: func(d, s []float64) { reluLoop(d, s) },
			s32: func(x float32) float32 { return max(x, 0) }, s64: func(x float64) float64 { return max(x, 0) }},
		ops.Sigmoid: fromVec(&vecSigmoid),
		ops.Tanh:    fromVec(&vecTanh),
		ops.Gelu:    fromVec(&vecGelu),
		// The activations' derivatives, for their backward passes.
		ops.GeluDeriv:      fromVec(&vecGeluGrad),
		ops.GeluTanhApprox: fromVec(&vecGeluTanh),
		ops.GeluTanhDeriv:  fromVec(&vecGeluTanG),
		ops.SigmoidDeriv:   fromScalar(func(y float32) float32 { return float32(sigmoidGrad(float64(y))) }, sigmoidGrad),
		ops.TanhDeriv:      fromScalar(func(y float32) float32 { return float32(tanhGrad(float64(y))) }, tanhGrad),
		ops.Sign:           fromScalar(sign[float32], sign[float64]),
	}
}

func sigmoidGrad(y float64) float64 { return y * (1 - y) }

func tanhGrad(y float64) float64 { return 1 - y*y }

func sign[T Float](x T) T {
	switch {
	case x > 0:
		return 1
	case x < 0:
		return -1
	}
	return 0
}

func negLoop[T Float](d, s []T) {
	s = s[:len(d)]
	for i := range d {
		d[i] = -s[i]
	}
}

func squareLoop[T Float](d, s []T) {
	s = s[:len(d)]
	for i := range d {
		d[i] = s[i] * s[i]
	}
}

func reciprocalLoop[T Float](d, s []T) {
	s = s[:len(d)]
	for i := range d {
		d[i] = 1 / s[i]
	}
}

// reluLoop keeps NaN (max(NaN, 0) is NaN), as PyTorch does.
func reluLoop[T Float](d, s []T) {
	s = s[:len(d)]
	for i := range d {
		d[i] = max(s[i], 0)
	}
}

func unaryImplOf(op ops.Unary) *unaryImpl {
	if !op.Valid() {
		panic("kernels: unknown " + op.String())
	}
	return &unaryImpls[op]
}

// applyScalar is op(x) for one value through its scalar function.
func applyScalar[T Float](im *unaryImpl, x T) T {
	if isFloat32[T]() {
		return T(im.s32(float32(x)))
	}
	return T(im.s64(float64(x)))
}

// ApplyUnary computes op(x) for one value, as the kernels below do (for
// float32, the vectorised functions' Go reference, bit for bit; for
// float64, the math package). It is the scalar entry point; the slice
// kernels resolve the op once per call instead.
func ApplyUnary[T Float](op ops.Unary, x T) T {
	return applyScalar(unaryImplOf(op), x)
}

// isFloat32 reports whether T's underlying type is float32.
func isFloat32[T Float]() bool {
	var z T
	z = 1 << 30
	z++
	return z == 1<<30 // 2³⁰+1 rounds to 2³⁰ in float32 only
}

// Unary computes dst[i] = op(src[i]) over contiguous slices of equal length.
// dst may be src itself.
func Unary[T Float](op ops.Unary, dst, src []T) {
	if len(src) != len(dst) {
		panic(fmt.Sprintf("kernels: Unary %v: lengths dst=%d src=%d differ", op, len(dst), len(src)))
	}
	im := unaryImplOf(op)
	parallelFor(len(dst), workers(len(dst), unaryMinPer(op)), 16, func(lo, hi int) {
		unaryContig(im, dst[lo:hi], src[lo:hi])
	})
}

// unaryMinPer is how many elements are worth one goroutine: transcendental
// ops cost ~1–3 ns per element, so they split at a smaller size than the
// memory-bound ones.
func unaryMinPer(op ops.Unary) int {
	if op.Transcendental() {
		return 4096
	}
	return parallelThreshold / 2
}

// stripe is how many elements of a strided run are gathered into a
// contiguous buffer at a time, so that strided and broadcast inputs run the
// same vector loops as contiguous ones.
const stripe = 256

// UnaryStrided computes dst = op(src) elementwise over an N-d shape with
// arbitrary non-negative strides (src may broadcast with stride 0).
func UnaryStrided[T Float](op ops.Unary, shape []int, dst, src Strided[T]) {
	checkView("dst", shape, dst)
	checkView("src", shape, src)
	total := numel(shape)
	if total == 0 {
		return
	}
	im := unaryImplOf(op)
	l := coalesce(shape, dst.Strides, src.Strides)
	off := [3]int{dst.Offset, src.Offset}
	parallelFor(total, workers(total, unaryMinPer(op)), 16, func(lo, hi int) {
		var buf []T // for strided runs only: the contiguous ones allocate nothing
		d, x := dst.Data, src.Data
		l.rows(off, lo, hi, func(n int, o, s [3]int) {
			switch {
			case s[0] == 1 && s[1] == 1:
				unaryContig(im, d[o[0]:o[0]+n], x[o[1]:o[1]+n])
			case s[1] == 0: // a broadcast value: compute it once
				v := applyScalar(im, x[o[1]])
				for i := 0; i < n; i++ {
					d[o[0]+i*s[0]] = v
				}
			case s[0] == 1: // gather into dst, then in place
				dd := d[o[0] : o[0]+n]
				for i := range dd {
					dd[i] = x[o[1]+i*s[1]]
				}
				unaryContig(im, dd, dd)
			default:
				if buf == nil {
					buf = make([]T, stripe)
				}
				for p := 0; p < n; p += stripe {
					b := buf[:min(stripe, n-p)]
					for i := range b {
						b[i] = x[o[1]+(p+i)*s[1]]
					}
					unaryContig(im, b, b)
					for i, v := range b {
						d[o[0]+(p+i)*s[0]] = v
					}
				}
			}
		})
	})
}

// unaryContig runs one op's contiguous loop for T (a type switch per run,
// not per element).
func unaryContig[T Float](im *unaryImpl, d, s []T) {
	switch dd := any(d).(type) {
	case []float32:
		im.f32(dd, any(s).([]float32))
	case []float64:
		im.f64(dd, any(s).([]float64))
	default: // a named float type
		s = s[:len(d)]
		if isFloat32[T]() {
			for i := range d {
				d[i] = T(im.s32(float32(s[i])))
			}
			return
		}
		for i := range d {
			d[i] = T(im.s64(float64(s[i])))
		}
	}
}
