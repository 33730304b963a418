package tensor

import (
	"slices"

	"github.com/gpumem/course/gpukit/ops"
)

// Pointwise ops. Each op is its forward (a kernel call into a new tensor)
// followed by record(...) with its backward, which computes input
// gradients with other ops (grad mode is off during backward).

// operand splits the argument of a binary op into a tensor or a scalar
// (any Go integer or float).
func operand(op string, other any) (*Tensor, float64) {
	switch v := other.(type) {
	case *Tensor:
		v.live(op)
		return v, 0
	case float64:
		return nil, v
	case float32:
		return nil, float64(v)
	case int:
		return nil, float64(v)
	case int64:
		return nil, float64(v)
	case int32:
		return nil, float64(v)
	}
	panicf("%s: operand must be a *Tensor or a number, got %T", op, other)
	return nil, 0
}

// checkPair panics unless a and b are on the same device with the same
// dtype.
func checkPair(op string, a, b *Tensor) {
	if !sameDevice(a, b) {
		panicf("%s: expected all tensors to be on the same device, but found %s and %s", op, a.DeviceName(), b.DeviceName())
	}
	if a.dtype != b.dtype {
		panicf("%s: dtype mismatch: %s and %s (convert one with ToDtype)", op, a.dtype, b.dtype)
	}
}

// layoutAs is an internal, unreferenced view of t broadcast to shape, for
// kernels only (never returned to users, never released). Where shape is
// t's own (most operands of most ops), it is t: the same storage, offset,
// strides and dtype, with no handle made.
func (t *Tensor) layoutAs(shape []int) *Tensor {
	if slices.Equal(t.shape, shape) {
		return t
	}
	return &Tensor{st: t.st, offset: t.offset, shape: shape, strides: broadcastStrides(t.shape, t.strides, shape), dtype: t.dtype}
}

// binaryOp computes op(a, b) with broadcasting into a new tensor.
func binaryOp(name string, kop ops.Binary, a, b *Tensor) *Tensor {
	a.live(name)
	b.live(name)
	checkPair(name, a, b)
	shape := broadcastShapes(name, a.shape, b.shape)
	out := empty(a.outMem(), shape, a.dtype)
	binaryKernel(kop, out, a.layoutAs(shape), b.layoutAs(shape), 0, false)
	out.charge(name, int64(out.Numel()), a, b)
	return out
}

// scalarOp computes op(a, s) (or op(s, a) when first) into a new tensor.
func scalarOp(name string, kop ops.Binary, a *Tensor, s float64, first bool) *Tensor {
	a.live(name)
	out := empty(a.outMem(), a.shape, a.dtype)
	binaryKernel(kop, out, a, nil, s, first)
	out.charge(name, int64(out.Numel()), a)
	return out
}

// unary computes op(a) into a new tensor, charged as name.
func unary(name string, kop ops.Unary, a *Tensor) *Tensor {
	a.live(name)
	out := empty(a.outMem(), a.shape, a.dtype)
	unaryKernel(kop, out, a)
	out.charge(name, int64(out.Numel()), a)
	return out
}

// derivative is the backward of an elementwise op: g·d with d = kop(x),
// the derivative's kernel charged as name at flops per element, then the
// product charged by Mul. Every elementwise backward goes through it, so
// each charges its kernels in one place, as unary does for the forward.
//
// Its memory is PyTorch's. Where PyTorch's formula is one fused kernel
// (sigmoid_backward, tanh_backward, gelu_backward in
// tools/autograd/derivatives.yaml: one output, no temporary), bop is that
// kernel (ops.GeluBackward, whose Derivative is kop), run for float32 and
// float64: one pass over memory, one block. Other dtypes (the 16-bit
// floats compute in float32) and a gradient whose dtype is not x's compute
// d into the gradient's own block, rounded to its dtype, then multiply by
// g in place. Where the formula is two ops (abs: grad * self.sgn(); bop is
// ops.Mul), d is a temporary beside the product, as there. Either way the
// values are the same bits, g·d with d rounded to the dtype, and the
// simulated card is charged the same two kernels.
func derivative(name string, bop ops.Binary, kop ops.Unary, flops int64, g, x *Tensor) *Tensor {
	if bop == ops.Mul {
		d := empty(g.outMem(), x.shape, g.dtype)
		defer d.Release()
		unaryKernel(kop, d, x)
		d.charge(name, flops*int64(d.Numel()), x)
		return g.Mul(d)
	}
	g.live(name)
	out := empty(g.outMem(), x.shape, g.dtype)
	gb := g.layoutAs(out.shape)
	if (out.dtype == Float32 || out.dtype == Float64) && x.dtype == out.dtype {
		binaryKernel(bop, out, gb, x, 0, false)
	} else {
		unaryKernel(kop, out, x)
		binaryKernel(ops.Mul, out, gb, out, 0, false)
	}
	out.charge(name, flops*int64(out.Numel()), x)
	out.charge("Mul", int64(out.Numel()), g, out)
	return out
}

