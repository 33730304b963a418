package nn_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpumem/course/gpukit/device/simtest"
	"github.com/gpumem/course/gpukit/nn"
	"github.com/gpumem/course/gpukit/nn/nntest"
	"github.com/gpumem/course/gpukit/tensor"
)

func TestStateDictRoundTrip(t *testing.T) {
	dev := simtest.Card(t)
	build := func(seed uint64) *nn.Sequential {
		o := nntest.Seeded(dev, seed)
		return nn.NewSequential(nn.NewLinear(6, 4, true, o...), nn.NewBatchNorm1d(4, o...), nn.NewReLU(), nn.NewLinear(4, 2, false, o...))
	}
	a := build(1)
	// move the BatchNorm's running statistics away from their start
	y := a.Forward(tensor.Randn([]int{8, 6}, tensor.On(dev)))
	y.Release()
	path := filepath.Join(t.TempDir(), "model.safetensors")
	require.NoError(t, nn.SaveFile(path, a))

	b := build(2)
	require.NotEqual(t, nntest.StateValues(a), nntest.StateValues(b))
	require.NoError(t, nn.LoadFile(path, b))
	assert.Equal(t, nntest.StateValues(a), nntest.StateValues(b))
	var names []string
	for _, n := range nn.StateDict(b) {
		names = append(names, n.Name)
	}
	assert.Equal(t, []string{"0.weight", "0.bias", "1.weight", "1.bias", "1.running_mean", "1.running_var", "1.num_batches_tracked", "3.weight"}, names)
}

func TestLoadRefusesMismatchAndLoadsNothing(t *testing.T) {
	dev := simtest.Card(t)
	dir := t.TempDir()
	o := []tensor.Option{tensor.On(dev)}
	save := func(name string, m nn.Module) string {
		p := filepath.Join(dir, name)
		require.NoError(t, nn.SaveFile(p, m))
		return p
	}
	noBias := save("nobias.safetensors", nn.NewLinear(4, 3, false, o...))
	wide := save("wide.safetensors", nn.NewLinear(5, 3, true, o...))
	extra := save("extra.safetensors", nn.NewSequential(nn.NewLinear(4, 3, true, o...), nn.NewLinear(3, 3, true, o...)))
	good := save("good.safetensors", nn.NewLinear(4, 3, true, o...))
	raw, err := os.ReadFile(good)
	require.NoError(t, err)
	truncated := filepath.Join(dir, "truncated.safetensors")
	require.NoError(t, os.WriteFile(truncated, raw[:len(raw)-5], 0o644))

	tests := []struct {
		name, path string
		into       nn.Module
		msgs       []string
	}{
		{"missing", noBias, nn.NewLinear(4, 3, true, o...), []string{
			"nn: Error(s) in loading state_dict for Linear:\n\tMissing key(s) in state_dict: \"bias\". "}},
		{"size mismatch", wide, nn.NewLinear(4, 3, true, o...), []string{
			"size mismatch for weight: copying a param with shape torch.Size([3, 5]) from checkpoint, the shape in current model is torch.Size([3, 4])."}},
		{"unexpected", extra, nn.NewSequential(nn.NewLinear(4, 3, true, o...)), []string{
			"Error(s) in loading state_dict for Sequential:",
			`Unexpected key(s) in state_dict: "1.bias", "1.weight". `}},
		{"truncated", truncated, nn.NewLinear(4, 3, true, o...), []string{truncated, "truncated?"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := nntest.StateValues(tc.into)
			err := nn.LoadFile(tc.path, tc.into)
			require.Error(t, err)
			for _, m := range tc.msgs {
				assert.Contains(t, err.Error(), m)
			}
			assert.Equal(t, before, nntest.StateValues(tc.into), "nothing is loaded")
		})
	}
	var lerr *nn.LoadError
	require.True(t, errors.As(nn.LoadFile(noBias, nn.NewLinear(4, 3, true, o...)), &lerr))
	assert.Equal(t, []string{"bias"}, lerr.Missing)
}

// Loading into a float16 model converts, as copy_ does.
func TestLoadConvertsFloatDtypes(t *testing.T) {
	dev := simtest.Card(t)
	a := nn.NewLinear(4, 2, true, tensor.On(dev), tensor.Float64)
	path := filepath.Join(t.TempDir(), "f64.safetensors")
	require.NoError(t, nn.SaveFile(path, a))
	b := nn.NewLinear(4, 2, true, tensor.On(dev))
	require.NoError(t, nn.LoadFile(path, b))
	assert.InDeltaSlice(t, a.Weight.Float64s(), b.Weight.Float64s(), 1e-7)
}
