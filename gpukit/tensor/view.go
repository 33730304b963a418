package tensor

import (
	"fmt"
	"slices"
)

// Views: new tensors on the same storage with another offset, shape or
// strides. They allocate nothing and take one reference to the storage.
// Each is differentiable; its backward sits beside it.

// makeView returns a view of t with the given layout, recording name/bw
// for autograd.
func makeView(t *Tensor, offset int, shape, strides []int, name string, bw backwardFn) *Tensor {
	v := wrap(t.st, offset, shape, strides, t.dtype)
	v.inference = t.inference
	v.base = t
	if t.base != nil {
		v.base = t.base
	}
	return record(v, name, []*Tensor{t}, nil, bw)
}

// View returns a tensor with the same data and a new shape (one size may
// be -1, inferred). It never copies: when the strides of t do not allow
// the new shape (for example after Transpose), View panics; use Reshape,
// which copies only in that case, or Contiguous first.
func (t *Tensor) View(shape ...int) *Tensor {
	t.live("View")
	shape = inferShape("View", shape, t.Numel())
	st, ok := viewStrides(t.shape, t.strides, shape)
	if !ok {
		panicf("View: view size %s is not compatible with input tensor's size %s and stride %s (at least one dimension spans across two contiguous subspaces); use Reshape (which copies when needed) or Contiguous().View(...)", fmtShape(shape), fmtShape(t.shape), fmtShape(t.strides))
	}
	return t.viewAs(shape, st, "ViewBackward0")
}

func (t *Tensor) viewAs(shape, strides []int, name string) *Tensor {
	in := t.shape
	return makeView(t, t.offset, shape, strides, name, func(g *Tensor, _ []*Tensor, _ []bool) []*Tensor {
		return []*Tensor{g.Reshape(in...)}
	})
}

// Reshape returns a view when the strides allow it (as View) and a
// contiguous copy otherwise. Check SameStorage to tell which happened.
func (t *Tensor) Reshape(shape ...int) *Tensor {
	t.live("Reshape")
	shape = inferShape("Reshape", shape, t.Numel())
	if st, ok := viewStrides(t.shape, t.strides, shape); ok {
		return t.viewAs(shape, st, "ViewBackward0")
	}
	c := t.Contiguous()
	defer c.Release()
	st, _ := viewStrides(c.shape, c.strides, shape)
	return c.viewAs(shape, st, "ViewBackward0")
}

// Flatten merges dimensions start..end (inclusive; negative counts from
// the end) into one, as a view when possible (torch.flatten).
func (t *Tensor) Flatten(start, end int) *Tensor {
	t.live("Flatten")
	if len(t.shape) == 0 {
		return t.Reshape(1)
	}
	s, e := normDim(start, len(t.shape), "Flatten"), normDim(end, len(t.shape), "Flatten")
	if s > e {
		panicf("Flatten: start dimension %d comes after end dimension %d", start, end)
	}
	shape := slices.Clone(t.shape[:s])
	shape = append(shape, numel(t.shape[s:e+1]))
	shape = append(shape, t.shape[e+1:]...)
	return t.Reshape(shape...)
}

// Transpose swaps dimensions d0 and d1. The result shares storage and is
// generally not contiguous.
func (t *Tensor) Transpose(d0, d1 int) *Tensor {
	t.live("Transpose")
	perm := make([]int, len(t.shape))
	for i := range perm {
		perm[i] = i
	}
	if len(t.shape) > 0 {
		a, b := normDim(d0, len(t.shape), "Transpose"), normDim(d1, len(t.shape), "Transpose")
		perm[a], perm[b] = perm[b], perm[a]
	}
	return t.permute("Transpose", "TransposeBackward0", perm)
}

// T is Transpose(0, 1) of a 2-d tensor (torch.Tensor.t).
func (t *Tensor) T() *Tensor {
	if len(t.shape) != 2 {
		panicf("T: expects a 2-d tensor, got shape %s (use Transpose or Permute)", fmtShape(t.shape))
	}
	return t.Transpose(0, 1)
}

// Permute reorders the dimensions: dimension i of the result is dimension
// perm[i] of t.
func (t *Tensor) Permute(perm ...int) *Tensor {
	t.live("Permute")
	return t.permute("Permute", "PermuteBackward0", perm)
}

func (t *Tensor) permute(op, name string, perm []int) *Tensor {
	if len(perm) != len(t.shape) {
		panicf("%s: %d dimensions given for a tensor of rank %d", op, len(perm), len(t.shape))
	}
	shape := make([]int, len(perm))
	strides := make([]int, len(perm))
	inv := make([]int, len(perm))
	seen := make([]bool, len(perm))
	for i, p := range perm {
		p = normDim(p, len(t.shape), op)
		if seen[p] {
			panicf("%s: repeated dimension %d in %v", op, p, perm)
		}
		seen[p] = true
		shape[i], strides[i], inv[p] = t.shape[p], t.strides[p], i
	}
	return makeView(t, t.offset, shape, strides, name, func(g *Tensor, _ []*Tensor, _ []bool) []*Tensor {
		return []*Tensor{g.Permute(inv...)}
	})
}

