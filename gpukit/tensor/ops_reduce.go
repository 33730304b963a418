package tensor

import "slices"

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
// Int64.
func (t *Tensor) Sum(dims ...int) *Tensor { return t.reduce("Sum", "SumBackward1", dims, false, false) }

// SumDims is Sum with PyTorch's keepdim: when keepdim is true the reduced
// dimensions are kept with size 1. An empty dims reduces all dimensions.
func (t *Tensor) SumDims(dims []int, keepdim bool) *Tensor {
	return t.reduce("Sum", "SumBackward1", dims, keepdim, false)
}

// Mean returns the mean over the given dimensions (all when none).
func (t *Tensor) Mean(dims ...int) *Tensor {
	return t.reduce("Mean", "MeanBackward1", dims, false, true)
}

// MeanDims is Mean with keepdim.
func (t *Tensor) MeanDims(dims []int, keepdim bool) *Tensor {
	return t.reduce("Mean", "MeanBackward1", dims, keepdim, true)
}
