package optim_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpumem/course/gpukit/device"
	"github.com/gpumem/course/gpukit/device/simtest"
	"github.com/gpumem/course/gpukit/nn"
	"github.com/gpumem/course/gpukit/nn/nntest"
	"github.com/gpumem/course/gpukit/optim"
	"github.com/gpumem/course/gpukit/tensor"
)

// threeSteps runs opt for three steps on p = [1, -2] with the gradients
// [0.5, -1], [0.1, 0.3], [-0.2, 0.4] and returns p.
func threeSteps(t *testing.T, dev *device.Device, build func([]*tensor.Tensor) (optim.Optimizer, error)) []float64 {
	t.Helper()
	p := tensor.FromSlice([]float64{1, -2}, []int{2}, tensor.On(dev)).SetRequiresGrad(true)
	opt, err := build([]*tensor.Tensor{p})
	require.NoError(t, err)
	for _, g := range [][]float64{{0.5, -1}, {0.1, 0.3}, {-0.2, 0.4}} {
		p.SetGrad(tensor.FromSlice(g, []int{2}, tensor.On(dev)))
		opt.Step()
	}
	return p.Float64s()
}

// The expected values were computed by hand from PyTorch's formulas (see
// the doc of SGD and Adam) with plain float64 arithmetic. Step one of Adam
// is easy to follow: m̂ = g, v̂ = g², so p moves by lr·sign(g): 1 → 0.9.
func TestThreeStepsByHand(t *testing.T) {
	dev := simtest.Card(t)
	sgd := func(c optim.SGDConfig) func([]*tensor.Tensor) (optim.Optimizer, error) {
		return func(ps []*tensor.Tensor) (optim.Optimizer, error) { return optim.NewSGD(ps, c) }
	}
	adam := func(c optim.AdamConfig, w bool) func([]*tensor.Tensor) (optim.Optimizer, error) {
		return func(ps []*tensor.Tensor) (optim.Optimizer, error) {
			if w {
				return optim.NewAdamW(ps, c)
			}
			return optim.NewAdam(ps, c)
		}
	}
	a := optim.DefaultAdam()
	a.LR = 0.1
	aw := a
	aw.WeightDecay = 0.1
	tests := []struct {
		name  string
		build func([]*tensor.Tensor) (optim.Optimizer, error)
		want  []float64
	}{
		// 1 - 0.1·(0.5 + 0.1 - 0.2) = 0.96
		{"SGD", sgd(optim.SGDConfig{LR: 0.1}), []float64{0.96, -1.97}},
		{"SGDMomentum", sgd(optim.SGDConfig{LR: 0.1, Momentum: 0.9, Dampening: 0.1, WeightDecay: 0.01}), []float64{0.8602632886899999, -1.80598607738}},
		{"SGDNesterov", sgd(optim.SGDConfig{LR: 0.1, Momentum: 0.9, WeightDecay: 0.01, Nesterov: true}), []float64{0.831465558191, -1.798250616382}},
		{"Adam", adam(a, false), []float64{0.7852605318354889, -1.8492092384765841}},
		{"AdamL2", adam(aw, false), []float64{0.7598997572221902, -1.8057542212511155}},
		{"AdamW", adam(aw, true), []float64{0.7583525727518424, -1.792225087042392}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.InDeltaSlice(t, tc.want, threeSteps(t, dev, tc.build), 1e-12)
		})
	}
}

func TestDefaults(t *testing.T) {
	assert.Equal(t, optim.AdamConfig{LR: 1e-3, Betas: [2]float64{0.9, 0.999}, Eps: 1e-8}, optim.DefaultAdam())
	assert.Equal(t, 0.01, optim.DefaultAdamW().WeightDecay)
	assert.Equal(t, optim.SGDConfig{LR: 1e-3}, optim.DefaultSGD())
}

// Adam's state appears at the first step, two tensors the size of each
// parameter, and nothing more at later steps.
func TestAdamStateIsLazy(t *testing.T) {
	dev := simtest.Card(t)
	l := nn.NewLinear(1024, 1024, true, tensor.On(dev))
	opt, err := optim.NewAdam(nn.Parameters(l), optim.DefaultAdam())
	require.NoError(t, err)
	assert.EqualValues(t, 4_194_304+4_096, dev.MemoryAllocated(), "creating the optimizer allocates nothing")
	x := tensor.Randn([]int{16, 1024}, tensor.On(dev))
	step := func() {
		nntest.SumBackward(l, x)
		opt.Step()
		opt.ZeroGrad(true)
	}
	simtest.WarmBlas(t, dev) // the first product's cuBLAS workspace stays for good: not optimizer state
	base := dev.MemoryAllocated()
	step()
	assert.EqualValues(t, 2*(4_194_304+4_096), dev.MemoryAllocated()-base)
	assert.EqualValues(t, 2*(4_194_304+4_096), opt.StateBytes())
	assert.Equal(t, 1, opt.Steps(l.Weight))
	step()
	assert.EqualValues(t, 2*(4_194_304+4_096), dev.MemoryAllocated()-base, "later steps add nothing")
	opt.Release()
	assert.Equal(t, base, dev.MemoryAllocated())
}

