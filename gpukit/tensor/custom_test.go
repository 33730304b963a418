package tensor_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpumem/course/gpukit/tensor"
)

func TestGeneratorState(t *testing.T) {
	g := tensor.NewGenerator(3)
	dev := newDev(t)
	s := g.State()
	a := tensor.Rand([]int{5}, tensor.On(dev), tensor.WithGenerator(g)).Float64s()
	require.NoError(t, g.SetState(s))
	assert.Equal(t, a, tensor.Rand([]int{5}, tensor.On(dev), tensor.WithGenerator(g)).Float64s())
	assert.Error(t, g.SetState([]byte("junk")))

	tensor.ManualSeed(1)
	d := tensor.DefaultGenerator().State()
	b := tensor.Rand([]int{3}, tensor.On(dev)).Float64s()
	require.NoError(t, tensor.DefaultGenerator().SetState(d))
	assert.Equal(t, b, tensor.Rand([]int{3}, tensor.On(dev)).Float64s())
}

func TestCustom(t *testing.T) {
	dev := newDev(t)
	x := tensor.FromSlice([]float64{1, 2, 3}, []int{3}, tensor.On(dev)).SetRequiresGrad(true)
	var y *tensor.Tensor
	tensor.NoGrad(func() { y = x.Mul(x) })
	y = tensor.Custom("SquareBackward", y, []*tensor.Tensor{x}, []*tensor.Tensor{x},
		func(g *tensor.Tensor, saved []*tensor.Tensor, needs []bool) []*tensor.Tensor {
			d := saved[0].Mul(2)
			defer d.Release()
			return []*tensor.Tensor{d.Mul(g)}
		})
	assert.Equal(t, "SquareBackward", y.GradFn())
	y.Sum().Backward()
	assert.Equal(t, []float64{2, 4, 6}, x.Grad().Float64s())
	assert.Contains(t, panicMsg(func() { tensor.Custom("Again", x.Mul(1), []*tensor.Tensor{x}, nil, nil) }), "already has a grad_fn")
}
