package optim_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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
				dev := newDev(t)
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
