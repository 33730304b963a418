package tensor

import (
	"github.com/gpumem/course/gpukit/ops"
)

// Comparisons return Bool tensors and are not differentiable; Where
// selects between two tensors by a Bool condition and routes the
// gradient to the branch that was taken.

// compare computes the comparison op(t, other) elementwise into a new Bool
// tensor (Compute's Binary or BinaryScalar with a Bool dst). other is a
// *Tensor (broadcast with t) or a number; a number is first rounded to
// t's dtype, as PyTorch treats a Python number (dtypes.Round),
// so a float32 tensor holding 0.1 equals 0.1. Operands of two dtypes compare
// as their float64 values on the CPU; a backend that computes in one
// dtype (cuda) refuses them.
func compare(name string, t *Tensor, other any, op ops.Binary) *Tensor {
	t.live(name)
	b, s := operand(name, other)
	shape := t.shape
	if b != nil {
		if !sameDevice(t, b) {
			panicf("%s: expected all tensors to be on the same device, but found %s and %s", name, t.DeviceName(), b.DeviceName())
		}
		shape = broadcastShapes(name, t.shape, b.shape)
	}
	out := empty(t.outMem(), shape, Bool)
	var bl *Tensor
	if b != nil {
		bl = b.layoutAs(shape)
	}
	binaryKernel(op, out, t.layoutAs(shape), bl, s, false)
	out.charge(name, int64(out.Numel()), t, b)
	return out
}

// Gt returns the Bool tensor t > other (other: a *Tensor, broadcast, or a
// number). NaN compares false, as in IEEE 754.
func (t *Tensor) Gt(other any) *Tensor {
	return compare("Gt", t, other, ops.Greater)
}

// Lt returns the Bool tensor t < other.
func (t *Tensor) Lt(other any) *Tensor {
	return compare("Lt", t, other, ops.Less)
}

// Ge returns the Bool tensor t >= other.
func (t *Tensor) Ge(other any) *Tensor {
	return compare("Ge", t, other, ops.GreaterEqual)
}

// Le returns the Bool tensor t <= other.
func (t *Tensor) Le(other any) *Tensor {
	return compare("Le", t, other, ops.LessEqual)
}

// Eq returns the Bool tensor t == other.
func (t *Tensor) Eq(other any) *Tensor {
	return compare("Eq", t, other, ops.Equal)
}

// Where returns cond ? a : b elementwise (torch.where); cond is a Bool
// tensor, a and b have one dtype, and all three broadcast together. The
// gradient goes to a where cond holds and to b elsewhere. It saves cond.
func Where(cond, a, b *Tensor) *Tensor {
	if y, ok := autocast2(castPromote, a, b, func(x, y *Tensor) *Tensor { return Where(cond, x, y) }); ok {
		return y
	}
	cond.live("Where")
	a.live("Where")
	b.live("Where")
	checkPair("Where", a, b)
	if !sameDevice(cond, a) {
		panicf("Where: condition is on %s but the values are on %s", cond.DeviceName(), a.DeviceName())
	}
	if cond.dtype != Bool {
		panicf("Where: condition must be a Bool tensor, got %s (compare with Gt, Eq, ... to get one)", cond.dtype)
	}
	shape := broadcastShapes("Where", broadcastShapes("Where", cond.shape, a.shape), b.shape)
	out := empty(a.outMem(), shape, a.dtype)
	whereKernel(out, cond.layoutAs(shape), a.layoutAs(shape), b.layoutAs(shape))
	out.charge("Where", int64(out.Numel()), cond, a, b)
	as, bs := a.shape, b.shape
	return record(out, "WhereBackward0", []*Tensor{a, b}, []*Tensor{cond}, func(g *Tensor, saved []*Tensor, needs []bool) []*Tensor {
		zero := Scalar(0, like(g))
		defer zero.Release()
		return []*Tensor{
			when(needs[0], func() *Tensor { return reduced(Where(saved[0], g, zero), as) }),
			when(needs[1], func() *Tensor { return reduced(Where(saved[0], zero, g), bs) }),
		}
	})
}