// Add returns t + other, where other is a *Tensor (broadcast with t) or a
// number.
func (t *Tensor) Add(other any) *Tensor {
	if y, ok := autocastOperand(castPromote, t, other, (*Tensor).Add); ok {
		return y
	}
	b, s := operand("Add", other)
	if b == nil {
		return record(scalarOp("Add", ops.Add, t, s, false), "AddBackward0", []*Tensor{t}, nil,
			func(g *Tensor, _ []*Tensor, _ []bool) []*Tensor { return []*Tensor{g} })
	}
	as, bs := t.shape, b.shape
	return record(binaryOp("Add", ops.Add, t, b), "AddBackward0", []*Tensor{t, b}, nil,
		func(g *Tensor, _ []*Tensor, needs []bool) []*Tensor {
			return []*Tensor{when(needs[0], func() *Tensor { return sumTo(g, as) }), when(needs[1], func() *Tensor { return sumTo(g, bs) })}
		})
}

// Sub returns t - other. Bool tensors refuse it, as in PyTorch.
func (t *Tensor) Sub(other any) *Tensor {
	t.live("Sub")
	checkBoolSub("Sub", t)
	if y, ok := autocastOperand(castPromote, t, other, (*Tensor).Sub); ok {
		return y
	}
	b, s := operand("Sub", other)
	if b == nil {
		return record(scalarOp("Sub", ops.Sub, t, s, false), "SubBackward0", []*Tensor{t}, nil,
			func(g *Tensor, _ []*Tensor, _ []bool) []*Tensor { return []*Tensor{g} })
	}
	as, bs := t.shape, b.shape
	return record(binaryOp("Sub", ops.Sub, t, b), "SubBackward0", []*Tensor{t, b}, nil,
		func(g *Tensor, _ []*Tensor, needs []bool) []*Tensor {
			return []*Tensor{
				when(needs[0], func() *Tensor { return sumTo(g, as) }),
				when(needs[1], func() *Tensor { n := g.Neg(); defer n.Release(); return sumTo(n, bs) }),
			}
		})
}

// Mul returns t * other (elementwise).
func (t *Tensor) Mul(other any) *Tensor {
	if y, ok := autocastOperand(castPromote, t, other, (*Tensor).Mul); ok {
		return y
	}
	b, s := operand("Mul", other)
	if b == nil {
		return record(scalarOp("Mul", ops.Mul, t, s, false), "MulBackward0", []*Tensor{t}, nil,
			func(g *Tensor, _ []*Tensor, _ []bool) []*Tensor { return []*Tensor{g.Mul(s)} })
	}
	as, bs := t.shape, b.shape
	// b is needed for t's gradient and t for b's: save each only then.
	return record(binaryOp("Mul", ops.Mul, t, b), "MulBackward0", []*Tensor{t, b}, []*Tensor{savedIf(t, b), savedIf(b, t)},
		func(g *Tensor, saved []*Tensor, needs []bool) []*Tensor {
			a, b := saved[0], saved[1]
			return []*Tensor{
				when(needs[0], func() *Tensor { return reduced(g.Mul(b), as) }),
				when(needs[1], func() *Tensor { return reduced(g.Mul(a), bs) }),
			}
		})
}

// Div returns t / other.
func (t *Tensor) Div(other any) *Tensor {
	if y, ok := autocastOperand(castPromote, t, other, (*Tensor).Div); ok {
		return y
	}
	b, s := operand("Div", other)
	if b == nil {
		return record(scalarOp("Div", ops.Div, t, s, false), "DivBackward0", []*Tensor{t}, nil,
			func(g *Tensor, _ []*Tensor, _ []bool) []*Tensor { return []*Tensor{g.Div(s)} })
	}
	as, bs := t.shape, b.shape
	// t's gradient g/b needs b; b's gradient -g·t/b² needs both.
	return record(binaryOp("Div", ops.Div, t, b), "DivBackward0", []*Tensor{t, b}, []*Tensor{savedIf(t, b), b},
		func(g *Tensor, saved []*Tensor, needs []bool) []*Tensor {
			a, b := saved[0], saved[1]
			return []*Tensor{
				when(needs[0], func() *Tensor { return reduced(g.Div(b), as) }),
				when(needs[1], func() *Tensor {
					// d(a/b)/db = -a/b²
					ga := g.Mul(a)
					q := ga.Div(b)
					ga.Release()
					r := q.Div(b)
					q.Release()
					n := r.Neg()
					r.Release()
					return reduced(n, bs)
				}),
			}
		})
}

// Neg returns -t.
func (t *Tensor) Neg() *Tensor {
	return record(unary("Neg", ops.Neg, t), "NegBackward0", []*Tensor{t}, nil,
		func(g *Tensor, _ []*Tensor, _ []bool) []*Tensor { return []*Tensor{g.Neg()} })
}

