package optim_test

import (
	"testing"
	"time"

	"github.com/gpumem/course/gpukit/device/simtest"
	"github.com/gpumem/course/gpukit/nn"
	"github.com/gpumem/course/gpukit/optim"
	"github.com/gpumem/course/gpukit/tensor"
)

// BenchmarkTrainStepMLP times one training step (forward, MSE loss,
// backward, Adam step, ZeroGrad) of a 4-layer MLP, 1024 wide, batch 256,
// on the sim device, and in the same run the 11 matmuls that step
// contains (4 forward, 4 weight gradients, 3 input gradients), each
// alone into a preallocated output with the layouts backward uses. It
// reports step/matmuls: the overhead of everything that is not a matmul
// kernel (the target is at most 1.3).
func BenchmarkTrainStepMLP(b *testing.B) {
	const width, batch, layers = 1024, 256, 4
	dev := simtest.Card(b)
	var mods []nn.Module
	for i := range layers {
		mods = append(mods, nn.NewLinear(width, width, true, tensor.On(dev)))
		if i < layers-1 {
			mods = append(mods, nn.NewReLU())
		}
	}
	m := nn.NewSequential(mods...)
	opt, err := optim.NewAdam(nn.Parameters(m), optim.DefaultAdam())
	if err != nil {
		b.Fatal(err)
	}
	x := tensor.Randn([]int{batch, width}, tensor.On(dev))
	target := tensor.Randn([]int{batch, width}, tensor.On(dev))
	step := func() {
		y := m.Forward(x)
		loss := tensor.MSELoss(y, target)
		y.Release()
		loss.Backward()
		loss.Release()
		opt.Step()
		opt.ZeroGrad(true)
	}
	step() // Adam's state

	// the step's matmuls alone
	w := tensor.Randn([]int{width, width}, tensor.On(dev))
	act := tensor.Randn([]int{batch, width}, tensor.On(dev))
	outAct := tensor.Empty([]int{batch, width}, tensor.On(dev))
	outW := tensor.Empty([]int{width, width}, tensor.On(dev))
	wt, actT := w.T(), act.T()
	matmuls := func() {
		for range layers {
			tensor.MatmulOut(outAct, act, wt) // forward: x Wᵀ
			tensor.MatmulOut(outW, actT, act) // weight gradient: gᵀ x
		}
		for range layers - 1 {
			tensor.MatmulOut(outAct, act, w) // input gradient: g W
		}
	}
	matmuls()

	var stepTime, mmTime time.Duration
	b.ResetTimer()
	for b.Loop() {
		t0 := time.Now()
		step()
		stepTime += time.Since(t0)
		b.StopTimer()
		t1 := time.Now()
		matmuls()
		mmTime += time.Since(t1)
		b.StartTimer()
	}
	b.ReportMetric(float64(mmTime.Nanoseconds())/float64(b.N), "matmul-ns/op")
	b.ReportMetric(float64(stepTime)/float64(mmTime), "step/matmuls")
}
