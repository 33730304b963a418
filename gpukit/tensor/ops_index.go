package tensor

import (
	"slices"
)

// Indexing ops: IndexSelect, Gather and ScatterAdd read integer index
// tensors (Int64 or Int32, on the same device); Cat and Stack join tensors.
// Each backward sits beside its forward. Index tensors are saved for
// backward like any other tensor, so they show in the memory statistics.

// checkIndexTensor panics unless index is a live integer tensor on t's
// device.
func checkIndexTensor(op string, t, index *Tensor) {
	index.live(op)
	if !sameDevice(t, index) {
		panicf("%s: index is on %s but the tensor is on %s; move the index with To", op, index.DeviceName(), t.DeviceName())
	}
	if index.dtype != Int64 && index.dtype != Int32 {
		panicf("%s: index must be an Int64 or Int32 tensor, got %s (convert it with ToDtype(tensor.Int64))", op, index.dtype)
	}
}

// indexSelectShape checks IndexSelect's operands and returns the result's
// shape and the normalized dim.
func indexSelectShape(op string, t *Tensor, dim int, index *Tensor) ([]int, int) {
	t.live(op)
	checkIndexTensor(op, t, index)
	if len(index.shape) > 1 {
		panicf("%s: index must be 0-d or 1-d, got shape %s (Flatten it, or use Gather)", op, fmtShape(index.shape))
	}
	if len(t.shape) == 0 {
		panicf("%s: cannot index a 0-d tensor; Unsqueeze it first", op)
	}
	d := normDim(dim, len(t.shape), op)
	shape := slices.Clone(t.shape)
	shape[d] = index.Numel()
	return shape, d
}

// IndexSelect returns the entries of t at the positions index (a 0-d or
// 1-d Int64/Int32 tensor, values in [0, t.Size(dim))) along dim, in index
// order, as a new tensor (torch.index_select; an embedding lookup is
// weight.IndexSelect(0, ids)). Repeated indices are allowed; their
// gradients accumulate. It saves index for backward.
func (t *Tensor) IndexSelect(dim int, index *Tensor) *Tensor {
	shape, d := indexSelectShape("IndexSelect", t, dim, index)
	idx := indexValues("IndexSelect", index, t.shape[d])
	out := empty(t.outMem(), shape, t.dtype)
	indexSelectKernel(out, t, d, idx)
	out.charge("IndexSelect", 0, out, index) // reads as many bytes of t as it writes
	in := t.shape
	return record(out, "IndexSelectBackward0", []*Tensor{t}, []*Tensor{index}, func(g *Tensor, saved []*Tensor, _ []bool) []*Tensor {
		// index_add_ of g into zeros: slice i of g goes to slice idx[i].
		z := Zeros(in, like(g))
		indexAddKernel(z, g, d, indexValues("IndexSelectBackward0", saved[0], in[d]))
		z.charge("IndexAdd", int64(g.Numel()), g, saved[0])
		return []*Tensor{z}
	})
}

// IndexSelectOut writes t.IndexSelect(dim, index) into the preallocated
// out and returns out. It allocates nothing (a batch of embedding lookups
// into one reused buffer) and does not support autograd. out may be
// another view of src's storage, but share no element with src or index
// (PyTorch's index_select_out_cpu_ asserts no overlap at all; see Note
// [Memory overlap of writes]).
func IndexSelectOut(out, src *Tensor, dim int, index *Tensor) *Tensor {
	shape, d := indexSelectShape("IndexSelectOut", src, dim, index)
	checkOut("IndexSelectOut", out, shape, src)
	checkNoOverlap("IndexSelectOut", out, src, "src")
	checkNoOverlap("IndexSelectOut", out, index, "index")
	idx := indexValues("IndexSelectOut", index, src.shape[d])
	indexSelectKernel(out, src, d, idx)
	out.charge("IndexSelect", 0, out, index)
	out.bump()
	return out
}

