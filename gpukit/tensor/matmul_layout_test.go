package tensor_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpumem/course/gpukit/tensor"
)

// TestMatmulOperandLayouts: a product whose operand no BLAS layout fits
// (an expanded gradient with stride 0, a slice with a step, a broadcast
// batch) is packed before the fast kernel runs; each must equal the
// product of the same values made contiguous, and allocate nothing more
// on the device than the output.
func TestMatmulOperandLayouts(t *testing.T) {
	for _, dtype := range []tensor.Dtype{tensor.Float32, tensor.Float64} {
		dev := newDev(t)
		on := []tensor.Option{tensor.On(dev), dtype, tensor.WithGenerator(tensor.NewGenerator(7))}
		w := tensor.Randn([]int{6, 5}, on...)
		wide := tensor.Randn([]int{4, 12}, on...)
		batched := tensor.Randn([]int{3, 4, 6}, on...)
		cases := []struct {
			name string
			a, b *tensor.Tensor
		}{
			{"expanded row", tensor.Ones([]int{1, 6}, on...).Expand(4, 6), w},
			{"expanded scalar", tensor.Ones([]int{1, 1}, on...).Expand(4, 6), w},
			{"stepped columns", wide.Narrow(1, 0, 12).View(4, 6, 2).Select(2, 1), w},
			{"stepped right operand", tensor.Randn([]int{4, 6}, on...), tensor.Randn([]int{6, 10}, on...).View(6, 5, 2).Select(2, 0)},
			{"expanded batch", batched, w.Expand(3, 6, 5)},
			{"expanded both", tensor.Ones([]int{1, 1, 1}, on...).Expand(3, 4, 6), tensor.Ones([]int{1, 6, 1}, on...).Expand(3, 6, 5)},
		}
		for _, tc := range cases {
			t.Run(dtype.String()+"/"+tc.name, func(t *testing.T) {
				before := dev.MemoryAllocated()
				got := tc.a.Matmul(tc.b)
				outBytes := dev.MemoryAllocated() - before
				ac, bc := tc.a.Contiguous(), tc.b.Contiguous()
				want := ac.Matmul(bc)
				require.Equal(t, want.Shape(), got.Shape())
				assert.InDeltaSlice(t, want.Float64s(), got.Float64s(), 1e-5)
				assert.Equal(t, (int64(got.Nbytes())+511)/512*512, outBytes, "only the output is allocated")
				for _, x := range []*tensor.Tensor{got, ac, bc, want} {
					x.Release()
				}
			})
		}
	}
}
