// Mutant: measures the first step, which also pays for the allocator's raw allocations.

// Package bubble measures the pipeline bubble and the per-card peaks of a
// training step split across cards, and picks the fewest micro-batches,
// and the order, that keep both under a limit.
//
// Measure; do not compute the bubble from GPipe's (S-1)/(M+S-1): the
// copies between cards and unequal stages are on the clock, and the tests
// compare your numbers with a run of gpukit's pipeline.
package bubble

import (
	"errors"
	"fmt"
	"time"

	"github.com/gpumem/course/gpukit/nn"
	"github.com/gpumem/course/gpukit/nn/parallel"
	"github.com/gpumem/course/gpukit/tensor"
)

// Step is what one pipelined training step measured.
type Step struct {
	Time   time.Duration // the step's length on the modelled clock
	Bubble float64       // the share of the cards' time spent idle, in [0, 1)
	Peak   []int64       // each stage's card: its peak allocated bytes during the step
}

// Measure runs one training step of the stages over x (the loss is the
// sum of the last stage's output) with x cut into micro micro-batches, in
// order, and returns what a warm step takes: the first step, which also
// pays for the allocator's raw allocations, is a warm-up; the second is
// measured. Afterwards the cards hold what they held before: the
// parameters' gradients are freed after each step. micro must be between
// 1 and the rows of x; otherwise Measure returns an error and runs
// nothing.
func Measure(stages []parallel.Stage, x *tensor.Tensor, micro int, order parallel.Order) (Step, error) {
	if x == nil || x.Dim() < 1 {
		return Step{}, errors.New("bubble: Measure needs an input batch")
	}
	if micro < 1 || micro > x.Size(0) {
		return Step{}, fmt.Errorf("bubble: %d micro-batches for a batch of %d rows; need 1 to %d", micro, x.Size(0), x.Size(0))
	}
	p, err := parallel.NewPipeline(stages, micro, x)
	if err != nil {
		return Step{}, err
	}
	p.Order = order
	step := func() {
		p.ForwardBackward(x, func(out *tensor.Tensor, _ int) *tensor.Tensor { return out.Sum() })
		for _, s := range stages {
			nn.ZeroGrad(s.Module, true)
		}
	}
	for _, s := range stages {
		s.Device.Synchronize()
		s.Device.ResetPeakStats()
	}
	step()
	tl := parallel.ScheduleStep(p.Last)
	st := Step{Time: tl.Total, Bubble: tl.Bubble}
	for _, s := range stages {
		st.Peak = append(st.Peak, s.Device.MaxMemoryAllocated())
	}
	return st, nil
}

// Plan returns the fewest micro-batches, from 1 to MaxMicro and at most
// the rows of x, and at that number the first order of GPipe and
// OneFOneB, whose measured step idles at most maxBubble of the cards'
// time and peaks at most budget bytes on every card, with what it
// measured. It returns an error when no plan meets both.
func Plan(stages []parallel.Stage, x *tensor.Tensor, maxBubble float64, budget int64) (int, parallel.Order, Step, error) {
	if x == nil || x.Dim() < 1 {
		return 0, 0, Step{}, errors.New("bubble: Plan needs an input batch")
	}
	for m := 1; m <= min(MaxMicro, x.Size(0)); m++ {
		for _, order := range []parallel.Order{parallel.GPipe, parallel.OneFOneB} {
			st, err := Measure(stages, x, m, order)
			if err != nil {
				return 0, 0, Step{}, err
			}
			if st.Bubble <= maxBubble && fits(st.Peak, budget) {
				return m, order, st, nil
			}
		}
	}
	return 0, 0, Step{}, fmt.Errorf("bubble: no plan up to %d micro-batches idles at most %.0f%% and peaks at most %d bytes", MaxMicro, 100*maxBubble, budget)
}

func fits(peaks []int64, budget int64) bool {
	for _, p := range peaks {
		if p > budget {
			return false
		}
	}
	return true
}
