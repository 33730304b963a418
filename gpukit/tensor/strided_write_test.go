package tensor_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/gpumem/course/gpukit/device/simtest"
	"github.com/gpumem/course/gpukit/tensor"
)

// Every op that writes into a tensor the caller gave writes through its
// strides: with one column of a [3, 2] tensor (stride 2) as destination,
// the column gets the result and the other column keeps its sentinel.
func TestWritesIntoStridedViews(t *testing.T) {
	dev := simtest.Card(t)
	on := []tensor.Option{tensor.On(dev), tensor.Float64}
	const sentinel = -7
	tests := []struct {
		name  string
		write func(dst *tensor.Tensor)
		want  []float64
	}{
		{"BatchNormRunningMean", func(dst *tensor.Tensor) {
			x := tensor.FromSlice([]float64{1, 2, 3, 3, 4, 5}, []int{2, 3}, on...)
			rv := tensor.Ones([]int{3}, on...)
			tensor.BatchNorm(x, nil, nil, dst, rv, true, 0.5, 1e-5).Release()
		}, []float64{1, 1.5, 2}}, // dst starts at 0: 0.5·0 + 0.5·mean
		{"BatchNormRunningVar", func(dst *tensor.Tensor) {
			x := tensor.FromSlice([]float64{1, 2, 3, 3, 4, 5}, []int{2, 3}, on...)
			rm := tensor.Zeros([]int{3}, on...)
			tensor.BatchNorm(x, nil, nil, rm, dst, true, 0.5, 1e-5).Release()
		}, []float64{1, 1, 1}}, // 0.5·0 + 0.5·unbiased variance 2
		{"AddOut", func(dst *tensor.Tensor) {
			tensor.AddOut(dst, tensor.Ones([]int{3}, on...), tensor.FromSlice([]float64{1, 2, 3}, []int{3}, on...))
		}, []float64{2, 3, 4}},
		{"MulOut", func(dst *tensor.Tensor) {
			tensor.MulOut(dst, tensor.FromSlice([]float64{1, 2, 3}, []int{3}, on...), tensor.FromSlice([]float64{2, 2, 2}, []int{3}, on...))
		}, []float64{2, 4, 6}},
		{"MatmulOut", func(dst *tensor.Tensor) {
			tensor.MatmulOut(dst.Unsqueeze(1), tensor.Ones([]int{3, 2}, on...), tensor.FromSlice([]float64{1, 2}, []int{2, 1}, on...))
		}, []float64{3, 3, 3}},
		{"IndexSelectOut", func(dst *tensor.Tensor) {
			tensor.IndexSelectOut(dst, tensor.FromSlice([]float64{5, 6, 7}, []int{3}, on...), 0, tensor.FromSlice([]int64{2, 0, 1}, []int{3}, tensor.On(dev)))
		}, []float64{7, 5, 6}},
		{"SubOut", func(dst *tensor.Tensor) {
			tensor.SubOut(dst, tensor.Ones([]int{3}, on...), tensor.FromSlice([]float64{1, 2, 3}, []int{3}, on...))
		}, []float64{0, -1, -2}},
		{"DivOut", func(dst *tensor.Tensor) {
			tensor.DivOut(dst, tensor.Ones([]int{3}, on...), tensor.FromSlice([]float64{1, 2, 4}, []int{3}, on...))
		}, []float64{1, 0.5, 0.25}},
		{"AddInPlace", func(dst *tensor.Tensor) { dst.AddInPlace(2) }, []float64{2, 2, 2}},
		{"SubMulDivInPlace", func(dst *tensor.Tensor) { dst.SubInPlace(3).MulInPlace(2).DivInPlace(4) }, []float64{-1.5, -1.5, -1.5}},
		{"ReluInPlace", func(dst *tensor.Tensor) {
			dst.AddInPlace(tensor.FromSlice([]float64{-1, 2, -3}, []int{3}, on...)).ReluInPlace()
		}, []float64{0, 2, 0}},
		{"SetAt", func(dst *tensor.Tensor) { dst.SetAt(8, 1) }, []float64{0, 8, 0}},
		{"ClampInPlace", func(dst *tensor.Tensor) { dst.AddInPlace(-1).ClampInPlace(-0.5, 1) }, []float64{-0.5, -0.5, -0.5}},
		{"Fill", func(dst *tensor.Tensor) { dst.Fill(9) }, []float64{9, 9, 9}},
		{"CopyFrom", func(dst *tensor.Tensor) { dst.CopyFrom(tensor.FromSlice([]float64{4, 5, 6}, []int{3}, on...)) }, []float64{4, 5, 6}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			base := tensor.FromSlice([]float64{sentinel, 0, sentinel, 0, sentinel, 0}, []int{3, 2}, on...)
			col := base.Select(1, 1) // shape [3], stride 2
			tensor.NoGrad(func() { tc.write(col) })
			assert.InDeltaSlice(t, tc.want, col.Float64s(), 1e-9)
			all := base.Float64s()
			assert.Equal(t, []float64{sentinel, sentinel, sentinel}, []float64{all[0], all[2], all[4]}, "the other column is untouched")
		})
	}
}
