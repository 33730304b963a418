package tensor

import (
	"slices"

	"github.com/gpumem/course/gpukit/ops"
)

// reduceDims normalizes dims (all dimensions when empty) into a mask and
// the output shape (keepdim: reduced dimensions become 1).
func reduceDims(op string, t *Tensor, dims []int) (mask []bool, keep []int) {
	mask = make([]bool, len(t.shape))
	if len(dims) == 0 {
		for i := range mask {
			mask[i] = true
		}
	}
	for _, d := range dims {
		if len(t.shape) == 0 {
			normDim(d, 0, op)
			continue
		}
		d = normDim(d, len(t.shape), op)
		if mask[d] {
			panicf("%s: dimension %d appears more than once", op, d)
		}
		mask[d] = true
	}
	keep = slices.Clone(t.shape)
	for i, m := range mask {
		if m {
			keep[i] = 1
		}
	}
	return mask, keep
}

func squeezeMask(shape []int, mask []bool) []int {
	out := []int{}
	for i, s := range shape {
		if !mask[i] {
			out = append(out, s)
		}
	}
	return out
}

func (t *Tensor) reduce(op, name string, dims []int, keepdim, mean bool) *Tensor {
	t.live(op)
	mask, keep := reduceDims(op, t, dims)
	dt := t.dtype
	if !dt.IsFloat() {
		if mean {
			panicf("%s: mean of an integer tensor (%s) is not defined; convert with ToDtype", op, dt)
		}
		dt = Int64 // torch.sum promotes integers to int64
	}
	shape := keep
	if !keepdim {
		shape = squeezeMask(t.shape, mask)
	}
	out := empty(t.outMem(), shape, dt)
	// Write through a keepdim-shaped layout of out (same storage).
	outKeep := &Tensor{st: out.st, shape: keep, strides: contiguousStrides(keep), dtype: dt}
	sumKernel(outKeep, t, mean)
	out.charge(op, int64(t.Numel()), t)
	in := t.shape
	n := float64(t.Numel()) / float64(max(numel(keep), 1))
	return record(out, name, []*Tensor{t}, nil, func(g *Tensor, _ []*Tensor, _ []bool) []*Tensor {
		gk := g.View(keep...)
		defer gk.Release()
		if mean {
			s := gk.Div(n)
			defer s.Release()
			gk = s
		}
		return []*Tensor{gk.Expand(in...)}
	})
}

// Sum returns the sum over the given dimensions, removing them, or over
// all elements (a 0-d tensor) when none are given. Integer tensors sum to
// Int64. Its node is SumBackward0 for a full sum and SumBackward1 over
// dims, as PyTorch names its two overloads (sum and sum.dim_IntList).
func (t *Tensor) Sum(dims ...int) *Tensor {
	if y, ok := autocast1(castFloat32, t, func(x *Tensor) *Tensor { return x.Sum(dims...) }); ok {
		return y
	}
	if len(dims) == 0 {
		return t.reduce("Sum", "SumBackward0", nil, false, false)
	}
	return t.reduce("Sum", "SumBackward1", dims, false, false)
}

// SumDims is Sum with PyTorch's keepdim: when keepdim is true the reduced
// dimensions are kept with size 1. An empty dims reduces all dimensions.
func (t *Tensor) SumDims(dims []int, keepdim bool) *Tensor {
	if y, ok := autocast1(castFloat32, t, func(x *Tensor) *Tensor { return x.SumDims(dims, keepdim) }); ok {
		return y
	}
	return t.reduce("Sum", "SumBackward1", dims, keepdim, false)
}

// Mean returns the mean over the given dimensions (all when none). Its
// node is MeanBackward0 for a full mean and MeanBackward1 over dims
// (PyTorch's mean and mean.dim).
func (t *Tensor) Mean(dims ...int) *Tensor {
	if len(dims) == 0 {
		return t.reduce("Mean", "MeanBackward0", nil, false, true)
	}
	return t.reduce("Mean", "MeanBackward1", dims, false, true)
}

// MeanDims is Mean with keepdim.
func (t *Tensor) MeanDims(dims []int, keepdim bool) *Tensor {
	return t.reduce("Mean", "MeanBackward1", dims, keepdim, true)
}

// argReduce computes the maximum (isMax) or minimum of t along dim: the
// values (t's dtype) and their positions (Int64), both with the reduced
// dimension kept as size 1 (keep) and the output shape.
func (t *Tensor) argReduce(op string, dim int, isMax bool) (vals, idx *Tensor, d int, shape []int) {
	t.live(op)
	d = normDim(dim, len(t.shape), op)
	if len(t.shape) > 0 && t.shape[d] == 0 {
		panicf("%s: cannot reduce dimension %d of size 0 (shape %s): the operation has no identity", op, d, fmtShape(t.shape))
	}
	if t.dtype == Bool {
		panicf("%s: not implemented for Bool tensors; convert with ToDtype", op)
	}
	keep := slices.Clone(t.shape)
	if len(keep) > 0 {
		keep[d] = 1
	}
	vals = empty(t.outMem(), keep, t.dtype)
	idx = empty(t.outMem(), keep, Int64)
	argReduceKernel(vals, idx, t, d, isMax)
	vals.charge(op, int64(t.Numel()), t, idx)
	return vals, idx, d, keep
}

