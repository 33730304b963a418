package bubble

import (
	"testing"

	"github.com/gpumem/course/gpukit/nn"
	"github.com/gpumem/course/gpukit/nn/parallel"
	"github.com/gpumem/course/gpukit/tensor"
)

// The models of the tests: 1024 wide, a batch of 512.
const (
	hiddenWidth = 1024
	hiddenRows  = 512
)

// hiddenFresh returns the stages of layers on fresh meta cards and an input
// batch on the first.
func hiddenFresh(t *testing.T, layers ...int) ([]parallel.Stage, *tensor.Tensor) {
	t.Helper()
	stages, err := MetaStages(hiddenWidth, layers...)
	if err != nil {
		t.Fatal(err)
	}
	return stages, tensor.Randn([]int{hiddenRows, hiddenWidth}, tensor.On(stages[0].Device))
}

// hiddenMeasure is the test's own measurement of a warm step: one step, then
// the peaks reset and a second step laid out by ScheduleStep, the
// gradients freed after each.
func hiddenMeasure(t *testing.T, stages []parallel.Stage, x *tensor.Tensor, micro int, order parallel.Order) Step {
	t.Helper()
	p, err := parallel.NewPipeline(stages, micro, x)
	if err != nil {
		t.Fatal(err)
	}
	p.Order = order
	for i := range 2 {
		if i == 1 {
			for _, s := range stages {
				s.Device.Synchronize()
				s.Device.ResetPeakStats()
			}
		}
		p.ForwardBackward(x, func(out *tensor.Tensor, _ int) *tensor.Tensor { return out.Sum() })
		for _, s := range stages {
			nn.ZeroGrad(s.Module, true)
		}
	}
	tl := parallel.ScheduleStep(p.Last)
	st := Step{Time: tl.Total, Bubble: tl.Bubble}
	for _, s := range stages {
		st.Peak = append(st.Peak, s.Device.MaxMemoryAllocated())
	}
	return st
}

// hiddenPlan is the test's own search, on fresh cards: the first micro-batch
// count, then order, whose measured step meets both limits.
func hiddenPlan(t *testing.T, layers []int, maxBubble float64, budget int64) (int, parallel.Order, Step, bool) {
	t.Helper()
	stages, x := hiddenFresh(t, layers...)
	for m := 1; m <= min(MaxMicro, hiddenRows); m++ {
		for _, o := range []parallel.Order{parallel.GPipe, parallel.OneFOneB} {
			st := hiddenMeasure(t, stages, x, m, o)
			ok := st.Bubble <= maxBubble
			for _, p := range st.Peak {
				ok = ok && p <= budget
			}
			if ok {
				return m, o, st, true
			}
		}
	}
	return 0, 0, Step{}, false
}
