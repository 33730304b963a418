package kernels

import (
	"fmt"
	"math"
)

// UnaryOp selects the function of an elementwise unary kernel.
type UnaryOp uint8

const (
	Identity   UnaryOp = iota // x (a strided copy)
	Neg                       // -x
	Abs                       // |x|
	Square                    // x²
	Sqrt                      // √x
	Reciprocal                // 1/x
	Exp                       // eˣ
	Log                       // ln x
	Sin                       // sin x
	Cos                       // cos x
	Relu                      // max(x, 0)
	Sigmoid                   // 1/(1+e⁻ˣ)
	Tanh                      // tanh x
	Gelu                      // x·Φ(x) with the exact erf form (PyTorch's default)
	numUnaryOps
)

var unaryNames = [...]string{"Identity", "Neg", "Abs", "Square", "Sqrt", "Reciprocal", "Exp", "Log", "Sin", "Cos", "Relu", "Sigmoid", "Tanh", "Gelu"}

func (op UnaryOp) String() string {
	if op < numUnaryOps {
		return unaryNames[op]
	}
	return fmt.Sprintf("UnaryOp(%d)", uint8(op))
}

// ApplyUnary computes op(x) for one value. Transcendental functions are
// evaluated in float64 (Go's math package), which is correctly rounded enough
// that float32 results match a float64 reference to within one ulp.
func ApplyUnary[T Float](op UnaryOp, x T) T {
	switch op {
	case Identity:
		return x
	case Neg:
		return -x
	case Abs:
		return T(math.Abs(float64(x)))
	case Square:
		return x * x
	case Sqrt:
		return T(math.Sqrt(float64(x)))
	case Reciprocal:
		return 1 / x
	case Exp:
		return T(math.Exp(float64(x)))
	case Log:
		return T(math.Log(float64(x)))
	case Sin:
		return T(math.Sin(float64(x)))
	case Cos:
		return T(math.Cos(float64(x)))
	case Relu:
		return max(x, 0) // NaN stays NaN, as in PyTorch
	case Sigmoid:
		return T(1 / (1 + math.Exp(-float64(x))))
	case Tanh:
		return T(math.Tanh(float64(x)))
	case Gelu:
		v := float64(x)
		return T(0.5 * v * (1 + math.Erf(v/math.Sqrt2)))
	}
	panic("kernels: unknown " + op.String())
}

// Unary computes dst[i] = op(src[i]) over contiguous slices of equal length.
// dst may be src itself.
func Unary[T Float](op UnaryOp, dst, src []T) {
	if len(src) != len(dst) {
		panic(fmt.Sprintf("kernels: Unary %v: lengths dst=%d src=%d differ", op, len(dst), len(src)))
	}
	// Transcendental ops cost ~10–50 ns per element, so they are worth
	// splitting at a much smaller size than the memory-bound ones.
	minPer := parallelThreshold / 2
	if op >= Exp {
		minPer = 4096
	}
	parallelFor(len(dst), workers(len(dst), minPer), 16, func(lo, hi int) {
		unaryContig(op, dst[lo:hi], src[lo:hi])
	})
}

// Map computes dst[i] = f(src[i]) for a caller-supplied function, for ops
// that have no UnaryOp. f must be safe to call from several goroutines.
func Map[T Float](f func(T) T, dst, src []T) {
	if len(src) != len(dst) {
		panic(fmt.Sprintf("kernels: Map: lengths dst=%d src=%d differ", len(dst), len(src)))
	}
	parallelFor(len(dst), workers(len(dst), 8192), 16, func(lo, hi int) {
		d, s := dst[lo:hi], src[lo:hi]
		for i := range d {
			d[i] = f(s[i])
		}
	})
}

// UnaryStrided computes dst = op(src) elementwise over an N-d shape with
// arbitrary non-negative strides (src may broadcast with stride 0).
func UnaryStrided[T Float](op UnaryOp, shape []int, dst, src Strided[T]) {
	checkView("dst", shape, dst)
	checkView("src", shape, src)
	total := numel(shape)
	if total == 0 {
		return
	}
	l := coalesce(shape, dst.Strides, src.Strides)
	off := [3]int{dst.Offset, src.Offset}
	minPer := parallelThreshold / 2
	if op >= Exp {
		minPer = 4096
	}
	parallelFor(total, workers(total, minPer), 16, func(lo, hi int) {
		l.rows(off, lo, hi, func(n int, o, s [3]int) {
			if s[0] == 1 && s[1] == 1 {
				unaryContig(op, dst.Data[o[0]:o[0]+n], src.Data[o[1]:o[1]+n])
				return
			}
			d, x := dst.Data, src.Data
			for i := 0; i < n; i++ {
				d[o[0]+i*s[0]] = ApplyUnary(op, x[o[1]+i*s[1]])
			}
		})
	})
}

// unaryContig keeps the cheap ops in branch-free loops of their own; the
// transcendental ones are dominated by the math call anyway.
func unaryContig[T Float](op UnaryOp, d, s []T) {
	s = s[:len(d)]
	switch op {
	case Identity:
		copy(d, s)
	case Neg:
		for i := range d {
			d[i] = -s[i]
		}
	case Square:
		for i := range d {
			d[i] = s[i] * s[i]
		}
	case Relu:
		for i := range d {
			d[i] = max(s[i], 0)
		}
	case Reciprocal:
		for i := range d {
			d[i] = 1 / s[i]
		}
	default:
		for i := range d {
			d[i] = ApplyUnary(op, s[i])
		}
	}
}
