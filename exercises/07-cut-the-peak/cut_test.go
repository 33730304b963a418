package cutpeak

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpumem/course/gpukit/device/simtest"
	"github.com/gpumem/course/gpukit/nn"
	"github.com/gpumem/course/gpukit/optim"
	"github.com/gpumem/course/gpukit/tensor"
)

func TestPeakCut(t *testing.T) {
	base, err := Peak(512, 8, 8192, BaselineStep)
	require.NoError(t, err)
	got, err := Peak(512, 8, 8192, TrainStep)
	require.NoError(t, err)
	t.Logf("baseline peak %d bytes, TrainStep peak %d bytes (%.0f%%)", base, got, 100*float64(got)/float64(base))
	assert.LessOrEqual(t, got, base*36/100)
}

// The public twin of the grader's TestLossClose, on another small model
// and other batches: two steps of TrainStep give the losses of
// BaselineStep within 1%.
func TestLossMatchesBaseline(t *testing.T) {
	run := func(step func(*Model, *optim.Adam, *tensor.Tensor, *tensor.Tensor) (*tensor.Tensor, error)) []float64 {
		// A simulated card with values (ClassroomCard's tensors carry
		// shapes only).
		dev := simtest.Card(t)
		m := NewModel(dev, 24, 2, 9)
		opt := NewOptimizer(m)
		gen := tensor.NewGenerator(11)
		var ls []float64
		for range 2 {
			x := tensor.Randn([]int{48, 24}, tensor.On(dev), tensor.WithGenerator(gen))
			y := tensor.Randn([]int{48, 24}, tensor.On(dev), tensor.WithGenerator(gen))
			loss, err := step(m, opt, x, y)
			require.NoError(t, err)
			require.NotNil(t, loss)
			ls = append(ls, loss.Item())
			loss.Release()
			x.Release()
			y.Release()
		}
		return ls
	}
	want, got := run(BaselineStep), run(TrainStep)
	for i := range want {
		assert.InEpsilon(t, want[i], got[i], 0.01, "loss of step %d", i+1)
	}
}

// The public twin of the grader's TestReleasesEverything, on another
// shape: after a step only the parameters, Adam's state and the batch are
// allocated, and no parameter holds a gradient.
func TestReleasesAfterStep(t *testing.T) {
	dev := ClassroomCard()
	m := NewModel(dev, 128, 2, 3)
	opt := NewOptimizer(m)
	x := tensor.Zeros([]int{512, 128}, tensor.On(dev))
	y := tensor.Zeros([]int{512, 128}, tensor.On(dev))
	for range 2 {
		loss, err := TrainStep(m, opt, x, y)
		require.NoError(t, err)
		require.NotNil(t, loss)
		loss.Release()
	}
	tensor.CollectGarbage()
	want := nn.Nbytes(m) + opt.StateBytes() + x.Nbytes() + y.Nbytes()
	assert.Equal(t, want, dev.MemoryAllocated(), "allocated after a step: parameters, Adam's state and the batch")
	for _, p := range nn.Parameters(m) {
		assert.True(t, p.Grad() == nil, "a parameter still holds its gradient after the step (ZeroGrad?)")
	}
}