// Pow returns t raised to the power p (elementwise).
func (t *Tensor) Pow(p float64) *Tensor {
	if y, ok := autocast1(castFloat32, t, func(x *Tensor) *Tensor { return x.Pow(p) }); ok {
		return y
	}
	return record(scalarOp("Pow", ops.Pow, t, p, false), "PowBackward0", []*Tensor{t}, []*Tensor{t},
		func(g *Tensor, saved []*Tensor, _ []bool) []*Tensor {
			// p · x^(p-1) · g
			d := saved[0].Pow(p - 1)
			d2 := d.Mul(p)
			d.Release()
			r := d2.Mul(g)
			d2.Release()
			return []*Tensor{r}
		})
}

// Exp returns e^t. It saves its result for backward.
func (t *Tensor) Exp() *Tensor {
	if y, ok := autocast1(castFloat32, t, (*Tensor).Exp); ok {
		return y
	}
	out := unary("Exp", ops.Exp, t)
	return record(out, "ExpBackward0", []*Tensor{t}, []*Tensor{out},
		func(g *Tensor, saved []*Tensor, _ []bool) []*Tensor { return []*Tensor{g.Mul(saved[0])} })
}

// Log returns the natural logarithm of t.
func (t *Tensor) Log() *Tensor {
	if y, ok := autocast1(castFloat32, t, (*Tensor).Log); ok {
		return y
	}
	return record(unary("Log", ops.Log, t), "LogBackward0", []*Tensor{t}, []*Tensor{t},
		func(g *Tensor, saved []*Tensor, _ []bool) []*Tensor { return []*Tensor{g.Div(saved[0])} })
}

// Relu returns max(t, 0). It saves its result for backward.
func (t *Tensor) Relu() *Tensor {
	out := unary("Relu", ops.Relu, t)
	return record(out, "ReluBackward0", []*Tensor{t}, []*Tensor{out},
		func(g *Tensor, saved []*Tensor, _ []bool) []*Tensor {
			y := saved[0]
			if g.dtype != y.dtype { // threshold_backward takes one dtype: composed of kernels
				mask := scalarOp("Greater", ops.Greater, y, 0, false)
				defer mask.Release()
				return []*Tensor{g.Mul(mask)}
			}
			// threshold_backward: one pass, no mask tensor
			out := empty(g.outMem(), y.shape, g.dtype)
			binaryKernel(ops.ThresholdBackward, out, g, y, 0, false)
			out.charge("ReluBackward", int64(out.Numel()), g, y)
			return []*Tensor{out}
		})
}

// Sqrt returns √t. It saves its result for backward.
func (t *Tensor) Sqrt() *Tensor {
	out := unary("Sqrt", ops.Sqrt, t)
	return record(out, "SqrtBackward0", []*Tensor{t}, []*Tensor{out},
		func(g *Tensor, saved []*Tensor, _ []bool) []*Tensor {
			// g / (2√x)
			h := g.Div(saved[0])
			defer h.Release()
			return []*Tensor{h.Mul(0.5)}
		})
}

// Abs returns |t|. Its gradient is sign(t)·g (0 at 0, as in PyTorch).
func (t *Tensor) Abs() *Tensor {
	return record(unary("Abs", ops.Abs, t), "AbsBackward0", []*Tensor{t}, []*Tensor{t},
		func(g *Tensor, saved []*Tensor, _ []bool) []*Tensor {
			return []*Tensor{derivative("AbsBackward", ops.Mul, ops.Sign, 1, g, saved[0])}
		})
}

// Sigmoid returns 1/(1+e⁻ᵗ). It saves its result for backward.
func (t *Tensor) Sigmoid() *Tensor {
	out := unary("Sigmoid", ops.Sigmoid, t)
	return record(out, "SigmoidBackward0", []*Tensor{t}, []*Tensor{out},
		func(g *Tensor, saved []*Tensor, _ []bool) []*Tensor {
			// g·y·(1-y)
			return []*Tensor{derivative("SigmoidBackward", ops.SigmoidBackward, ops.SigmoidDeriv, 1, g, saved[0])}
		})
}

// Tanh returns tanh t. It saves its result for backward.
func (t *Tensor) Tanh() *Tensor {
	out := unary("Tanh", ops.Tanh, t)
	return record(out, "TanhBackward0", []*Tensor{t}, []*Tensor{out},
		func(g *Tensor, saved []*Tensor, _ []bool) []*Tensor {
			// g·(1-y²)
			return []*Tensor{derivative("TanhBackward", ops.TanhBackward, ops.TanhDeriv, 1, g, saved[0])}
		})
}

// Gelu returns t·Φ(t) with the exact erf form of the normal CDF Φ
// (PyTorch's default approximate="none"). It saves its input.
func (t *Tensor) Gelu() *Tensor {
	return record(unary("Gelu", ops.Gelu, t), "GeluBackward0", []*Tensor{t}, []*Tensor{t},
		func(g *Tensor, saved []*Tensor, _ []bool) []*Tensor {
			// g·(Φ(x) + x·φ(x))
			return []*Tensor{derivative("GeluBackward", ops.GeluBackward, ops.GeluDeriv, 20, g, saved[0])}
		})
}