func TestSGDMomentumBufferIsLazy(t *testing.T) {
	dev := simtest.Card(t)
	p := tensor.Zeros([]int{256}, tensor.On(dev), tensor.RequiresGrad())
	plain, err := optim.NewSGD([]*tensor.Tensor{p}, optim.SGDConfig{LR: 0.1})
	require.NoError(t, err)
	mom, err := optim.NewSGD([]*tensor.Tensor{p}, optim.SGDConfig{LR: 0.1, Momentum: 0.9})
	require.NoError(t, err)
	p.SetGrad(tensor.Ones([]int{256}, tensor.On(dev)))
	base := dev.MemoryAllocated()
	plain.Step()
	assert.Equal(t, base, dev.MemoryAllocated(), "plain SGD keeps no state")
	mom.Step()
	assert.EqualValues(t, 1024, dev.MemoryAllocated()-base)
}

func TestParamGroups(t *testing.T) {
	dev := simtest.Card(t)
	a := tensor.Ones([]int{2}, tensor.On(dev), tensor.Float64, tensor.RequiresGrad())
	b := tensor.Ones([]int{2}, tensor.On(dev), tensor.Float64, tensor.RequiresGrad())
	c := tensor.Ones([]int{2}, tensor.On(dev), tensor.Float64, tensor.RequiresGrad())
	opt, err := optim.NewSGDGroups([]optim.Group[optim.SGDConfig]{
		{Params: []*tensor.Tensor{a, b}, Config: optim.SGDConfig{LR: 0.1}},
		{Params: []*tensor.Tensor{c}, Config: optim.SGDConfig{LR: 0.5}},
	})
	require.NoError(t, err)
	for _, p := range []*tensor.Tensor{a, c} { // b has no gradient: skipped
		p.SetGrad(tensor.Ones([]int{2}, tensor.On(dev), tensor.Float64))
	}
	opt.Step()
	assert.Equal(t, []float64{0.9, 0.9}, a.Float64s())
	assert.Equal(t, []float64{1, 1}, b.Float64s())
	assert.Equal(t, []float64{0.5, 0.5}, c.Float64s())
	assert.Equal(t, 2, opt.Groups())
	assert.Equal(t, []*tensor.Tensor{a, b, c}, opt.Params())
	opt.ZeroGrad(false)
	assert.Equal(t, []float64{0, 0}, a.Grad().Float64s())
	opt.ZeroGrad(true)
	assert.Nil(t, a.Grad())
}

func TestBadInput(t *testing.T) {
	dev := simtest.Card(t)
	p := tensor.Zeros([]int{2}, tensor.On(dev), tensor.RequiresGrad())
	nonLeaf := p.Mul(2)
	ps := []*tensor.Tensor{p}
	cfg := func(f func(*optim.AdamConfig)) optim.AdamConfig { c := optim.DefaultAdam(); f(&c); return c }
	tests := []struct {
		name string
		err  func() error
		msg  string
	}{
		{"empty", func() error { _, err := optim.NewAdam(nil, optim.DefaultAdam()); return err }, "optim: optimizer got an empty parameter list"},
		{"empty groups", func() error {
			_, err := optim.NewSGDGroups([]optim.Group[optim.SGDConfig]{{Config: optim.DefaultSGD()}})
			return err
		}, "optimizer got an empty parameter list"},
		{"lr", func() error { _, err := optim.NewAdam(ps, cfg(func(c *optim.AdamConfig) { c.LR = -1 })); return err }, "Invalid learning rate: -1"},
		{"beta", func() error {
			_, err := optim.NewAdam(ps, cfg(func(c *optim.AdamConfig) { c.Betas[1] = 1 }))
			return err
		}, "Invalid beta parameter at index 1: 1"},
		{"eps", func() error { _, err := optim.NewAdamW(ps, cfg(func(c *optim.AdamConfig) { c.Eps = -1 })); return err }, "Invalid epsilon value: -1"},
		{"wd", func() error { _, err := optim.NewSGD(ps, optim.SGDConfig{LR: 1, WeightDecay: -1}); return err }, "Invalid weight_decay value: -1"},
		{"momentum", func() error { _, err := optim.NewSGD(ps, optim.SGDConfig{LR: 1, Momentum: -1}); return err }, "Invalid momentum value: -1"},
		{"nesterov", func() error { _, err := optim.NewSGD(ps, optim.SGDConfig{LR: 1, Nesterov: true}); return err }, "Nesterov momentum requires a momentum and zero dampening"},
		{"non-leaf", func() error { _, err := optim.NewSGD([]*tensor.Tensor{nonLeaf}, optim.DefaultSGD()); return err }, "can't optimize a non-leaf Tensor"},
		{"twice", func() error { _, err := optim.NewSGD([]*tensor.Tensor{p, p}, optim.DefaultSGD()); return err }, "some parameters appear in more than one parameter group"},
	}
	for _, tc := range tests {
		err := tc.err()
		require.Error(t, err, tc.name)
		assert.Contains(t, err.Error(), tc.msg, tc.name)
		assert.Contains(t, err.Error(), "optim: ", tc.name)
	}
}

