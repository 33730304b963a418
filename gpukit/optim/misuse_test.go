package optim_test

import (
	"errors"
	"math"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpumem/course/gpukit/alloc"
	"github.com/gpumem/course/gpukit/device/simtest"
	"github.com/gpumem/course/gpukit/nn"
	"github.com/gpumem/course/gpukit/nn/safetensors"
	"github.com/gpumem/course/gpukit/optim"
	"github.com/gpumem/course/gpukit/tensor"
)

// Every optimizer configuration allocates its state at the first step and
// nothing more afterwards: allocated memory is flat from step 2 on (SGD
// with Nesterov momentum once leaked one parameter-sized tensor a step).
func TestOptimizerMemoryIsFlatAfterFirstStep(t *testing.T) {
	adamW := optim.DefaultAdamW()
	adamL2 := optim.DefaultAdam()
	adamL2.WeightDecay = 0.1
	amsgrad := adamW
	amsgrad.Amsgrad = true
	tests := map[string]func([]*tensor.Tensor) (optim.Optimizer, error){
		"SGD": func(ps []*tensor.Tensor) (optim.Optimizer, error) { return optim.NewSGD(ps, optim.SGDConfig{LR: 0.1}) },
		"SGDWeightDecay": func(ps []*tensor.Tensor) (optim.Optimizer, error) {
			return optim.NewSGD(ps, optim.SGDConfig{LR: 0.1, WeightDecay: 0.1})
		},
		"SGDMomentum": func(ps []*tensor.Tensor) (optim.Optimizer, error) {
			return optim.NewSGD(ps, optim.SGDConfig{LR: 0.1, Momentum: 0.9, Dampening: 0.1})
		},
		"SGDNesterov": func(ps []*tensor.Tensor) (optim.Optimizer, error) {
			return optim.NewSGD(ps, optim.SGDConfig{LR: 0.1, Momentum: 0.9, Nesterov: true})
		},
		"SGDNesterovWD": func(ps []*tensor.Tensor) (optim.Optimizer, error) {
			return optim.NewSGD(ps, optim.SGDConfig{LR: 0.1, Momentum: 0.9, Nesterov: true, WeightDecay: 0.1})
		},
		"Adam":   func(ps []*tensor.Tensor) (optim.Optimizer, error) { return optim.NewAdam(ps, optim.DefaultAdam()) },
		"AdamL2": func(ps []*tensor.Tensor) (optim.Optimizer, error) { return optim.NewAdam(ps, adamL2) },
		"AdamW":  func(ps []*tensor.Tensor) (optim.Optimizer, error) { return optim.NewAdamW(ps, adamW) },
	}
	for name, build := range tests {
		for _, dt := range []tensor.Dtype{tensor.Float32, tensor.Float16} {
			t.Run(name+"/"+dt.String(), func(t *testing.T) {
				dev := simtest.Card(t)
				p := tensor.Ones([]int{1 << 12}, tensor.On(dev), dt, tensor.RequiresGrad())
				opt, err := build([]*tensor.Tensor{p})
				require.NoError(t, err)
				var after []int64
				for range 6 {
					p.SetGrad(tensor.Ones([]int{1 << 12}, tensor.On(dev), dt))
					opt.Step()
					opt.ZeroGrad(true)
					after = append(after, dev.MemoryAllocated())
				}
				for i := 2; i < len(after); i++ {
					assert.Equal(t, after[1], after[i], "allocated after step %d (every step: %v)", i+1, after)
				}
			})
		}
	}
}

