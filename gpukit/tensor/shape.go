package tensor

import (
	"fmt"
	"math"
	"math/bits"
	"slices"
	"strings"

	"github.com/gpumem/course/gpukit/layout"
)

// numel is the number of elements of shape (1 for a 0-d shape). Shapes
// from user input pass checkShape first, so the product cannot overflow.
func numel(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

// checkShape panics unless every size of shape is non-negative and its
// element count fits in an int; it returns the element count. Every shape
// computed from user input goes through it before anything is allocated,
// viewed or iterated.
func checkShape(op string, shape []int) int {
	n, err := shapeNumel(shape)
	if err != nil {
		panicf("%s: %v", op, err)
	}
	return n
}

// shapeNumel is checkShape returning an error (without the op prefix).
func shapeNumel(shape []int) (int, error) {
	for _, d := range shape {
		if d < 0 {
			return 0, fmt.Errorf("negative dimension %d in shape %s", d, fmtShape(shape))
		}
	}
	// The product of the non-zero sizes must fit too: it is the largest
	// contiguous stride, even when a zero size leaves no elements.
	n := uint64(1)
	empty := false
	for _, d := range shape {
		if d == 0 {
			empty = true
			continue
		}
		hi, lo := bits.Mul64(n, uint64(d))
		if hi != 0 || lo > math.MaxInt {
			return 0, fmt.Errorf("shape %s has more elements than an int can count (the product of its sizes overflows); no tensor can have it", fmtShape(shape))
		}
		n = lo
	}
	if empty {
		return 0, nil
	}
	return int(n), nil
}

// storageBytes is the byte size of n elements of dt, or an error when it
// does not fit in an int64 (PyTorch: "Storage size calculation overflowed").
func storageBytes(shape []int, n int, dt Dtype) (int64, error) {
	size := dt.Size()
	if int64(n) > math.MaxInt64/int64(size) {
		return 0, fmt.Errorf("storage size calculation overflowed: shape %s of %s needs more than 2^63 bytes", fmtShape(shape), dt)
	}
	return int64(n) * int64(size), nil
}

// contiguousStrides returns row-major (C order) strides for shape, in
// elements.
func contiguousStrides(shape []int) []int {
	return fillContiguousStrides(make([]int, len(shape)), shape)
}

// contiguousLayout returns a copy of shape and its contiguous strides, in
// one allocation (every new tensor needs both).
func contiguousLayout(shape []int) (sh, strides []int) {
	n := len(shape)
	both := make([]int, 2*n)
	sh = both[:n:n]
	copy(sh, shape)
	return sh, fillContiguousStrides(both[n:], sh)
}

// fillContiguousStrides writes the contiguous strides of shape into st,
// which has shape's length, and returns it.
func fillContiguousStrides(st, shape []int) []int {
	s := 1
	for i := len(shape) - 1; i >= 0; i-- {
		st[i] = s
		if shape[i] > 1 {
			s *= shape[i]
		}
	}
	return st
}

// fmtShape prints a shape like PyTorch's torch.Size, e.g. [2, 3].
func fmtShape(shape []int) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, d := range shape {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprint(&b, d)
	}
	b.WriteByte(']')
	return b.String()
}

// normDim turns a possibly negative dim into an index in [0, rank).
func normDim(dim, rank int, op string) int {
	r := rank
	if r == 0 {
		r = 1 // PyTorch accepts dim 0 / -1 for 0-d tensors in reductions
	}
	if dim < -r || dim >= r {
		panicf("%s: dimension %d out of range for a tensor of rank %d (expected in [%d, %d])", op, dim, rank, -r, r-1)
	}
	if dim < 0 {
		dim += r
	}
	return dim
}

// broadcastShapes returns the broadcast shape of a and b following NumPy
// rules: align trailing dimensions; sizes must be equal or 1.
func broadcastShapes(op string, a, b []int) []int {
	n := max(len(a), len(b))
	out := make([]int, n)
	for i := range n {
		da, db := 1, 1
		if j := len(a) - n + i; j >= 0 {
			da = a[j]
		}
		if j := len(b) - n + i; j >= 0 {
			db = b[j]
		}
		switch {
		case da == db:
			out[i] = da
		case da == 1:
			out[i] = db
		case db == 1:
			out[i] = da
		default:
			panicf("%s: shapes %s and %s are not broadcastable (size %d vs %d at dimension %d)", op, fmtShape(a), fmtShape(b), da, db, i)
		}
	}
	checkShape(op, out) // [n, 1] and [1, m] of expanded tensors may meet in n·m elements
	return out
}

// broadcastStrides returns the strides that make (shape, strides) read as
// the larger shape `to`: stride 0 along broadcast dimensions.
func broadcastStrides(shape, strides, to []int) []int {
	out := make([]int, len(to))
	off := len(to) - len(shape)
	for i := range to {
		j := i - off
		if j < 0 || (shape[j] == 1 && to[i] != 1) {
			out[i] = 0
			continue
		}
		out[i] = strides[j]
	}
	return out
}

// inferShape resolves one -1 in shape for n elements.
func inferShape(op string, shape []int, n int) []int {
	out := slices.Clone(shape)
	neg := -1
	for i, d := range out {
		switch {
		case d == -1:
			if neg >= 0 {
				panicf("%s: only one dimension can be inferred (-1) in %s", op, fmtShape(shape))
			}
			neg = i
		case d < 0:
			panicf("%s: invalid size %d in shape %s", op, d, fmtShape(shape))
		}
	}
	known := slices.Clone(out)
	if neg >= 0 {
		known = slices.Delete(known, neg, neg+1)
	}
	prod := checkShape(op, known) // a wrapped product could match n by accident
	if neg >= 0 {
		if prod == 0 || n%prod != 0 {
			panicf("%s: shape %s is invalid for input of size %d", op, fmtShape(shape), n)
		}
		out[neg] = n / prod
		prod *= out[neg]
	}
	if prod != n {
		panicf("%s: shape %s is invalid for input of size %d", op, fmtShape(shape), n)
	}
	return out
}

// viewStrides computes strides for viewing (shape, strides) as newShape
// without copying, following PyTorch's computeStride. ok is false when no
// such strides exist (the layout would have to be copied).
func viewStrides(shape, strides, newShape []int) ([]int, bool) {
	out := make([]int, len(newShape))
	if numel(shape) == 0 || len(shape) == 0 {
		return contiguousStrides(newShape), true
	}
	viewD := len(newShape) - 1
	chunkBase := 1
	if len(strides) > 0 {
		chunkBase = strides[len(strides)-1]
	}
	tensorNumel := 1
	viewNumel := 1
	for d := len(shape) - 1; d >= 0; d-- {
		tensorNumel *= shape[d]
		if d == 0 || (shape[d-1] != 1 && strides[d-1] != tensorNumel*chunkBase) {
			for viewD >= 0 && (viewNumel < tensorNumel || newShape[viewD] == 1) {
				out[viewD] = viewNumel * chunkBase
				viewNumel *= newShape[viewD]
				viewD--
			}
			if viewNumel != tensorNumel {
				return nil, false
			}
			if d > 0 {
				chunkBase = strides[d-1]
				tensorNumel = 1
				viewNumel = 1
			}
		}
	}
	if viewD != -1 {
		return nil, false
	}
	return out, true
}

// forEachOffset calls fn(k, off_0, off_1, ...) for every element k (row-major
// order) of shape, with the element offsets in each of the strided operands
// (layout.ForEachOffset).
func forEachOffset(shape []int, offsets []int, strides [][]int, fn func(k int, offs []int)) {
	layout.ForEachOffset(shape, offsets, strides, fn)
}