// Narrow returns elements start..start+length-1 of dimension dim, sharing
// storage (torch.narrow).
func (t *Tensor) Narrow(dim, start, length int) *Tensor {
	t.live("Narrow")
	d := normDim(dim, len(t.shape), "Narrow")
	if start < 0 {
		start += t.shape[d]
	}
	if start < 0 || start > t.shape[d] || length < 0 || length > t.shape[d]-start {
		panicf("Narrow: start %d and length %d out of bounds for dimension %d of size %d", start, length, d, t.shape[d])
	}
	shape := slices.Clone(t.shape)
	shape[d] = length
	return t.sliceView("Narrow", "SliceBackward0", d, start, 1, shape, slices.Clone(t.strides))
}

// Slice returns elements start, start+step, ... before end of dimension dim
// (Python's t[..., start:end:step, ...]), sharing storage. Negative start
// and end count from the end; out-of-range bounds are clamped as in Python.
func (t *Tensor) Slice(dim, start, end, step int) *Tensor {
	t.live("Slice")
	d := normDim(dim, len(t.shape), "Slice")
	if step <= 0 {
		panicf("Slice: step must be positive, got %d", step)
	}
	n := t.shape[d]
	clamp := func(i int) int {
		if i < 0 {
			i += n
		}
		return min(max(i, 0), n)
	}
	start, end = clamp(start), clamp(end)
	length := 0
	if end > start {
		length = (end-start-1)/step + 1 // ceil((end-start)/step) without overflow for a huge step
	}
	shape := slices.Clone(t.shape)
	shape[d] = length
	strides := slices.Clone(t.strides)
	if length > 1 { // with one element the stride is never used; step·stride might overflow
		strides[d] *= step
	}
	return t.sliceView("Slice", "SliceBackward0", d, start, step, shape, strides)
}

func (t *Tensor) sliceView(op, name string, d, start, step int, shape, strides []int) *Tensor {
	in := t.shape
	return makeView(t, t.offset+start*t.strides[d], shape, strides, name, func(g *Tensor, _ []*Tensor, _ []bool) []*Tensor {
		z := Zeros(in, like(g))
		dst := z.Slice(d, start, start+(g.shape[d]-1)*step+1, step)
		copyKernel(dst, g)
		dst.Release()
		return []*Tensor{z}
	})
}

// Select returns the slice at index i of dimension dim, with that
// dimension removed (t[i] for dim 0), sharing storage.
func (t *Tensor) Select(dim, i int) *Tensor {
	t.live("Select")
	d := normDim(dim, len(t.shape), "Select")
	if i < 0 {
		i += t.shape[d]
	}
	if i < 0 || i >= t.shape[d] {
		panicf("Select: index %d out of range for dimension %d of size %d", i, d, t.shape[d])
	}
	shape := slices.Delete(slices.Clone(t.shape), d, d+1)
	strides := slices.Delete(slices.Clone(t.strides), d, d+1)
	in := t.shape
	return makeView(t, t.offset+i*t.strides[d], shape, strides, "SelectBackward0", func(g *Tensor, _ []*Tensor, _ []bool) []*Tensor {
		z := Zeros(in, like(g))
		dst := z.Select(d, i)
		copyKernel(dst, g)
		dst.Release()
		return []*Tensor{z}
	})
}

// Expand returns a view with size-1 dimensions repeated to the given shape
// (-1 keeps a size) and new leading dimensions, using stride 0: no memory
// is allocated. Ops that would write one element twice refuse the result
// as their output (in-place arithmetic, CopyFrom); Fill and SetAt accept
// it, as in PyTorch (Note [Memory overlap of writes]).
func (t *Tensor) Expand(shape ...int) *Tensor {
	t.live("Expand")
	if len(shape) < len(t.shape) {
		panicf("Expand: the number of sizes provided (%d) must be greater or equal to the number of dimensions in the tensor (%d)", len(shape), len(t.shape))
	}
	shape = slices.Clone(shape)
	off := len(shape) - len(t.shape)
	for i := range shape {
		j := i - off
		if shape[i] == -1 {
			if j < 0 {
				panicf("Expand: -1 is not allowed for a new leading dimension")
			}
			shape[i] = t.shape[j]
		}
		if shape[i] < 0 {
			panicf("Expand: invalid size %d at dimension %d in target sizes %s (sizes are non-negative, or -1 to keep one)", shape[i], i, fmtShape(shape))
		}
		if j >= 0 && t.shape[j] != 1 && t.shape[j] != shape[i] {
			panicf("Expand: the expanded size of the tensor (%d) must match the existing size (%d) at non-singleton dimension %d; target sizes %s, tensor sizes %s", shape[i], t.shape[j], i, fmtShape(shape), fmtShape(t.shape))
		}
	}
	checkShape("Expand", shape) // stride 0 costs no memory, but every op on the view counts its elements
	return t.expandTo(shape)
}

