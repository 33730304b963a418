package sketch

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/gpumem/course/gpukit/device/simtest"
	"github.com/gpumem/course/gpukit/tensor"
)

// Exercise 08-sklinear (exercises/08-sklinear/README.md) asks for this
// layer's forward and backward with a bounded peak: the forward may hold,
// beside y [B, out], one [B, out] and one [B, k] tensor; the backward,
// beside the gradients it returns, one [B, in] and one [B, k] tensor.
// This package ships in the student edition, so its sketchedForward and
// sketchedBackward must not meet those budgets: they keep the plain form
// (new tensors for every product, per-term factor gradients stacked), and
// copying them loses the exercise's peak tests (the reference's mutant
// solutions/08-sklinear/mutants/library-copy.patch is that copy).
//
// TestSourceDoesNotAnswerExercise08 runs them on the shapes and needs of
// the exercise's peak tests, public and hidden, and fails when one of
// them stays within its budget. Make this package's layer leaner and the
// exercise must ask for something else first (issue 36).
func TestSourceDoesNotAnswerExercise08(t *testing.T) {
	dev := simtest.Card(t, simtest.BlasWorkspace())
	opts := []tensor.Option{tensor.On(dev), tensor.WithGenerator(tensor.NewGenerator(1))}
	type layer struct{ B, in, out, L, k int }
	factors := func(c layer) (x, s1s, s2s, u1s, u2s, bias *tensor.Tensor) {
		return tensor.Randn([]int{c.B, c.in}, opts...), tensor.Randn([]int{c.L, c.in, c.k}, opts...),
			tensor.Randn([]int{c.L, c.k, c.out}, opts...), tensor.Randn([]int{c.L, c.k, c.out}, opts...),
			tensor.Randn([]int{c.L, c.in, c.k}, opts...), tensor.Randn([]int{c.out}, opts...)
	}
	const f32 = 4

	for _, c := range []layer{{32, 128, 256, 3, 16}, {8, 384, 128, 2, 64}, {32, 256, 128, 2, 16}, {16, 128, 256, 4, 32}} {
		x, s1s, s2s, u1s, u2s, bias := factors(c)
		base := dev.MemoryAllocated()
		dev.ResetPeakStats()
		var y *tensor.Tensor
		tensor.NoGrad(func() { y = sketchedForward(x, s1s, s2s, u1s, u2s, bias) })
		peak := dev.MaxMemoryAllocated() - base
		assert.Greater(t, peak, int64(2*c.B*c.out+c.B*c.k)*f32,
			"%+v: sketchedForward's peak is within exercise 08-sklinear's budget (y, one [B, out] and one [B, k]): copying it answers the exercise", c)
		release(y, x, s1s, s2s, u1s, u2s, bias)
	}

	for _, c := range []layer{{32, 128, 256, 3, 16}, {16, 256, 128, 4, 32}} {
		x, s1s, s2s, u1s, u2s, bias := factors(c)
		g := tensor.Randn([]int{c.B, c.out}, opts...)
		sizes := []int64{int64(c.B * c.in), int64(c.L * c.in * c.k), int64(c.L * c.k * c.out), int64(c.out)}
		for _, needs := range [][]bool{
			{true, true, true, true}, {true, true, false, false}, {false, false, true, true}, // the public test's
			{false, true, true, false}, {true, false, false, true}, {false, false, true, false}, // the hidden test's
		} {
			base := dev.MemoryAllocated()
			dev.ResetPeakStats()
			var grads []*tensor.Tensor
			tensor.NoGrad(func() { grads = sketchedBackward(g, []*tensor.Tensor{x, s1s, s2s, u1s, u2s}, needs) })
			peak := dev.MaxMemoryAllocated() - base
			budget := int64(c.B*c.in + c.B*c.k)
			for i, need := range needs {
				if need {
					budget += sizes[i]
				}
			}
			assert.Greater(t, peak, budget*f32, "%s: sketchedBackward's peak is within exercise 08-sklinear's budget (the gradients, one [B, in] and one [B, k]): copying it answers the exercise",
				fmt.Sprintf("%+v, needs %v", c, needs))
			release(grads...)
		}
		release(g, x, s1s, s2s, u1s, u2s, bias)
	}
}
