package main

import (
	"strconv"
	"strings"
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

// TestStreamBandwidth checks that -stream measures STREAM's four kernels
// in STREAM's order, each a positive rate, and that they computed what
// STREAM's kernels compute (streamBandwidth checks the arrays after), on
// a length with a tail past the vector loops'.
func TestStreamBandwidth(t *testing.T) {
	var out strings.Builder
	require.NoError(t, streamBandwidth(&out, 4096+7, 1))
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.Len(t, lines, 4, out.String())
	for i, name := range []string{"copy", "scale", "add", "triad"} {
		fields := strings.Split(lines[i], "\t")
		require.Len(t, fields, 2, lines[i])
		require.Equal(t, name, fields[0])
		rate, err := strconv.ParseFloat(fields[1], 64)
		require.NoError(t, err)
		require.Greater(t, rate, 0.0, lines[i])
	}
}
