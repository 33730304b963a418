package kernels

import (
	"fmt"

	"github.com/gpumem/course/gpukit/layout"
)

// Float is the element type constraint of the generic kernels. float32 and
// float64 have different GC shapes, so the compiler emits a separate,
// fully specialised body for each: the generics cost nothing at run time.
type Float interface{ ~float32 | ~float64 }

// Strided is an N-d view into a flat slice: the element at multi-index
// (i₀, …, iₙ₋₁) is Data[Offset + Σ i_d·Strides[d]]. The shape is passed
// separately to each kernel because all operands of one call share it.
// A stride of 0 repeats (broadcasts) the operand along that dimension.
// Strides must be non-negative.
type Strided[T Float] struct {
	Data    []T
	Offset  int
	Strides []int
}

// Contiguous returns a Strided view of a dense row-major array of the given
// shape starting at data[0].
func Contiguous[T Float](data []T, shape []int) Strided[T] {
	return Strided[T]{Data: data, Strides: layout.ContiguousStrides(shape)}
}

// numel is the element count of shape (1 for a scalar, 0 if any dim is 0).
func numel(shape []int) int {
	n := 1
	for _, s := range shape {
		n *= s
	}
	return n
}

// checkView panics unless every element the view addresses lies in Data:
// the kernels below index with computed offsets, and a bad view should fail
// loudly here rather than with an index panic deep in a worker goroutine.
func checkView[T Float](name string, shape []int, v Strided[T]) {
	if len(v.Strides) != len(shape) {
		panic(fmt.Sprintf("kernels: %s has %d strides for %d-d shape %v", name, len(v.Strides), len(shape), shape))
	}
	if numel(shape) == 0 {
		return
	}
	last := v.Offset
	for d, n := range shape {
		if n < 0 || v.Strides[d] < 0 {
			panic(fmt.Sprintf("kernels: %s: negative size or stride (shape %v strides %v)", name, shape, v.Strides))
		}
		last += (n - 1) * v.Strides[d]
	}
	if v.Offset < 0 || last >= len(v.Data) {
		panic(fmt.Sprintf("kernels: %s: view (offset %d, shape %v, strides %v) exceeds data length %d", name, v.Offset, shape, v.Strides, len(v.Data)))
	}
}

// coalesced is a shape with the strides of up to three operands (dst, a, b),
// simplified so that the innermost dimension is as long as possible.
type coalesced struct {
	shape []int
	st    [3][]int
	nops  int
}

// coalesce drops size-1 dimensions and merges dimension d into d+1 whenever
// every operand steps through them as one (stride[d] == stride[d+1]·shape[d+1]).
// A fully contiguous N-d operation thus becomes a single 1-d loop, and a
// broadcast of a row vector becomes rows × contiguous columns.
func coalesce(shape []int, strides ...[]int) coalesced {
	l := coalesced{nops: len(strides)}
	for d, n := range shape {
		if n == 1 {
			continue
		}
		k := len(l.shape) - 1
		if k >= 0 {
			merge := true
			for o := range strides {
				if l.st[o][k] != strides[o][d]*n {
					merge = false
					break
				}
			}
			if merge {
				l.shape[k] *= n
				for o := range strides {
					l.st[o][k] = strides[o][d]
				}
				continue
			}
		}
		l.shape = append(l.shape, n)
		for o := range strides {
			l.st[o] = append(l.st[o], strides[o][d])
		}
	}
	if len(l.shape) == 0 { // scalar
		l.shape = []int{1}
		for o := range strides {
			l.st[o] = []int{0}
		}
	}
	return l
}

// rows calls fn for every run of the innermost dimension that intersects the
// flat element range [lo, hi), with the operands' offsets at the start of the
// run and their innermost strides. Splitting on flat indices (not on rows)
// keeps workers balanced even when there is a single long row.
func (l *coalesced) rows(off [3]int, lo, hi int, fn func(n int, off, st [3]int)) {
	nd := len(l.shape)
	inner := l.shape[nd-1]
	var idx [16]int
	var idxs []int
	if nd <= len(idx) {
		idxs = idx[:nd]
	} else {
		idxs = make([]int, nd)
	}
	var ist [3]int
	rem := lo
	for d := nd - 1; d >= 0; d-- {
		idxs[d] = rem % l.shape[d]
		rem /= l.shape[d]
		for o := 0; o < l.nops; o++ {
			off[o] += idxs[d] * l.st[o][d]
		}
	}
	for o := 0; o < l.nops; o++ {
		ist[o] = l.st[o][nd-1]
	}
	for pos := lo; pos < hi; {
		n := min(inner-idxs[nd-1], hi-pos)
		fn(n, off, ist)
		pos += n
		if pos >= hi {
			return
		}
		// The run reached the end of its row: rewind to column 0 (off still
		// points at the run's first column) and carry into outer dimensions.
		for o := 0; o < l.nops; o++ {
			off[o] -= idxs[nd-1] * ist[o]
		}
		idxs[nd-1] = 0
		for d := nd - 2; d >= 0; d-- {
			idxs[d]++
			for o := 0; o < l.nops; o++ {
				off[o] += l.st[o][d]
			}
			if idxs[d] < l.shape[d] {
				break
			}
			idxs[d] = 0
			for o := 0; o < l.nops; o++ {
				off[o] -= l.shape[d] * l.st[o][d]
			}
		}
	}
}
