package nn_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpumem/course/gpukit/device/simtest"
	"github.com/gpumem/course/gpukit/nn"
	"github.com/gpumem/course/gpukit/tensor"
	"github.com/gpumem/course/gpukit/tensor/gradcheck"
)

// GELU(approximate="tanh") is 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))
// (torch.nn.GELU's doc), with its exact gradient.
func TestGELUTanh(t *testing.T) {
	dev := simtest.Card(t)
	xs := []float64{-3, -1, -0.1, 0, 0.5, 2}
	x := tensor.FromSlice(xs, []int{6}, tensor.On(dev), tensor.Float64, tensor.RequiresGrad())
	y := (&nn.GELU{Approximate: "tanh"}).Forward(x)
	assert.Equal(t, "GeluBackward0", y.GradFn())
	for i, v := range y.Float64s() {
		want := 0.5 * xs[i] * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(xs[i]+0.044715*xs[i]*xs[i]*xs[i])))
		assert.InDelta(t, want, v, 1e-15, "x = %v", xs[i])
	}
	exact := nn.NewGELU().Forward(x)
	assert.NotEqual(t, exact.Float64s(), y.Float64s(), "the approximation differs from the erf form")
	gradcheck.Assert(t, func(in []*tensor.Tensor) *tensor.Tensor { return in[0].GeluTanh() }, x)
	r := recoverMsgOf(func() { (&nn.GELU{Approximate: "fast"}).Forward(x) })
	assert.Contains(t, r, `nn: GELU: approximate "fast"; use "none" or "tanh"`)
}

// recoverMsgOf runs fn and returns the message of what it panics with.
func recoverMsgOf(fn func()) (msg string) {
	defer func() { msg = recoverMsg(recover()) }()
	fn()
	return ""
}

// BatchNorm1d takes [N, C, L] as PyTorch's does: the statistics of each
// channel are over N and L, as for [N·L, C] rows.
func TestBatchNorm1dOnSequences(t *testing.T) {
	dev := simtest.Card(t)
	x := tensor.Randn([]int{4, 3, 5}, tensor.On(dev), tensor.Float64)
	a, b := nn.NewBatchNorm1d(3, tensor.On(dev), tensor.Float64), nn.NewBatchNorm1d(3, tensor.On(dev), tensor.Float64)
	y := a.Forward(x)
	rows := x.Permute(0, 2, 1).Reshape(20, 3)
	yr := b.Forward(rows)
	want := yr.Reshape(4, 5, 3).Permute(0, 2, 1).Contiguous()
	assert.InDeltaSlice(t, want.Float64s(), y.Float64s(), 1e-12)
	assert.InDeltaSlice(t, b.RunningMean.Float64s(), a.RunningMean.Float64s(), 1e-12)
	assert.InDeltaSlice(t, b.RunningVar.Float64s(), a.RunningVar.Float64s(), 1e-12)
	msg := recoverMsgOf(func() { a.Forward(tensor.Zeros([]int{1, 3, 1}, tensor.On(dev), tensor.Float64)) })
	assert.Contains(t, msg, "nn: BatchNorm1d: expected more than 1 value per channel when training")
	msg = recoverMsgOf(func() { a.Forward(tensor.Zeros([]int{2, 4, 2}, tensor.On(dev), tensor.Float64)) })
	assert.Contains(t, msg, "nn: BatchNorm1d: input of shape [2 4 2], expected [N, 3] or [N, 3, L]")
}

// LayerNorm over several trailing dimensions, and without the elementwise
// affine (elementwise_affine=False: no parameters at all).
func TestLayerNormShapes(t *testing.T) {
	dev := simtest.Card(t)
	x := tensor.Randn([]int{4, 2, 3}, tensor.On(dev), tensor.Float64, tensor.RequiresGrad())
	for _, affine := range []bool{true, false} {
		ln := nn.NewLayerNormShape([]int{2, 3}, affine, tensor.On(dev), tensor.Float64)
		y := ln.Forward(x)
		var w, b *tensor.Tensor
		if affine {
			require.Len(t, nn.Parameters(ln), 2)
			w, b = ln.Weight, ln.Bias
			assert.Equal(t, []int{2, 3}, w.Shape())
		} else {
			assert.Empty(t, nn.Parameters(ln), "no affine: no parameters")
			assert.Empty(t, nn.StateDict(ln))
		}
		want := tensor.LayerNorm(x, []int{2, 3}, w, b, 1e-5)
		assert.Equal(t, want.Float64s(), y.Float64s())
		// every row of 6 has mean 0
		for r := range 4 {
			var s float64
			for _, v := range y.Float64s()[6*r : 6*r+6] {
				s += v
			}
			assert.InDelta(t, 0, s, 1e-12)
		}
		loss := y.Sum()
		loss.Backward()
		assert.NotNil(t, x.Grad())
		x.SetGrad(nil)
		msg := recoverMsgOf(func() { ln.Forward(tensor.Zeros([]int{4, 3, 2}, tensor.On(dev), tensor.Float64)) })
		assert.Contains(t, msg, "nn: LayerNorm: input of shape [4 3 2], expected to end in [2 3]")
	}
}