// GeluTanh returns GELU with PyTorch's tanh approximation
// (torch.nn.functional.gelu(approximate="tanh")):
//
//	0.5·t·(1 + tanh(√(2/π)·(t + 0.044715·t³)))
//
// Its node is GeluBackward0, as for Gelu, and saves its input; the
// derivative is that of aten/src/ATen/native/cpu/Activation.cpp
// (GeluBackwardKernelImpl, the tanh branch). Both are the UnaryOps
// ops.GeluTanhApprox and ops.GeluTanhDeriv, computed as x·σ(2u)
// (the same function, without 1 + tanh's cancellation for negative t).
func (t *Tensor) GeluTanh() *Tensor {
	const op = "GeluTanh"
	t.live(op)
	if !t.dtype.IsFloat() {
		panicf("%s: expected a floating-point input, got %s (convert with ToDtype)", op, t.dtype)
	}
	out := empty(t.outMem(), t.shape, t.dtype)
	unaryKernel(ops.GeluTanhApprox, out, t)
	out.charge(op, int64(out.Numel()), t)
	return record(out, "GeluBackward0", []*Tensor{t}, []*Tensor{t},
		func(g *Tensor, saved []*Tensor, _ []bool) []*Tensor {
			return []*Tensor{derivative("GeluBackward", ops.GeluTanhBackward, ops.GeluTanhDeriv, 20, g, saved[0])}
		})
}

// Clamp limits t to [lo, hi] (torch.clamp; pass math.Inf(-1) or
// math.Inf(1) for a one-sided clamp; if lo > hi every element becomes hi).
// The gradient passes where lo ≤ t ≤ hi and is 0 elsewhere. It saves its
// input.
func (t *Tensor) Clamp(lo, hi float64) *Tensor {
	t.live("Clamp")
	out := empty(t.outMem(), t.shape, t.dtype)
	binaryKernel(ops.Max, out, t, nil, lo, false)
	binaryKernel(ops.Min, out, out, nil, hi, false)
	out.charge("Clamp", 2*int64(out.Numel()), t)
	return record(out, "ClampBackward1", []*Tensor{t}, []*Tensor{t},
		func(g *Tensor, saved []*Tensor, _ []bool) []*Tensor {
			return []*Tensor{clampGrad(g, saved[0], lo, hi)}
		})
}

// clampGrad is g·m, m = 1 where lo ≤ x ≤ hi and 0 elsewhere (NaN: 0),
// PyTorch's clamp_backward (where((self >= min).logical_and_(self <= max),
// grad, 0), torch/csrc/autograd/FunctionsManual.cpp): the bounds are
// Python numbers, which the comparisons round to x's dtype
// (dtypes.Round), so a float32 x of 0.7 is inside [0.7, 1.1].
// m is a temporary of g's dtype. For one dtype m is built by the
// comparisons into it: g·[x ≥ lo] is the charged product, and the
// in-place ·[x ≤ hi] after it gives g·m's bits (a product by 1 is exact,
// and a second 0 keeps the sign of the first). For two dtypes m is
// InRange's Bool mask converted by Copy, through a Bool temporary.
func clampGrad(g, x *Tensor, lo, hi float64) *Tensor {
	m := empty(g.outMem(), x.shape, g.dtype)
	defer m.Release()
	if g.dtype != x.dtype {
		b := empty(g.outMem(), x.shape, Bool)
		inRangeKernel(b, x, lo, hi)
		copyKernel(m, b)
		b.Release()
		return g.Mul(m)
	}
	binaryKernel(ops.GreaterEqual, m, x, nil, lo, false)
	r := g.Mul(m)
	binaryKernel(ops.LessEqual, m, x, nil, hi, false)
	binaryKernel(ops.Mul, r, r, m, 0, false)
	return r
}

// Maximum returns the elementwise maximum of t and other (broadcast;
// NaN if either is NaN). Where they are equal, the gradient is split
// evenly between them, as in PyTorch. It saves both inputs.
func (t *Tensor) Maximum(other *Tensor) *Tensor {
	if y, ok := autocast2(castPromote, t, other, (*Tensor).Maximum); ok {
		return y
	}
	return minMax("Maximum", "MaximumBackward0", ops.Max, ops.Greater, t, other)
}

// Minimum returns the elementwise minimum of t and other (see Maximum).
func (t *Tensor) Minimum(other *Tensor) *Tensor {
	if y, ok := autocast2(castPromote, t, other, (*Tensor).Minimum); ok {
		return y
	}
	return minMax("Minimum", "MinimumBackward0", ops.Min, ops.Less, t, other)
}

