// Package strided copies a strided layout into a contiguous one: what
// Contiguous does when a tensor is not contiguous.
package strided

import (
	"errors"
	"fmt"
	"math"

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
func CopyStrided(dst, src []byte, itemsize int, shape, strides []int, offset int) error {
	if itemsize <= 0 {
		return fmt.Errorf("strided: item size %d, want at least 1 byte", itemsize)
	}
	if len(shape) != len(strides) {
		return fmt.Errorf("strided: %d sizes but %d strides", len(shape), len(strides))
	}
	if offset < 0 {
		return fmt.Errorf("strided: negative offset %d", offset)
	}
	numel, last := 1, offset // element count, and the highest element of src the layout reads
	for k, n := range shape {
		if n < 0 || strides[k] < 0 {
			return fmt.Errorf("strided: dimension %d has size %d and stride %d; both must be at least 0", k, n, strides[k])
		}
		if n == 0 {
			numel = 0
			continue
		}
		var ok bool
		if numel, ok = mul(numel, n); !ok {
			return errors.New("strided: the number of elements overflows int")
		}
		step, ok := mul(n-1, strides[k])
		if !ok || last > math.MaxInt-step {
			return errors.New("strided: the layout's last element overflows int")
		}
		last += step
	}
	if numel == 0 {
		return nil
	}
	need, ok := mul(numel, itemsize)
	if !ok {
		return errors.New("strided: the copy's size overflows int")
	}
	if len(dst) < need {
		return fmt.Errorf("strided: dst holds %d bytes, the layout needs %d", len(dst), need)
	}
	if end, ok := mul(last+1, itemsize); !ok || end > len(src) {
		return fmt.Errorf("strided: the layout reads element %d, beyond the %d elements of src", last, len(src)/itemsize)
	}

	if isContiguous(shape, strides) {
		copy(dst[:need], src[offset*itemsize:])
		return nil
	}
	copyDim(dst[:need], src, itemsize, shape, strides, offset)
	return nil
}

// copyDim copies dimension 0 of the layout into dst (exactly its size) and
// recurses into the others; the innermost dimension is copied as one run
// when its stride is 1. Recursion keeps the index on the stack: nothing is
// allocated.
func copyDim(dst, src []byte, itemsize int, shape, strides []int, offset int) {
	n, stride := shape[0], strides[0]
	if len(shape) == 1 {
		if stride == 1 {
			copy(dst, src[offset*itemsize:(offset+n)*itemsize])
			return
		}
		for i := 0; i < n; i++ {
			at := (offset + i*stride) * itemsize
			copy(dst[i*itemsize:(i+1)*itemsize], src[at:at+itemsize])
		}
		return
	}
	inner := len(dst) / n
	for i := 0; i < n; i++ {
		copyDim(dst[i*inner:(i+1)*inner], src, itemsize, shape[1:], strides[1:], offset+i*stride)
	}
}

// isContiguous reports whether the layout is row-major without gaps;
// dimensions of size 1 may have any stride.
func isContiguous(shape, strides []int) bool {
	want := 1
	for k := len(shape) - 1; k >= 0; k-- {
		if shape[k] == 1 {
			continue
		}
		if strides[k] != want {
			return false
		}
		want *= shape[k]
	}
	return true
}

// mul is a·b for a, b ≥ 0, and whether it fits an int.
func mul(a, b int) (int, bool) {
	if a != 0 && b > math.MaxInt/a {
		return 0, false
	}
	return a * b, true
}

// Contiguous returns a contiguous copy of t on t's device, with t's shape
// and dtype, made by CopyStrided from t's storage: one allocation, for the
// result. It needs a tensor whose bytes the host can read (a sim device).
func Contiguous(t *tensor.Tensor) (*tensor.Tensor, error) {
	if t == nil || t.Released() {
		return nil, errors.New("strided: Contiguous needs a live tensor")
	}
	src := t.Storage().Bytes()
	if t.IsHost() || src == nil {
		return nil, fmt.Errorf("strided: the bytes of a tensor on %s cannot be read here; use a sim device", t.DeviceName())
	}
	out, err := tensor.TryEmpty(t.Shape(), tensor.On(t.Device()), t.Dtype())
	if err != nil {
		return nil, err
	}
	dst := out.Storage().Bytes()[:out.Nbytes()]
	if err := CopyStrided(dst, src, t.Dtype().Size(), t.Shape(), t.Stride(), t.StorageOffset()); err != nil {
		out.Release()
		return nil, err
	}
	return out, nil
}