// maxMin is Max/Min: the values along dim, with the gradient routed to
// the position of each maximum (the first one on ties). It saves the
// positions (Int64) for backward, as PyTorch's MaxBackward0 does.
func (t *Tensor) maxMin(op, name string, dim int, keepdim, isMax bool) *Tensor {
	vals, idx, d, keep := t.argReduce(op, dim, isMax)
	defer idx.Release()
	out := vals
	if !keepdim && len(keep) > 0 {
		out = dropDim(vals, d)
	}
	in := t.shape
	return record(out, name, []*Tensor{t}, []*Tensor{idx}, func(g *Tensor, saved []*Tensor, _ []bool) []*Tensor {
		z := Zeros(in, like(g))
		if len(in) == 0 {
			copyKernel(z, g)
			return []*Tensor{z}
		}
		gk := g.inner(g.offset, keep, viewStridesOrPanic(g, keep))
		scatterAddKernel(z, d, saved[0], gk)
		z.charge("ScatterAdd", int64(g.Numel()), g, saved[0])
		return []*Tensor{z}
	})
}

// viewStridesOrPanic returns the strides that view g as shape (a shape
// with size-1 dimensions inserted or removed always has some).
func viewStridesOrPanic(g *Tensor, shape []int) []int {
	st, ok := viewStrides(g.shape, g.strides, shape)
	if !ok {
		panic("tensor: internal error: no view of " + fmtShape(g.shape) + " as " + fmtShape(shape))
	}
	return st
}

// Max returns the maximum of t along dim (torch.max(t, dim).values),
// removing dim unless keepdim. A NaN is the maximum of its line. The
// gradient goes to the position of the maximum (the first one on ties).
// ArgMax gives the positions.
func (t *Tensor) Max(dim int, keepdim bool) *Tensor {
	return t.maxMin("Max", "MaxBackward0", dim, keepdim, true)
}

// Min returns the minimum of t along dim (see Max).
func (t *Tensor) Min(dim int, keepdim bool) *Tensor {
	return t.maxMin("Min", "MinBackward0", dim, keepdim, false)
}

// argOnly returns only the positions of argReduce, as Int64 (not
// differentiable).
func (t *Tensor) argOnly(op string, dim int, keepdim, isMax bool) *Tensor {
	vals, idx, d, keep := t.argReduce(op, dim, isMax)
	vals.Release()
	if keepdim || len(keep) == 0 {
		return idx
	}
	return dropDim(idx, d)
}

// dropDim returns a new tensor on t's storage without t's size-1 dimension
// d, and releases t (which has no history).
func dropDim(t *Tensor, d int) *Tensor {
	out := wrap(t.st, t.offset, slices.Delete(slices.Clone(t.shape), d, d+1), slices.Delete(slices.Clone(t.strides), d, d+1), t.dtype)
	t.Release()
	return out
}

// ArgMax returns the Int64 positions of the maxima of t along dim
// (the first one on ties; NaN counts as the largest), removing dim unless
// keepdim.
func (t *Tensor) ArgMax(dim int, keepdim bool) *Tensor {
	return t.argOnly("ArgMax", dim, keepdim, true)
}

// ArgMin returns the Int64 positions of the minima of t along dim.
func (t *Tensor) ArgMin(dim int, keepdim bool) *Tensor {
	return t.argOnly("ArgMin", dim, keepdim, false)
}

// Var returns the variance over dims (all when empty): Σ(x - mean)²/(n-1)
// when unbiased (Bessel's correction, PyTorch's default), /n otherwise.
// The gradient is 2(x - mean)/(n - correction). It saves its input.
func (t *Tensor) Var(dims []int, keepdim, unbiased bool) *Tensor {
	t.live("Var")
	if !t.dtype.IsFloat() {
		panicf("Var: expected a floating-point tensor, got %s (convert with ToDtype)", t.dtype)
	}
	_, keep := reduceDims("Var", t, dims)
	n := float64(t.Numel()) / float64(max(numel(keep), 1))
	div := n
	if unbiased {
		div = n - 1
	}
	var out *Tensor
	NoGrad(func() {
		c := centered(t, dims)
		sq := c.Mul(c)
		c.Release()
		out = sq.SumDims(dims, keepdim)
		sq.Release()
		binaryKernel(ops.Div, out, out, nil, div, false)
	})
	return record(out, "VarBackward0", []*Tensor{t}, []*Tensor{t}, func(g *Tensor, saved []*Tensor, _ []bool) []*Tensor {
		c := centered(saved[0], dims)
		gk := g.View(keep...)
		s := gk.Mul(2 / div)
		gk.Release()
		r := c.Mul(s)
		c.Release()
		s.Release()
		return []*Tensor{r}
	})
}

// centered is t - mean(t, dims) (grad mode must be off).
func centered(t *Tensor, dims []int) *Tensor {
	m := t.MeanDims(dims, true)
	defer m.Release()
	return t.Sub(m)
}