func minMax(name, bwName string, kop, wins ops.Binary, a, b *Tensor) *Tensor {
	as, bs := a.shape, b.shape
	return record(binaryOp(name, kop, a, b), bwName, []*Tensor{a, b}, []*Tensor{a, b},
		func(g *Tensor, saved []*Tensor, needs []bool) []*Tensor {
			// wa = 1 where a wins, ½ on ties, 0 where b wins; wb = 1 - wa.
			w := binaryOp(name, wins, saved[0], saved[1])
			tie := binaryOp(name, ops.Equal, saved[0], saved[1])
			binaryKernel(ops.Mul, tie, tie, nil, 0.5, false)
			binaryKernel(ops.Add, w, w, tie, 0, false)
			tie.Release()
			defer w.Release()
			return []*Tensor{
				when(needs[0], func() *Tensor { return reduced(g.Mul(w), as) }),
				when(needs[1], func() *Tensor {
					wb := w.Neg()
					binaryKernel(ops.Add, wb, wb, nil, 1, false)
					defer wb.Release()
					return reduced(g.Mul(wb), bs)
				}),
			}
		})
}

// when returns f() if cond, else nil: backward functions use it to skip
// the gradients of inputs that do not need one.
func when(cond bool, f func() *Tensor) *Tensor {
	if !cond {
		return nil
	}
	return f()
}

// reduced is sumTo that consumes (releases) its argument.
func reduced(g *Tensor, shape []int) *Tensor {
	if slices.Equal(g.shape, shape) {
		return g
	}
	r := sumTo(g, shape)
	g.Release()
	return r
}

// ---- in-place ----------------------------------------------------------

// checkInPlace enforces PyTorch's rules for modifying t in place: those
// of checkWritable, then no internal overlap (an expanded t is refused;
// see Note [Memory overlap of writes]).
func checkInPlace(op string, t *Tensor) {
	checkWritable(op, t)
	checkNoInternalOverlap(op, t)
}

// checkWritable is checkInPlace without the overlap check, for the ops
// PyTorch lets write into an expanded tensor (fill_, and t[idx] = v).
func checkWritable(op string, t *Tensor) {
	t.live(op)
	if t.inference && !inferenceModeOn() {
		panicf("%s: in-place update to an inference tensor (shape %s) outside InferenceMode is not allowed; Clone it to get a normal tensor first", op, fmtShape(t.shape))
	}
	if !IsGradEnabled() {
		return
	}
	if t.requiresGrad && t.gradFn == nil {
		panicf("%s: a leaf tensor that requires grad (shape %s) is being used in an in-place operation; do it inside NoGrad (as an optimizer does) or on a Clone", op, fmtShape(t.shape))
	}
	if t.base != nil && t.requiresGrad {
		if t.base.requiresGrad && t.base.gradFn == nil {
			panicf("%s: a view of a leaf tensor that requires grad is being used in an in-place operation", op)
		}
		panicf("%s: in-place operation on a view of a tensor that requires grad is not supported by gpukit (PyTorch rebases the view's history); Clone the view first", op)
	}
}

// bump increments t's version counter after an in-place change.
func (t *Tensor) bump() {
	if !t.inference {
		t.st.version.v.Add(1)
	}
}

// inplaceOperand returns other as a tensor laid out as t's shape (or the
// scalar), checking that it does not partially overlap t and broadcasts
// to t.
func inplaceOperand(op string, t *Tensor, other any) (*Tensor, *Tensor, float64) {
	b, s := operand(op, other)
	if b == nil {
		return nil, nil, s
	}
	checkPair(op, t, b)
	checkNoPartialOverlap(op, t, b, "other") // b before broadcasting, as TensorIterator
	if !slices.Equal(broadcastShapes(op, t.shape, b.shape), t.shape) {
		panicf("%s: output with shape %s doesn't match the broadcast shape %s", op, fmtShape(t.shape), fmtShape(broadcastShapes(op, t.shape, b.shape)))
	}
	return b, b.layoutAs(t.shape), 0
}

// scalarTypeName is PyTorch's name of a dtype in type-promotion messages
// (c10::ScalarType: Float, Double, Half, BFloat16, Long, Int, Bool).
func scalarTypeName(d Dtype) string {
	switch d {
	case Float32:
		return "Float"
	case Float64:
		return "Double"
	case Float16:
		return "Half"
	case BFloat16:
		return "BFloat16"
	case Int64:
		return "Long"
	case Int32:
		return "Int"
	case Bool:
		return "Bool"
	}
	return d.String()
}

