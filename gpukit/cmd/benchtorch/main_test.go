package main

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gpumem/course/gpukit/device/simtest"
	"github.com/gpumem/course/gpukit/nn"
	"github.com/gpumem/course/gpukit/optim"
	"github.com/gpumem/course/gpukit/tensor"
)

// TestRestorablePutsBackTrainedParameters checks that the reset of a
// training case undoes what an optimizer step changed, so every timed step
// computes on the same values.
func TestRestorablePutsBackTrainedParameters(t *testing.T) {
	dev := simtest.Card(t)
	on, gen := tensor.On(dev), tensor.WithGenerator(tensor.NewGenerator(1))
	m := nn.NewLinear(8, 4, true, on, gen)
	defer nn.Release(m)
	x := tensor.Randn([]int{2, 8}, on, gen)
	defer x.Release()
	opt, err := optim.NewAdam(nn.Parameters(m), optim.DefaultAdam())
	require.NoError(t, err)
	defer opt.Release()
	values := func() (vs [][]float64) {
		for _, p := range nn.Parameters(m) {
			vs = append(vs, p.Float64s())
		}
		return vs
	}
	before := values()
	reset, forget := restorable(nn.Parameters(m))
	defer forget()
	y := m.Forward(x)
	l := y.Sum()
	l.Backward()
	opt.Step()
	releaseAll(l, y)()
	require.NotEqual(t, before, values())
	reset()
	require.Equal(t, before, values())
}
