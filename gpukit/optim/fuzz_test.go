package optim_test

import (
	"math"
	"strings"
	"testing"

	"github.com/gpumem/course/gpukit/device/simtest"
	"github.com/gpumem/course/gpukit/nn/nntest"
	"github.com/gpumem/course/gpukit/optim"
	"github.com/gpumem/course/gpukit/tensor"
)

// FuzzLoadFile feeds LoadFile arbitrary bytes: it returns an error or
// loads a state that a step keeps finite, and never panics.
func FuzzLoadFile(f *testing.F) {
	dev := simtest.Card(f)
	p := tensor.Ones([]int{3}, tensor.On(dev), tensor.RequiresGrad())
	adam, err := optim.NewAdam([]*tensor.Tensor{p}, optim.DefaultAdam())
	if err != nil {
		f.Fatal(err)
	}
	sgd, err := optim.NewSGD([]*tensor.Tensor{p}, optim.SGDConfig{LR: 0.1, Momentum: 0.9})
	if err != nil {
		f.Fatal(err)
	}
	p.SetGrad(tensor.Ones([]int{3}, tensor.On(dev)))
	adam.Step()
	sgd.Step()
	nntest.AddSavedFile(f, adam.SaveFile)
	nntest.AddSavedFile(f, sgd.SaveFile)
	f.Fuzz(func(t *testing.T, b []byte) {
		path := nntest.WriteTemp(t, "state.safetensors", b)
		q := tensor.Ones([]int{3}, tensor.On(dev), tensor.RequiresGrad())
		defer q.Release()
		a, _ := optim.NewAdam([]*tensor.Tensor{q}, optim.DefaultAdam())
		s, _ := optim.NewSGD([]*tensor.Tensor{q}, optim.SGDConfig{LR: 0.1, Momentum: 0.9})
		defer a.Release()
		defer s.Release()
		errA, errS := a.LoadFile(path), s.LoadFile(path)
		if errA != nil && errS != nil {
			return
		}
		q.SetGrad(tensor.Ones([]int{3}, tensor.On(dev)))
		a.Step()
		s.Step()
		for _, v := range q.Float64s() {
			if v != v {
				t.Fatalf("a loaded state made the parameter NaN: %v", q.Float64s())
			}
		}
	})
}

// FuzzConfig builds optimizers from arbitrary hyperparameters: each is
// refused with optim's error, or accepted only when every setting is
// finite, and a step never panics.
func FuzzConfig(f *testing.F) {
	dev := simtest.Card(f)
	f.Add(0.1, 0.9, 0.0, 0.01, true, 0.9, 0.999, 1e-8)
	f.Add(math.NaN(), math.Inf(1), -1.0, 0.0, false, 1.0, -0.5, 0.0)
	f.Fuzz(func(t *testing.T, lr, momentum, dampening, wd float64, nesterov bool, b1, b2, eps float64) {
		p := tensor.Ones([]int{2}, tensor.On(dev), tensor.RequiresGrad())
		defer p.Release()
		p.SetGrad(tensor.Ones([]int{2}, tensor.On(dev)))
		finite := func(vs ...float64) bool {
			for _, v := range vs {
				if math.IsNaN(v) || math.IsInf(v, 0) {
					return false
				}
			}
			return true
		}
		check := func(o interface {
			optim.Optimizer
			Release()
		}, err error, vs ...float64) {
			if err != nil {
				if !strings.HasPrefix(err.Error(), "optim: ") {
					t.Fatalf("error without the package's prefix: %v", err)
				}
				return
			}
			if !finite(vs...) {
				t.Fatalf("accepted a non-finite setting among %v", vs)
			}
			o.Step()
			o.Release()
		}
		s, err := optim.NewSGD([]*tensor.Tensor{p}, optim.SGDConfig{LR: lr, Momentum: momentum, Dampening: dampening, WeightDecay: wd, Nesterov: nesterov})
		check(s, err, lr, momentum, dampening, wd)
		a, err := optim.NewAdamW([]*tensor.Tensor{p}, optim.AdamConfig{LR: lr, Betas: [2]float64{b1, b2}, Eps: eps, WeightDecay: wd})
		check(a, err, lr, b1, b2, eps, wd)
	})
}