// gatherCheck validates Gather/ScatterAdd operands: index has t's rank and,
// along every dimension but dim, is no larger than t (and than src).
func gatherCheck(op string, t *Tensor, dim int, index *Tensor, src *Tensor) int {
	t.live(op)
	checkIndexTensor(op, t, index)
	if len(index.shape) != len(t.shape) {
		panicf("%s: index (shape %s) must have as many dimensions as the tensor (shape %s)", op, fmtShape(index.shape), fmtShape(t.shape))
	}
	if len(t.shape) == 0 {
		panicf("%s: cannot index a 0-d tensor; Unsqueeze it first", op)
	}
	d := normDim(dim, len(t.shape), op)
	for k := range t.shape {
		if k != d && index.shape[k] > t.shape[k] {
			panicf("%s: index has size %d at dimension %d, larger than the tensor's %d (shapes %s and %s)", op, index.shape[k], k, t.shape[k], fmtShape(index.shape), fmtShape(t.shape))
		}
		if src != nil && index.shape[k] > src.shape[k] {
			panicf("%s: index has size %d at dimension %d, larger than src's %d (shapes %s and %s)", op, index.shape[k], k, src.shape[k], fmtShape(index.shape), fmtShape(src.shape))
		}
	}
	checkIndexRange(op, index, t.shape[d])
	return d
}

// Gather returns out with index's shape where out[i][j][k] =
// t[index[i][j][k]][j][k] for dim 0 (and likewise for other dims):
// torch.gather. index has t's rank, Int64 or Int32 values in
// [0, t.Size(dim)), and no dimension larger than t's except dim. It saves
// index for backward.
func (t *Tensor) Gather(dim int, index *Tensor) *Tensor {
	d := gatherCheck("Gather", t, dim, index, nil)
	out := empty(t.outMem(), index.shape, t.dtype)
	gatherKernel(out, t, d, index)
	out.charge("Gather", 0, out, index) // reads as many bytes of t as it writes
	in := t.shape
	return record(out, "GatherBackward0", []*Tensor{t}, []*Tensor{index}, func(g *Tensor, saved []*Tensor, _ []bool) []*Tensor {
		z := Zeros(in, like(g))
		scatterAddKernel(z, d, saved[0], g)
		z.charge("ScatterAdd", int64(g.Numel()), g, saved[0])
		return []*Tensor{z}
	})
}

// ScatterAdd returns a copy of t in which src[i][j][k] was added to
// position [index[i][j][k]][j][k] for dim 0 (and likewise for other dims),
// for every position of index: torch.scatter_add (out of place). index has
// t's rank and no dimension larger than src's, nor than t's except dim;
// repeated positions accumulate. Gradients flow to t (unchanged) and to
// src (gathered at index). It saves index for backward only when src
// requires grad (t's gradient does not use it).
func (t *Tensor) ScatterAdd(dim int, index, src *Tensor) *Tensor {
	if y, ok := autocast2(castPromote, t, src, func(a, b *Tensor) *Tensor { return a.ScatterAdd(dim, index, b) }); ok {
		return y
	}
	t.live("ScatterAdd")
	src.live("ScatterAdd")
	checkPair("ScatterAdd", t, src)
	if len(src.shape) != len(t.shape) {
		panicf("ScatterAdd: src (shape %s) must have as many dimensions as the tensor (shape %s)", fmtShape(src.shape), fmtShape(t.shape))
	}
	d := gatherCheck("ScatterAdd", t, dim, index, src)
	out := empty(t.outMem(), t.shape, t.dtype)
	copyKernel(out, t)
	scatterAddKernel(out, d, index, src)
	out.charge("ScatterAdd", int64(index.Numel()), t, index, src)
	ss, is := src.shape, index.shape
	// t's gradient is g itself; only src's gathers at index.
	return record(out, "ScatterAddBackward0", []*Tensor{t, src}, []*Tensor{savedIf(index, src)}, func(g *Tensor, saved []*Tensor, needs []bool) []*Tensor {
		return []*Tensor{
			when(needs[0], g.alias),
			when(needs[1], func() *Tensor {
				// g gathered at index, in the index-shaped corner of src.
				z := Zeros(ss, like(g))
				gatherKernel(z.inner(0, is, z.strides), g, d, saved[0])
				z.charge("Gather", 0, saved[0])
				return z
			}),
		}
	})
}