// checkResultType enforces PyTorch's rule for ops that write into an
// existing tensor (in place, or out=): the result type of the arithmetic
// must be castable to the destination's dtype, so a Bool tensor cannot
// take an integer or float result and an integer tensor cannot take a
// float one. A Go integer scalar promotes a Bool tensor to Long (int64),
// a float scalar promotes Bool and integer tensors to Float, as Python
// numbers do in PyTorch; true division of integers or Bools is Float.
// Tensor operands already have dst's dtype (checkPair).
func checkResultType(op string, dst *Tensor, other any, trueDiv bool) {
	if dst.dtype.IsFloat() {
		return
	}
	result := dst.dtype
	switch other.(type) {
	case float64, float32:
		result = Float32
	case int, int64, int32:
		if dst.dtype == Bool {
			result = Int64
		}
	}
	if trueDiv {
		result = Float32
	}
	if result != dst.dtype {
		panicf("%s: result type %s can't be cast to the desired output type %s (convert the tensor with ToDtype first)", op, scalarTypeName(result), scalarTypeName(dst.dtype))
	}
}

// checkBoolSub refuses subtraction on Bool tensors, as PyTorch does.
func checkBoolSub(op string, t *Tensor) {
	if t.dtype == Bool {
		panicf("%s: subtraction, the `-` operator, with a bool tensor is not supported; use logical_xor (Ne) instead, or convert with ToDtype", op)
	}
}

// inplaceArgs checks t and other for name, the in-place form of op, and
// returns other as inplaceOperand does: a tensor b, laid out as t's shape
// in bl, or the number s.
func inplaceArgs(name string, op ops.Binary, t *Tensor, other any) (b, bl *Tensor, s float64) {
	checkInPlace(name, t)
	if op == ops.Sub {
		checkBoolSub(name, t)
	}
	b, bl, s = inplaceOperand(name, t, other)
	checkResultType(name, t, other, op == ops.Div)
	return b, bl, s
}

// inplaceApply writes op(t, other) into t, other as inplaceArgs gave it.
func inplaceApply(name string, op ops.Binary, t, b, bl *Tensor, s float64) {
	binaryKernel(op, t, t, bl, s, false)
	if b == nil {
		t.charge(name, int64(t.Numel()), t)
	} else {
		t.charge(name, int64(t.Numel()), t, b)
	}
	t.bump()
}

// AddInPlace adds other (a *Tensor broadcastable to t, or a number) to t
// in place and returns t (torch's add_). Allowed on non-leaf tensors
// (y := x.Pow(2); y.AddInPlace(1) is legal); refused on a leaf that
// requires grad unless in NoGrad.
func (t *Tensor) AddInPlace(other any) *Tensor {
	b, bl, s := inplaceArgs("AddInPlace", ops.Add, t, other)
	inplaceApply("AddInPlace", ops.Add, t, b, bl, s)
	if b == nil {
		return record(t, "AddBackward0", []*Tensor{t}, nil, func(g *Tensor, _ []*Tensor, _ []bool) []*Tensor { return []*Tensor{g} })
	}
	bs := b.shape
	return record(t, "AddBackward0", []*Tensor{t, b}, nil, func(g *Tensor, _ []*Tensor, needs []bool) []*Tensor {
		return []*Tensor{when(needs[0], g.alias), when(needs[1], func() *Tensor { return sumTo(g, bs) })}
	})
}

// MulInPlace multiplies t by other in place and returns t (torch's mul_).
// When other requires grad, t's value before the change is saved (a copy).
func (t *Tensor) MulInPlace(other any) *Tensor {
	b, bl, s := inplaceArgs("MulInPlace", ops.Mul, t, other)
	var orig *Tensor
	if b != nil && needsGrad(b) {
		NoGrad(func() { orig = t.Clone() })
		defer orig.Release()
	}
	inplaceApply("MulInPlace", ops.Mul, t, b, bl, s)
	if b == nil {
		return record(t, "MulBackward0", []*Tensor{t}, nil, func(g *Tensor, _ []*Tensor, _ []bool) []*Tensor { return []*Tensor{g.Mul(s)} })
	}
	bs := b.shape
	save := []*Tensor{savedIf(b, t), orig} // b for t's gradient, t's old value for b's
	return record(t, "MulBackward0", []*Tensor{t, b}, save, func(g *Tensor, saved []*Tensor, needs []bool) []*Tensor {
		return []*Tensor{
			when(needs[0], func() *Tensor { return g.Mul(saved[0]) }),
			when(needs[1], func() *Tensor { return reduced(g.Mul(saved[1]), bs) }),
		}
	})
}

// SubInPlace subtracts other (a *Tensor broadcastable to t, or a number)
// from t in place and returns t (torch's sub_).
func (t *Tensor) SubInPlace(other any) *Tensor {
	b, bl, s := inplaceArgs("SubInPlace", ops.Sub, t, other)
	inplaceApply("SubInPlace", ops.Sub, t, b, bl, s)
	if b == nil {
		return record(t, "SubBackward0", []*Tensor{t}, nil, func(g *Tensor, _ []*Tensor, _ []bool) []*Tensor { return []*Tensor{g} })
	}
	bs := b.shape
	return record(t, "SubBackward0", []*Tensor{t, b}, nil, func(g *Tensor, _ []*Tensor, needs []bool) []*Tensor {
		return []*Tensor{
			when(needs[0], g.alias),
			when(needs[1], func() *Tensor { n := g.Neg(); defer n.Release(); return sumTo(n, bs) }),
		}
	})
}

