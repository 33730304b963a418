// Package layout is the arithmetic of strided N-d arrays that every floor
// of gpukit shares: row-major strides, the contiguity test, NumPy-style
// broadcasting and the loop over every element's offsets. It is a leaf: it
// imports nothing of gpukit.
package layout

import "fmt"

// ContiguousStrides returns row-major strides for shape: the last dimension
// has stride 1 and each earlier one the product of the sizes after it.
func ContiguousStrides(shape []int) []int {
	st := make([]int, len(shape))
	s := 1
	for d := len(shape) - 1; d >= 0; d-- {
		st[d] = s
		s *= shape[d]
	}
	return st
}

// IsContiguous reports whether shape/strides is row-major with no gaps.
// Strides of dimensions of size 1 do not matter, as in PyTorch.
func IsContiguous(shape, strides []int) bool {
	if len(strides) != len(shape) {
		panic(fmt.Sprintf("layout: IsContiguous: %d strides for %d dimensions", len(strides), len(shape)))
	}
	want := 1
	for i := len(shape) - 1; i >= 0; i-- {
		if shape[i] == 1 {
			continue
		}
		if strides[i] != want {
			return false
		}
		want *= shape[i]
	}
	return true
}

// BroadcastStrides returns strides that view an operand of shape inShape and
// strides inStrides as the larger shape outShape, NumPy style: shapes are
// aligned on the right, missing leading dimensions and dimensions of size 1
// get stride 0. It returns an error if the shapes are incompatible.
func BroadcastStrides(outShape, inShape, inStrides []int) ([]int, error) {
	if len(inShape) > len(outShape) || len(inShape) != len(inStrides) {
		return nil, fmt.Errorf("layout: cannot broadcast shape %v to %v", inShape, outShape)
	}
	st := make([]int, len(outShape))
	lead := len(outShape) - len(inShape)
	for d, n := range inShape {
		switch {
		case n == outShape[lead+d]:
			st[lead+d] = inStrides[d]
		case n == 1:
			st[lead+d] = 0
		default:
			return nil, fmt.Errorf("layout: cannot broadcast shape %v to %v", inShape, outShape)
		}
	}
	return st, nil
}

// ForEachOffset calls fn(k, offs) for every element k (row-major order) of
// shape, with the element offsets in each of the strided operands (offsets
// of the first element, strides per dimension). It is the one loop that
// all generic (non-float, strided) kernels use. offs is reused between
// calls.
func ForEachOffset(shape []int, offsets []int, strides [][]int, fn func(k int, offs []int)) {
	n := numel(shape)
	if n == 0 {
		return
	}
	rank := len(shape)
	idx := make([]int, rank)
	offs := append([]int(nil), offsets...)
	for k := 0; k < n; k++ {
		fn(k, offs)
		// increment the multi-index, last dimension fastest
		for d := rank - 1; d >= 0; d-- {
			idx[d]++
			for o := range offs {
				offs[o] += strides[o][d]
			}
			if idx[d] < shape[d] {
				break
			}
			for o := range offs {
				offs[o] -= strides[o][d] * shape[d]
			}
			idx[d] = 0
		}
	}
}

func numel(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}
