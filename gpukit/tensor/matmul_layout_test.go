package tensor_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpumem/course/gpukit/device/simtest"
	"github.com/gpumem/course/gpukit/tensor"
)

// TestMatmulOperandLayouts: a product whose operand no BLAS layout fits
// (an expanded gradient with stride 0, a slice with a step) first copies
// that operand contiguous, as PyTorch's prepare_matrix_for_cublas clones
// it; a broadcast batch needs no copy. Each product must equal the product
// of the same values made contiguous; the copies must show in the peak and
// be freed when the product is done, leaving only the output allocated.
func TestMatmulOperandLayouts(t *testing.T) {
	for _, dtype := range []tensor.Dtype{tensor.Float32, tensor.Float64} {
		dev := newDev(t)
		simtest.WarmBlas(t, dev) // the first product's cuBLAS workspace stays for good: measure from after it
		on := []tensor.Option{tensor.On(dev), dtype, tensor.WithGenerator(tensor.NewGenerator(7))}
		w := tensor.Randn([]int{6, 5}, on...)
		wide := tensor.Randn([]int{4, 12}, on...)
		batched := tensor.Randn([]int{3, 4, 6}, on...)
		block := func(elems int) int64 { return (int64(elems*dtype.Size()) + 511) / 512 * 512 }
		cases := []struct {
			name   string
			a, b   *tensor.Tensor
			copied int64 // bytes of the operands' contiguous copies
		}{
			{"expanded row", tensor.Ones([]int{1, 6}, on...).Expand(4, 6), w, block(4 * 6)},
			{"expanded scalar", tensor.Ones([]int{1, 1}, on...).Expand(4, 6), w, block(4 * 6)},
			{"stepped columns", wide.Narrow(1, 0, 12).View(4, 6, 2).Select(2, 1), w, block(4 * 6)},
			{"stepped right operand", tensor.Randn([]int{4, 6}, on...), tensor.Randn([]int{6, 10}, on...).View(6, 5, 2).Select(2, 0), block(6 * 5)},
			{"expanded batch", batched, w.Expand(3, 6, 5), 0},
			{"transposed", tensor.Randn([]int{6, 4}, on...).T(), w, 0},
			{"expanded both", tensor.Ones([]int{1, 1, 1}, on...).Expand(3, 4, 6), tensor.Ones([]int{1, 6, 1}, on...).Expand(3, 6, 5), block(3*4*6) + block(3*6*5)},
		}
		for _, tc := range cases {
			t.Run(dtype.String()+"/"+tc.name, func(t *testing.T) {
				before := dev.MemoryAllocated()
				dev.ResetPeakStats()
				got := tc.a.Matmul(tc.b)
				outBytes := dev.MemoryAllocated() - before
				assert.Equal(t, tc.copied, dev.MaxMemoryAllocated()-before-outBytes, "the operands' copies at the peak")
				ac, bc := tc.a.Contiguous(), tc.b.Contiguous()
				want := ac.Matmul(bc)
				require.Equal(t, want.Shape(), got.Shape())
				assert.InDeltaSlice(t, want.Float64s(), got.Float64s(), 1e-5)
				assert.Equal(t, block(got.Numel()), outBytes, "only the output stays allocated")
				for _, x := range []*tensor.Tensor{got, ac, bc, want} {
					x.Release()
				}
			})
		}
	}
}
