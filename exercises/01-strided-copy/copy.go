// Package strided copies a strided layout into a contiguous one: what
// Contiguous does when a tensor is not contiguous.
package strided

import (
	"errors"

	"github.com/gpumem/course/gpukit/tensor"
)

// CopyStrided copies the elements of the layout (shape, strides, offset,
// all counted in elements of itemsize bytes) from src into dst, row by row,
// as a contiguous array: element idx of the layout, which lives at element
// offset + Σ idx[k]·strides[k] of src, lands at its row-major position in
// dst. Strides may be 0 (an expanded dimension) but not negative. A layout
// with no elements copies nothing. It returns an error, and writes nothing,
// when the layout is invalid or reaches outside src, or dst is too small.
//
// It allocates nothing, and a contiguous layout is one copy.
//
// TODO: write it.
func CopyStrided(dst, src []byte, itemsize int, shape, strides []int, offset int) error {
	return errors.New("strided: CopyStrided is not implemented yet")
}

// Contiguous returns a contiguous copy of t on t's device, with t's shape
// and dtype, made by CopyStrided from t's storage: one allocation, for the
// result. It needs a tensor whose bytes the host can read (a sim device).
//
// TODO: write it with CopyStrided (not with t.Contiguous or t.Clone).
func Contiguous(t *tensor.Tensor) (*tensor.Tensor, error) {
	return nil, errors.New("strided: Contiguous is not implemented yet")
}