// catShape checks that tensors can be joined along dim (equal shapes
// except along dim when stack is false; equal shapes when stack is true)
// and returns the result's shape and the normalized dim.
func catShape(op string, tensors []*Tensor, dim int, stack bool) ([]int, int) {
	if len(tensors) == 0 {
		panicf("%s: expected a non-empty list of tensors", op)
	}
	first := tensors[0]
	for i, t := range tensors {
		t.live(op)
		checkPair(op, first, t)
		if len(t.shape) != len(first.shape) {
			panicf("%s: tensor %d has %d dimensions, tensor 0 has %d (all must have the same rank)", op, i, len(t.shape), len(first.shape))
		}
	}
	rank := len(first.shape)
	if stack {
		rank++
	} else if rank == 0 {
		panicf("%s: zero-dimensional tensor cannot be concatenated; use Stack, or Unsqueeze it", op)
	}
	if dim < -rank || dim >= rank {
		panicf("%s: dimension %d out of range for a result of rank %d (expected in [%d, %d])", op, dim, rank, -rank, rank-1)
	}
	if dim < 0 {
		dim += rank
	}
	for i, t := range tensors {
		for k := range t.shape {
			if t.shape[k] != first.shape[k] && (stack || k != dim) {
				what := "except in the concatenating dimension"
				if stack {
					what = "to be stacked"
				}
				panicf("%s: sizes of tensors must match %s: tensor 0 has shape %s, tensor %d has shape %s", op, what, fmtShape(first.shape), i, fmtShape(t.shape))
			}
		}
	}
	shape := slices.Clone(first.shape)
	if stack {
		shape = slices.Insert(shape, dim, len(tensors))
	} else {
		shape[dim] = 0
		for _, t := range tensors {
			shape[dim] += t.shape[dim]
			if shape[dim] < 0 {
				panicf("%s: the sizes along dimension %d add up to more than an int can count", op, dim)
			}
		}
	}
	checkShape(op, shape)
	return shape, dim
}

// Cat concatenates tensors (same dtype and device, same shape except along
// dim) along dim into a new tensor (torch.cat). Each input's gradient is
// its slice of the output's gradient.
func Cat(tensors []*Tensor, dim int) *Tensor {
	if y, ok := autocastN(castPromote, tensors, func(c []*Tensor) *Tensor { return Cat(c, dim) }); ok {
		return y
	}
	shape, d := catShape("Cat", tensors, dim, false)
	out := empty(tensors[0].outMem(), shape, tensors[0].dtype)
	sizes := make([]int, len(tensors))
	at := 0
	for i, t := range tensors {
		sizes[i] = t.shape[d]
		copyKernel(out.narrowLayout(d, at, sizes[i]), t)
		at += sizes[i]
	}
	out.charge("Cat", 0, tensors...)
	return record(out, "CatBackward0", tensors, nil, func(g *Tensor, _ []*Tensor, needs []bool) []*Tensor {
		gs := make([]*Tensor, len(sizes))
		at := 0
		for i, n := range sizes {
			if needs[i] {
				gs[i] = g.Narrow(d, at, n)
			}
			at += n
		}
		return gs
	})
}

// Stack joins tensors of one shape (same dtype and device) along a new
// dimension dim (torch.stack): the result has shape[dim] = len(tensors).
// Each input's gradient is its Select of the output's gradient.
func Stack(tensors []*Tensor, dim int) *Tensor {
	if y, ok := autocastN(castPromote, tensors, func(c []*Tensor) *Tensor { return Stack(c, dim) }); ok {
		return y
	}
	shape, d := catShape("Stack", tensors, dim, true)
	out := empty(tensors[0].outMem(), shape, tensors[0].dtype)
	for i, t := range tensors {
		copyKernel(out.selectLayout(d, i), t)
	}
	out.charge("Stack", 0, tensors...)
	return record(out, "StackBackward0", tensors, nil, func(g *Tensor, _ []*Tensor, needs []bool) []*Tensor {
		gs := make([]*Tensor, len(needs))
		for i := range gs {
			if needs[i] {
				gs[i] = g.Select(d, i)
			}
		}
		return gs
	})
}
