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
	"time"

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
//
// TODO: write it.
func Measure(stages []parallel.Stage, x *tensor.Tensor, micro int, order parallel.Order) (Step, error) {
	return Step{}, errors.New("bubble: Measure is not implemented yet")
}

// Plan returns the fewest micro-batches, from 1 to MaxMicro and at most
// the rows of x, and at that number the first order of GPipe and
// OneFOneB, whose measured step idles at most maxBubble of the cards'
// time and peaks at most budget bytes on every card, with what it
// measured. It returns an error when no plan meets both.
//
// TODO: write it.
func Plan(stages []parallel.Stage, x *tensor.Tensor, maxBubble float64, budget int64) (int, parallel.Order, Step, error) {
	return 0, 0, Step{}, errors.New("bubble: Plan is not implemented yet")
}
