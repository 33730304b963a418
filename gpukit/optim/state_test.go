package optim_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpumem/course/gpukit/device/simtest"
	"github.com/gpumem/course/gpukit/nn"
	"github.com/gpumem/course/gpukit/nn/nntest"
	"github.com/gpumem/course/gpukit/optim"
	"github.com/gpumem/course/gpukit/tensor"
)

// An optimizer restored from a file continues exactly as the original:
// same parameters after more steps, bitwise.
func TestStateFileResumesBitwise(t *testing.T) {
	dev := simtest.Card(t)
	dir := t.TempDir()
	x := tensor.Randn([]int{8, 6}, tensor.On(dev), tensor.WithGenerator(tensor.NewGenerator(5)))
	train := func(m nn.Module, opt optim.Optimizer, steps int) {
		for range steps {
			y := m.Forward(x)
			loss := y.Pow(2).Mean()
			loss.Backward()
			loss.Release()
			y.Release()
			opt.Step()
			opt.ZeroGrad(true)
		}
	}
	type saver interface {
		optim.Optimizer
		SaveFile(string) error
		LoadFile(string) error
	}
	kinds := map[string]func([]*tensor.Tensor) (saver, error){
		"Adam":  func(ps []*tensor.Tensor) (saver, error) { return optim.NewAdam(ps, optim.DefaultAdam()) },
		"AdamW": func(ps []*tensor.Tensor) (saver, error) { return optim.NewAdamW(ps, optim.DefaultAdamW()) },
		"AdamAmsgrad": func(ps []*tensor.Tensor) (saver, error) {
			c := optim.DefaultAdam()
			c.Amsgrad = true
			return optim.NewAdam(ps, c)
		},
		"SGD": func(ps []*tensor.Tensor) (saver, error) {
			return optim.NewSGD(ps, optim.SGDConfig{LR: 0.05, Momentum: 0.9, Nesterov: true})
		},
	}
	for name, build := range kinds {
		t.Run(name, func(t *testing.T) {
			newModel := func() nn.Module {
				return nn.NewSequential(nn.NewLinear(6, 5, true, nntest.Seeded(dev, 1)...), nn.NewGELU(), nn.NewLinear(5, 2, true, nntest.Seeded(dev, 2)...))
			}
			a := newModel()
			optA, err := build(nn.Parameters(a))
			require.NoError(t, err)
			train(a, optA, 3)
			mPath, oPath := filepath.Join(dir, name+"-model.safetensors"), filepath.Join(dir, name+"-opt.safetensors")
			require.NoError(t, nn.SaveFile(mPath, a))
			require.NoError(t, optA.SaveFile(oPath))

			b := newModel()
			optB, err := build(nn.Parameters(b))
			require.NoError(t, err)
			require.NoError(t, nn.LoadFile(mPath, b))
			require.NoError(t, optB.LoadFile(oPath))
			assert.Equal(t, optA.StateBytes(), optB.StateBytes())
			train(a, optA, 2)
			train(b, optB, 2)
			assert.Equal(t, nntest.StateValues(a), nntest.StateValues(b))
		})
	}
}

func TestStateFileRefusesMismatch(t *testing.T) {
	dev := simtest.Card(t)
	dir := t.TempDir()
	p := tensor.Ones([]int{3}, tensor.On(dev), tensor.RequiresGrad())
	q := tensor.Ones([]int{4}, tensor.On(dev), tensor.RequiresGrad())
	a, err := optim.NewAdam([]*tensor.Tensor{p}, optim.DefaultAdam())
	require.NoError(t, err)
	p.SetGrad(tensor.Ones([]int{3}, tensor.On(dev)))
	a.Step()
	path := filepath.Join(dir, "adam.safetensors")
	require.NoError(t, a.SaveFile(path))

	other, err := optim.NewAdam([]*tensor.Tensor{q}, optim.DefaultAdam())
	require.NoError(t, err)
	assert.ErrorContains(t, other.LoadFile(path), "size mismatch for state.0.exp_avg")
	assert.Zero(t, other.StateBytes(), "nothing loaded")
	two, err := optim.NewAdam([]*tensor.Tensor{p, q}, optim.DefaultAdam())
	require.NoError(t, err)
	assert.ErrorContains(t, two.LoadFile(path), "doesn't match the size of optimizer's group")
	w, err := optim.NewAdamW([]*tensor.Tensor{p}, optim.DefaultAdamW())
	require.NoError(t, err)
	assert.ErrorContains(t, w.LoadFile(path), `holds the state of "Adam", this optimizer is AdamW`)
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	cut := filepath.Join(dir, "cut.safetensors")
	require.NoError(t, os.WriteFile(cut, raw[:len(raw)-1], 0o644))
	err = a.LoadFile(cut)
	assert.ErrorContains(t, err, cut)
	assert.ErrorContains(t, err, "truncated?")
	assert.Equal(t, 1, a.Steps(p), "the optimizer is left as it was")
}