// Settings that would make the update NaN, or stall it, are refused with
// the package's error, at construction and when loaded from a file.
func TestInvalidSettingsAreRefused(t *testing.T) {
	dev := simtest.Card(t)
	p := tensor.Ones([]int{2}, tensor.On(dev), tensor.RequiresGrad())
	nan, inf := math.NaN(), math.Inf(1)
	sgd := []struct {
		name string
		cfg  optim.SGDConfig
		want string
	}{
		{"MomentumNaN", optim.SGDConfig{LR: 0.1, Momentum: nan}, "Invalid momentum value: NaN"},
		{"MomentumInf", optim.SGDConfig{LR: 0.1, Momentum: inf}, "Invalid momentum value: +Inf"},
		{"DampeningNegative", optim.SGDConfig{LR: 0.1, Momentum: 0.9, Dampening: -1}, "Invalid dampening value: -1"},
		{"DampeningNaN", optim.SGDConfig{LR: 0.1, Momentum: 0.9, Dampening: nan}, "Invalid dampening value: NaN"},
		{"WeightDecayInf", optim.SGDConfig{LR: 0.1, WeightDecay: inf}, "Invalid weight_decay value: +Inf"},
	}
	for _, tc := range sgd {
		t.Run("SGD"+tc.name, func(t *testing.T) {
			_, err := optim.NewSGD([]*tensor.Tensor{p}, tc.cfg)
			require.Error(t, err)
			assert.Contains(t, err.Error(), "optim: ")
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	adam := []struct {
		name string
		edit func(*optim.AdamConfig)
		want string
	}{
		{"EpsInf", func(c *optim.AdamConfig) { c.Eps = inf }, "Invalid epsilon value: +Inf"},
		{"WeightDecayInf", func(c *optim.AdamConfig) { c.WeightDecay = inf }, "Invalid weight_decay value: +Inf"},
	}
	for _, tc := range adam {
		t.Run("Adam"+tc.name, func(t *testing.T) {
			c := optim.DefaultAdam()
			tc.edit(&c)
			_, err := optim.NewAdam([]*tensor.Tensor{p}, c)
			assert.ErrorContains(t, err, tc.want)
		})
	}
	opt, err := optim.NewSGD([]*tensor.Tensor{p}, optim.SGDConfig{LR: 0.1})
	require.NoError(t, err)
	for _, lr := range []float64{nan, inf, -1} {
		err := optimError(func() { opt.SetLR(0, lr) })
		assert.ErrorContains(t, err, "optim: SetLR: Invalid learning rate")
	}
	assert.Equal(t, 0.1, opt.LR(0), "a refused SetLR changes nothing")
	assert.ErrorContains(t, optimError(func() { opt.LR(3) }), "optim: parameter group 3 out of range [0, 1)")

	for _, gamma := range []float64{nan, -0.5, inf} {
		_, err := optim.NewStepLR(opt, 1, gamma)
		assert.ErrorContains(t, err, "optim: StepLR: Invalid gamma", "gamma %v", gamma)
	}
	for _, eta := range []float64{nan, -1, inf} {
		_, err := optim.NewCosineLR(opt, 5, eta)
		assert.ErrorContains(t, err, "optim: CosineAnnealingLR: Invalid eta_min", "eta_min %v", eta)
	}
}

// optimError runs fn and returns the *optim.Error it panics with.
func optimError(fn func()) (err error) {
	defer func() {
		r := recover()
		e, ok := r.(*optim.Error)
		if !ok {
			panic(r)
		}
		err = e
	}()
	fn()
	return nil
}

// A state file whose values PyTorch's update would turn into NaN (a
// negative, NaN or huge step; a negative or NaN exp_avg_sq; a NaN momentum
// buffer) is refused, and the optimizer is left as it was.
func TestLoadFileRefusesCorruptValues(t *testing.T) {
	dev := simtest.Card(t)
	dir := t.TempDir()
	p := tensor.Ones([]int{3}, tensor.On(dev), tensor.RequiresGrad())
	a, err := optim.NewAdam([]*tensor.Tensor{p}, optim.DefaultAdam())
	require.NoError(t, err)
	s, err := optim.NewSGD([]*tensor.Tensor{p}, optim.SGDConfig{LR: 0.1, Momentum: 0.9})
	require.NoError(t, err)
	p.SetGrad(tensor.Ones([]int{3}, tensor.On(dev)))
	a.Step()
	s.Step()
	adamPath, sgdPath := filepath.Join(dir, "adam.safetensors"), filepath.Join(dir, "sgd.safetensors")
	require.NoError(t, a.SaveFile(adamPath))
	require.NoError(t, s.SaveFile(sgdPath))
	nan := math.NaN()
	tests := []struct {
		name, from, field string
		values            []float64
		want              string
	}{
		{"StepNegative", adamPath, "state.0.step", []float64{-1}, "state.0.step is -1"},
		{"StepNaN", adamPath, "state.0.step", []float64{nan}, "state.0.step is NaN"},
		{"StepHuge", adamPath, "state.0.step", []float64{1 << 60}, "state.0.step is 1.152921504606847e+18"},
		{"StepFraction", adamPath, "state.0.step", []float64{1.5}, "state.0.step is 1.5"},
		{"ExpAvgSqNegative", adamPath, "state.0.exp_avg_sq", []float64{1, -1, 1}, "state.0.exp_avg_sq[1] is -1; exp_avg_sq, a running mean of squares or its maximum, is never negative"},
		{"ExpAvgNaN", adamPath, "state.0.exp_avg", []float64{1, 1, nan}, "state.0.exp_avg[2] is NaN"},
		{"MomentumBufferInf", sgdPath, "state.0.momentum_buffer", []float64{math.Inf(-1), 0, 0}, "state.0.momentum_buffer[0] is -Inf"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			bad := rewrite(t, tc.from, tc.field, tc.values)
			var err error
			if tc.from == adamPath {
				err = a.LoadFile(bad)
				assert.Equal(t, 1, a.Steps(p), "the optimizer is left as it was")
			} else {
				err = s.LoadFile(bad)
			}
			assert.ErrorContains(t, err, "optim: loading ")
			assert.ErrorContains(t, err, tc.want)
		})
	}
}

// rewrite copies the state file at path with field's values replaced.
func rewrite(t *testing.T, path, field string, values []float64) string {
	t.Helper()
	f, err := safetensors.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var named []nn.Named
	for _, info := range f.Tensors {
		h, err := f.Load(info)
		require.NoError(t, err)
		defer h.Release()
		if info.Name == field {
			h = tensor.FromSlice(values, info.Shape, tensor.OnHost(false), h.Dtype())
			defer h.Release()
		}
		named = append(named, nn.Named{Name: info.Name, Tensor: h})
	}
	out := filepath.Join(t.TempDir(), "bad.safetensors")
	require.NoError(t, nn.SaveTensors(out, named, f.Metadata))
	return out
}

// FindBatchSize returns a plain error from step (it stops the search),
// refuses a nil step or device, and searches up to math.MaxInt without
// overflowing.
func TestFindBatchSizeMisuse(t *testing.T) {
	dev := simtest.Card(t)
	missing := errors.New("dataset missing")
	res, err := optim.FindBatchSize(dev, 64, 0, func(batch int) error {
		if batch == 4 {
			return missing
		}
		return nil
	})
	assert.ErrorIs(t, err, missing)
	assert.ErrorContains(t, err, "optim: FindBatchSize: batch 4: dataset missing")
	assert.Equal(t, 2, res.Batch)

	_, err = optim.FindBatchSize(dev, 64, 0, nil)
	assert.ErrorContains(t, err, "optim: FindBatchSize: step is nil")
	_, err = optim.FindBatchSize(nil, 64, 0, func(int) error { return nil })
	assert.ErrorContains(t, err, "optim: FindBatchSize: dev is nil")

	done := make(chan struct{})
	go func() {
		defer close(done)
		res, err = optim.FindBatchSize(dev, math.MaxInt, 0, func(batch int) error {
			if batch > 1000 {
				return &alloc.OutOfMemoryError{Requested: int64(batch)}
			}
			return nil
		})
	}()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("FindBatchSize(dev, math.MaxInt, ...) did not return")
	}
	require.NoError(t, err)
	assert.Equal(t, 1000, res.Batch)

	res, err = optim.FindBatchSize(dev, math.MaxInt, 0, func(int) error { return nil })
	require.NoError(t, err)
	assert.Equal(t, math.MaxInt, res.Batch, "every batch passes: the largest is maxBatch")
	assert.Len(t, res.Tries, 64)
}

// Adam and AdamW with amsgrad normalise by the running maximum of
// exp_avg_sq (torch/optim/adam.py, _single_tensor_adam): checked against
// that formula written out in float64, on gradients whose second moment
// falls after the first step, so that the maximum matters. The state
// holds a third tensor, max_exp_avg_sq.
func TestAmsgrad(t *testing.T) {
	grads := [][]float64{{0.5, -1}, {0.1, 0.3}, {-0.2, 0.4}}
	for _, decoupled := range []bool{false, true} {
		c := optim.DefaultAdam()
		// β2 = 0.5 lets exp_avg_sq fall when the gradients shrink
		c.LR, c.WeightDecay, c.Amsgrad, c.Betas[1] = 0.1, 0.1, true, 0.5
		// reference: PyTorch's update, one element at a time
		want := []float64{1, -2}
		m, v, vmax := make([]float64, 2), make([]float64, 2), make([]float64, 2)
		for step, g := range grads {
			n := float64(step + 1)
			for i := range want {
				gi := g[i]
				if decoupled {
					want[i] *= 1 - c.LR*c.WeightDecay
				} else {
					gi += c.WeightDecay * want[i]
				}
				m[i] = c.Betas[0]*m[i] + (1-c.Betas[0])*gi
				v[i] = c.Betas[1]*v[i] + (1-c.Betas[1])*gi*gi
				vmax[i] = math.Max(vmax[i], v[i])
				denom := math.Sqrt(vmax[i])/math.Sqrt(1-math.Pow(c.Betas[1], n)) + c.Eps
				want[i] -= c.LR / (1 - math.Pow(c.Betas[0], n)) * m[i] / denom
			}
		}
		plain := c
		plain.Amsgrad = false
		dev := simtest.Card(t)
		build := func(c optim.AdamConfig) func([]*tensor.Tensor) (optim.Optimizer, error) {
			return func(ps []*tensor.Tensor) (optim.Optimizer, error) {
				if decoupled {
					return optim.NewAdamW(ps, c)
				}
				return optim.NewAdam(ps, c)
			}
		}
		got := threeSteps(t, dev, build(c))
		assert.InDeltaSlice(t, want, got, 1e-12, "decoupled %v", decoupled)
		assert.NotEqual(t, threeSteps(t, dev, build(plain)), got, "the maximum changed the result")
	}
	dev := simtest.Card(t)
	p := tensor.Ones([]int{256}, tensor.On(dev), tensor.RequiresGrad())
	c := optim.DefaultAdam()
	c.Amsgrad = true
	opt, err := optim.NewAdam([]*tensor.Tensor{p}, c)
	require.NoError(t, err)
	p.SetGrad(tensor.Ones([]int{256}, tensor.On(dev)))
	opt.Step()
	assert.EqualValues(t, 3*1024, opt.StateBytes(), "exp_avg, exp_avg_sq and max_exp_avg_sq")
}

func TestScheduleWithoutOptimizer(t *testing.T) {
	var sgd *optim.SGD
	for _, opt := range []optim.Optimizer{nil, sgd} {
		_, err := optim.NewStepLR(opt, 1, 0.5)
		assert.EqualError(t, err, "optim: a learning-rate schedule needs an optimizer, got nil")
		_, err = optim.NewCosineLR(opt, 1, 0)
		assert.EqualError(t, err, "optim: a learning-rate schedule needs an optimizer, got nil")
	}
}