func TestSchedules(t *testing.T) {
	dev := simtest.Card(t)
	p := tensor.Zeros([]int{1}, tensor.On(dev), tensor.RequiresGrad())
	opt, err := optim.NewSGD([]*tensor.Tensor{p}, optim.SGDConfig{LR: 1})
	require.NoError(t, err)
	step, err := optim.NewStepLR(opt, 2, 0.5)
	require.NoError(t, err)
	var got []float64
	for range 5 {
		step.Step()
		got = append(got, step.LastLR()[0])
	}
	assert.Equal(t, []float64{1, 0.5, 0.5, 0.25, 0.25}, got)

	opt2, err := optim.NewAdam([]*tensor.Tensor{p}, optim.AdamConfig{LR: 0.1, Betas: [2]float64{0.9, 0.999}})
	require.NoError(t, err)
	cos, err := optim.NewCosineLR(opt2, 4, 0.01)
	require.NoError(t, err)
	got = nil
	for range 4 {
		cos.Step()
		got = append(got, opt2.LR(0))
	}
	mid := 0.01 + 0.09*(1+math.Cos(math.Pi/4))/2
	assert.InDeltaSlice(t, []float64{mid, 0.055, 0.01 + 0.09*(1+math.Cos(3*math.Pi/4))/2, 0.01}, got, 1e-15)

	_, err = optim.NewStepLR(opt, 0, 0.1)
	assert.ErrorContains(t, err, "step_size must be positive")
	_, err = optim.NewCosineLR(opt, 0, 0)
	assert.ErrorContains(t, err, "T_max must be positive")
}

// A contiguous parameter takes the fused kernel, a transposed one the
// composed elementwise ops: both give bitwise the same values, and the
// fused step allocates nothing once the state exists (fused=True in
// PyTorch), while the composed one holds temporaries.
func TestAdamFusedEqualsComposed(t *testing.T) {
	for _, w := range []bool{false, true} {
		dev := simtest.Card(t)
		gen := tensor.NewGenerator(3)
		init := tensor.Randn([]int{48, 64}, tensor.On(dev), tensor.WithGenerator(gen))
		dense := init.Clone().SetRequiresGrad(true)
		strided := init.T().Contiguous().T().Detach().SetRequiresGrad(true) // same values, column-major
		require.False(t, strided.IsContiguous())
		cfg := optim.DefaultAdam()
		cfg.WeightDecay = 0.05
		build := optim.NewAdam
		if w {
			build = optim.NewAdamW
		}
		fused, err := build([]*tensor.Tensor{dense}, cfg)
		require.NoError(t, err)
		composed, err := build([]*tensor.Tensor{strided}, cfg)
		require.NoError(t, err)
		for step := range 3 {
			g := tensor.Randn([]int{48, 64}, tensor.On(dev), tensor.WithGenerator(gen))
			dense.SetGrad(g.Clone())
			strided.SetGrad(g.T().Contiguous().T())
			before := dev.Stats()["allocation.all.allocated"]
			fused.Step()
			if step > 0 {
				assert.Equal(t, before, dev.Stats()["allocation.all.allocated"], "a fused step allocates nothing")
			}
			before = dev.Stats()["allocation.all.allocated"]
			composed.Step()
			assert.Greater(t, dev.Stats()["allocation.all.allocated"], before, "the composed step allocates temporaries")
			assert.Equal(t, dense.Float64s(), strided.Float64s(), "step %d, AdamW %v", step+1, w)
		}
	}
}