// DivInPlace divides t by other in place and returns t (torch's div_).
// When other requires grad, the result (t itself) is saved: d(a/b)/db =
// -(a/b)/b.
func (t *Tensor) DivInPlace(other any) *Tensor {
	b, bl, s := inplaceArgs("DivInPlace", ops.Div, t, other)
	inplaceApply("DivInPlace", ops.Div, t, b, bl, s)
	if b == nil {
		return record(t, "DivBackward0", []*Tensor{t}, nil, func(g *Tensor, _ []*Tensor, _ []bool) []*Tensor { return []*Tensor{g.Div(s)} })
	}
	bs := b.shape
	save := []*Tensor{b}
	if needsGrad(b) {
		save = append(save, t)
	}
	return record(t, "DivBackward0", []*Tensor{t, b}, save, func(g *Tensor, saved []*Tensor, needs []bool) []*Tensor {
		return []*Tensor{
			when(needs[0], func() *Tensor { return g.Div(saved[0]) }),
			when(needs[1], func() *Tensor {
				q := g.Mul(saved[1])
				r := q.Div(saved[0])
				q.Release()
				n := r.Neg()
				r.Release()
				return reduced(n, bs)
			}),
		}
	})
}

// ReluInPlace sets t to max(t, 0) in place and returns t (torch's relu_).
// It saves t (its result) for backward.
func (t *Tensor) ReluInPlace() *Tensor {
	checkInPlace("ReluInPlace", t)
	unaryKernel(ops.Relu, t, t)
	t.charge("ReluInPlace", int64(t.Numel()), t)
	t.bump()
	return record(t, "ReluBackward0", []*Tensor{t}, []*Tensor{t}, func(g *Tensor, saved []*Tensor, _ []bool) []*Tensor {
		mask := scalarOp("Greater", ops.Greater, saved[0], 0, false)
		defer mask.Release()
		return []*Tensor{g.Mul(mask)}
	})
}

// ClampInPlace limits t to [lo, hi] in place and returns t (torch's
// clamp_). When t requires grad, the Bool mask lo ≤ t ≤ hi of the values
// before the change is saved (one byte per element).
func (t *Tensor) ClampInPlace(lo, hi float64) *Tensor {
	checkInPlace("ClampInPlace", t)
	var mask *Tensor
	if needsGrad(t) {
		mask = empty(t.outMem(), t.shape, Bool)
		defer mask.Release()
		inRangeKernel(mask, t, lo, hi)
		mask.charge("ClampMask", int64(t.Numel()), t)
	}
	binaryKernel(ops.Max, t, t, nil, lo, false)
	binaryKernel(ops.Min, t, t, nil, hi, false)
	t.charge("ClampInPlace", 2*int64(t.Numel()), t)
	t.bump()
	return record(t, "ClampBackward1", []*Tensor{t}, []*Tensor{mask}, func(g *Tensor, saved []*Tensor, _ []bool) []*Tensor {
		zero := Scalar(0, like(g))
		defer zero.Release()
		return []*Tensor{Where(saved[0], g, zero)}
	})
}

// Fill sets every element of t to v in place and returns t (fill_). As in
// PyTorch, t may be an expanded tensor: every element gets v all the same.
func (t *Tensor) Fill(v float64) *Tensor {
	checkWritable("Fill", t) // fill_ skips the overlap check (Note [Memory overlap of writes])
	fillKernel(t, v)
	t.charge("Fill", 0)
	t.bump()
	return record(t, "FillBackward0", []*Tensor{t}, nil, func(g *Tensor, _ []*Tensor, _ []bool) []*Tensor {
		return []*Tensor{ZerosLike(g)}
	})
}