func (t *Tensor) expandTo(shape []int) *Tensor {
	in := t.shape
	return makeView(t, t.offset, shape, broadcastStrides(t.shape, t.strides, shape), "ExpandBackward0", func(g *Tensor, _ []*Tensor, _ []bool) []*Tensor {
		return []*Tensor{sumTo(g, in)}
	})
}

// Squeeze removes the given dimensions if they have size 1, or all
// dimensions of size 1 when none are given.
func (t *Tensor) Squeeze(dims ...int) *Tensor {
	t.live("Squeeze")
	drop := make([]bool, len(t.shape))
	if len(dims) == 0 {
		for i, s := range t.shape {
			drop[i] = s == 1
		}
	}
	for _, d := range dims {
		if len(t.shape) == 0 {
			continue
		}
		d = normDim(d, len(t.shape), "Squeeze")
		drop[d] = t.shape[d] == 1
	}
	var shape, strides []int
	for i := range t.shape {
		if !drop[i] {
			shape = append(shape, t.shape[i])
			strides = append(strides, t.strides[i])
		}
	}
	return t.viewAs(shape, strides, "SqueezeBackward0")
}

// Unsqueeze inserts a dimension of size 1 at position dim.
func (t *Tensor) Unsqueeze(dim int) *Tensor {
	t.live("Unsqueeze")
	d := dim
	if d < 0 {
		d += len(t.shape) + 1
	}
	if d < 0 || d > len(t.shape) {
		panicf("Unsqueeze: dimension %d out of range for a tensor of rank %d", dim, len(t.shape))
	}
	st := 1
	if d < len(t.shape) {
		st = t.strides[d] * t.shape[d]
	}
	shape := slices.Insert(slices.Clone(t.shape), d, 1)
	strides := slices.Insert(slices.Clone(t.strides), d, st)
	return t.viewAs(shape, strides, "UnsqueezeBackward0")
}

// Contiguous returns a tensor with the same values laid out row-major. If
// t is already contiguous, the result is a new reference to the same
// storage (no copy); otherwise it is a copy. Either way, the caller owns
// the result (Release it when done).
func (t *Tensor) Contiguous() *Tensor {
	t.live("Contiguous")
	if t.IsContiguous() {
		return t.sameTensor()
	}
	return t.Clone()
}

// sameTensor is a new reference to t as it is: a view with t's layout
// whose gradient flows to t (PyTorch would return t itself).
func (t *Tensor) sameTensor() *Tensor {
	return t.viewAs(t.shape, t.strides, "AliasBackward0")
}

// Clone returns a contiguous copy with its own storage; it is
// differentiable (CloneBackward0).
func (t *Tensor) Clone() *Tensor {
	t.live("Clone")
	out := empty(t.outMem(), t.shape, t.dtype)
	copyKernel(out, t)
	out.charge("copy", 0, t)
	return record(out, "CloneBackward0", []*Tensor{t}, nil, func(g *Tensor, _ []*Tensor, _ []bool) []*Tensor {
		return []*Tensor{g}
	})
}

// ToDtype returns a copy converted to dt (or a new reference when t already
// has dtype dt). Float-to-float conversions are differentiable.
func (t *Tensor) ToDtype(dt Dtype) *Tensor {
	t.live("ToDtype")
	if t.dtype == dt {
		return t.Contiguous()
	}
	out := empty(t.outMem(), t.shape, dt)
	copyKernel(out, t)
	out.charge("to_"+dt.String(), 0, t)
	if !dt.IsFloat() {
		return out
	}
	src := t.dtype
	return record(out, "ToCopyBackward0", []*Tensor{t}, nil, func(g *Tensor, _ []*Tensor, _ []bool) []*Tensor {
		return []*Tensor{g.ToDtype(src)}
	})
}

// sumTo reduces g to shape by summing the dimensions that broadcasting
// added or expanded (the backward of broadcasting). It returns a new
// reference even when nothing needs summing.
func sumTo(g *Tensor, shape []int) *Tensor {
	if slices.Equal(g.shape, shape) {
		return g.alias()
	}
	lead := len(g.shape) - len(shape)
	var dims []int
	for i := range g.shape {
		if i < lead || (shape[i-lead] == 1 && g.shape[i] != 1) {
			dims = append(dims, i)
		}
	}
	s := g.SumDims(dims, true)
	defer s.Release()
	if lead == 0 {
		return s.Reshape(shape...)
	}
	return s.Reshape(shape...)
}

// String describes the tensor's metadata (not its values), e.g.
// "Tensor(shape=[2, 3], dtype=float32, device=sim:0, grad_fn=MulBackward0)".
func (t *Tensor) String() string {
	if t == nil {
		return "Tensor(nil)"
	}
	s := fmt.Sprintf("Tensor(shape=%s, dtype=%s, device=%s", fmtShape(t.shape), t.dtype, t.DeviceName())
	if t.gradFn != nil {
		s += ", grad_fn=" + t.gradFn.name
	} else if t.requiresGrad {
		s += ", requires_grad=true"
	}
	if t.released() {
		s += ", released"
	}
	return s + ")"
}