// CopyFrom copies src (broadcastable to t) into t in place and returns t
// (copy_). It allocates nothing on t's device when t is contiguous.
//
// src may live on another device or on the host: host→device,
// device→host and device→device copies go through the copy engine (as
// To does, synchronously) straight into t's memory, so refilling a
// preallocated device buffer from host data costs no allocation. A
// non-contiguous t is filled through a contiguous temporary on its
// device; a non-contiguous or broadcast src is first made contiguous
// where it lives. Dtypes are converted: on the same device by the copy
// kernel, across devices on the host side (host data is converted before
// it travels, device data after it arrives); between two devices the
// dtypes must match (ToDtype first).
//
// t must not be expanded, nor partially overlap src; src may be t itself,
// or the same view of the same data, and then nothing is copied (see Note
// [Memory overlap of writes]).
func (t *Tensor) CopyFrom(src *Tensor) *Tensor {
	checkWritable("CopyFrom", t)
	src.live("CopyFrom")
	same := src == t || sameView(t, src) // copy_ returns early, before its overlap checks
	if !same {
		checkNoInternalOverlap("CopyFrom", t)
		checkNoPartialOverlap("CopyFrom", t, src, "src")
	}
	if !slices.Equal(broadcastShapes("CopyFrom", t.shape, src.shape), t.shape) {
		panicf("CopyFrom: source of shape %s cannot be broadcast to %s", fmtShape(src.shape), fmtShape(t.shape))
	}
	srcMem := src.st.core.mem
	switch {
	case same: // nothing to copy, and no kernel, as in PyTorch
	case sameDevice(t, src):
		copyKernel(t, src.layoutAs(t.shape))
		t.charge("CopyFrom", 0, src)
	default:
		copyFromAcross(t, src)
		srcMem = src.outMem()
	}
	t.bump()
	ss, sdt, cross := src.shape, src.dtype, !sameDevice(t, src)
	return record(t, "CopyBackwards", []*Tensor{t, src}, nil, func(g *Tensor, _ []*Tensor, needs []bool) []*Tensor {
		return []*Tensor{
			when(needs[0], func() *Tensor { return ZerosLike(g) }),
			when(needs[1], func() *Tensor {
				r := reduced(g.ToDtype(sdt), ss)
				if !cross {
					return r
				}
				back := empty(srcMem, r.shape, r.dtype)
				copyAcross(back, r, false)
				r.Release()
				return back
			}),
		}
	})
}

// copyFromAcross is CopyFrom between two devices (or a device and the
// host): src broadcast to dst's shape, converted on the host side.
func copyFromAcross(dst, src *Tensor) {
	s := src.layoutAs(dst.shape)
	if s.dtype != dst.dtype {
		switch {
		case src.IsHost(): // convert before the copy
			c := empty(hostMem{}, dst.shape, dst.dtype)
			defer c.Release()
			copyKernel(c, s)
			s = c
		case dst.IsHost(): // copy, then convert into dst
			h := empty(hostMem{}, dst.shape, src.dtype)
			defer h.Release()
			copyAcross(h, s, false)
			copyKernel(dst, h)
			return
		default:
			panicf("CopyFrom: source %s on %s, destination %s on %s: a copy between two devices needs the same dtype; convert with ToDtype first", src.dtype, src.DeviceName(), dst.dtype, dst.DeviceName())
		}
	}
	if dst.IsContiguous() {
		copyAcross(dst, s, false)
		return
	}
	tmp := empty(dst.outMem(), dst.shape, dst.dtype)
	defer tmp.Release()
	copyAcross(tmp, s, false)
	copyKernel(dst, tmp)
	dst.charge("copy", 0, tmp)
}

// ---- out= variants -------------------------------------------------------

// checkOut validates an out= destination: right shape, dtype and device,
// and no autograd involved (PyTorch: "out= ... don't support automatic
// differentiation").
func checkOut(op string, out *Tensor, shape []int, ins ...*Tensor) {
	checkInPlace(op, out)
	for _, in := range ins {
		in.live(op)
		checkPair(op, out, in)
	}
	if !slices.Equal(out.shape, shape) {
		panicf("%s: out has shape %s, the result has shape %s", op, fmtShape(out.shape), fmtShape(shape))
	}
	if needsGrad(append([]*Tensor{out}, ins...)...) {
		panicf("%s: out= variants do not support automatic differentiation (an argument requires grad); use the op without out, or NoGrad", op)
	}
}

// AddOut writes a + b (broadcast) into the preallocated out and returns
// out. It allocates nothing.
func AddOut(out, a, b *Tensor) *Tensor { return binaryOut("AddOut", ops.Add, out, a, b) }

// SubOut writes a - b (broadcast) into out and returns out. It allocates
// nothing.
func SubOut(out, a, b *Tensor) *Tensor { return binaryOut("SubOut", ops.Sub, out, a, b) }

// MulOut writes a * b (broadcast) into out and returns out. It allocates
// nothing.
func MulOut(out, a, b *Tensor) *Tensor { return binaryOut("MulOut", ops.Mul, out, a, b) }

// DivOut writes a / b (broadcast) into out and returns out. It allocates
// nothing.
func DivOut(out, a, b *Tensor) *Tensor { return binaryOut("DivOut", ops.Div, out, a, b) }

// binaryOut is the out= form of a broadcasting binary op. out may be a or
// b itself, or the same elements (an in-place update), but may not
// partially overlap them (Note [Memory overlap of writes]).
func binaryOut(name string, kop ops.Binary, out, a, b *Tensor) *Tensor {
	a.live(name)
	b.live(name)
	shape := broadcastShapes(name, a.shape, b.shape)
	checkOut(name, out, shape, a, b)
	checkNoPartialOverlap(name, out, a, "a")
	checkNoPartialOverlap(name, out, b, "b")
	if kop == ops.Sub {
		checkBoolSub(name, out)
	}
	checkResultType(name, out, b, kop == ops.Div)
	binaryKernel(kop, out, a.layoutAs(shape), b.layoutAs(shape), 0, false)
	out.charge(name, int64(out.Numel()), a, b)
	out.bump()
	return out
}
