package cutpeak

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpumem/course/gpukit/device"
	"github.com/gpumem/course/gpukit/device/simtest"
	"github.com/gpumem/course/gpukit/nn"
	"github.com/gpumem/course/gpukit/optim"
	"github.com/gpumem/course/gpukit/tensor"
	"github.com/gpumem/course/gpukit/tensor/tensortest"
)

func TestPeakCut(t *testing.T) {
	tensortest.NoCollector(t)
	checkPeakCut(t, 512, 8, 8192)
}

func TestPeakCutOtherShape(t *testing.T) {
	tensortest.NoCollector(t)
	checkPeakCut(t, 256, 12, 16384)
}

// checkPeakCut compares the steady-state peak of TrainStep with the
// baseline's on a model of the given shape, and checks that every block
// ran on the whole batch: the README allows any technique that computes
// the step on the whole batch at once (checkpointing, mixed precision,
// recomputing by hand), not splitting it into micro-batches.
func checkPeakCut(t *testing.T, width, depth, batch int) {
	t.Helper()
	base, err := Peak(width, depth, batch, BaselineStep)
	require.NoError(t, err)
	got, rows, err := peakWatched(width, depth, batch, TrainStep)
	require.NoError(t, err)
	t.Logf("baseline peak %d bytes, TrainStep peak %d bytes (%.0f%%)", base, got, 100*float64(got)/float64(base))
	assert.LessOrEqual(t, got, base*36/100, "the peak of a steady-state step is at most 36% of the baseline's")
	require.NotEmpty(t, rows, "TrainStep runs the model's blocks")
	for _, n := range rows {
		if n != batch {
			t.Errorf("a block ran on %d rows of the batch of %d: the step must run on the whole batch at once (no micro-batches, no gradient accumulation)", n, batch)
			break
		}
	}
}

// watched is a block that notes the rows of every input it runs on.
type watched struct {
	nn.Module
	rows *[]int
}

func (w watched) Forward(x *tensor.Tensor) *tensor.Tensor {
	*w.rows = append(*w.rows, x.Size(0))
	return w.Module.Forward(x)
}

// peakWatched is Peak with the model's blocks watched: the peak of the
// second of two steps, and the rows each block call saw.
func peakWatched(width, depth, batch int, step func(*Model, *optim.Adam, *tensor.Tensor, *tensor.Tensor) (*tensor.Tensor, error)) (int64, []int, error) {
	dev := ClassroomCard()
	m := NewModel(dev, width, depth, 1)
	var rows []int
	for i, b := range m.Blocks {
		m.Blocks[i] = watched{b, &rows}
	}
	opt := NewOptimizer(m)
	x := tensor.Zeros([]int{batch, width}, tensor.On(dev))
	y := tensor.Zeros([]int{batch, width}, tensor.On(dev))
	for i := range 2 {
		if i == 1 {
			dev.ResetPeakStats()
		}
		loss, err := step(m, opt, x, y)
		if err != nil {
			return 0, rows, err
		}
		loss.Release()
	}
	return dev.MaxMemoryAllocated(), rows, nil
}

func simDev(t *testing.T) *device.Device {
	t.Helper()
	return simtest.Card(t)
}

// losses trains a small model for three steps with step and returns the
// losses and the final parameters.
func losses(t *testing.T, step func(*Model, *optim.Adam, *tensor.Tensor, *tensor.Tensor) (*tensor.Tensor, error)) ([]float64, [][]float64) {
	dev := simDev(t)
	m := NewModel(dev, 32, 3, 5)
	opt := NewOptimizer(m)
	gen := tensor.NewGenerator(8)
	var ls []float64
	for range 3 {
		x := tensor.Randn([]int{64, 32}, tensor.On(dev), tensor.WithGenerator(gen))
		y := tensor.Randn([]int{64, 32}, tensor.On(dev), tensor.WithGenerator(gen))
		loss, err := step(m, opt, x, y)
		require.NoError(t, err)
		require.NotNil(t, loss)
		require.Empty(t, loss.Shape(), "the loss is a 0-d tensor")
		assert.False(t, loss.RequiresGrad(), "the loss is returned without history")
		ls = append(ls, loss.Item())
		loss.Release()
		x.Release()
		y.Release()
	}
	var ps [][]float64
	for _, p := range nn.Parameters(m) {
		ps = append(ps, p.Float64s())
	}
	return ls, ps
}

func TestLossClose(t *testing.T) {
	tensortest.NoCollector(t)
	want, wantParams := losses(t, BaselineStep)
	got, gotParams := losses(t, TrainStep)
	for i := range want {
		assert.InEpsilon(t, want[i], got[i], 0.01, "loss of step %d", i+1)
	}
	// Adam moves each parameter by about lr per step whatever the
	// gradient's size: the parameters must have moved, and moved alike.
	var moved, far int
	for i := range wantParams {
		for j := range wantParams[i] {
			if math.Abs(gotParams[i][j]-wantParams[i][j]) > 3e-3 {
				far++
			}
			moved++
		}
	}
	assert.Less(t, float64(far)/float64(moved), 0.01, "parameters after three steps match the baseline's within 3e-3")
}

// After a step only the parameters and Adam's state are allocated: no
// gradient, no activation, no saved tensor.
func TestReleasesEverything(t *testing.T) {
	tensortest.NoCollector(t)
	dev := ClassroomCard()
	m := NewModel(dev, 256, 4, 1)
	opt := NewOptimizer(m)
	x := tensor.Zeros([]int{1024, 256}, tensor.On(dev))
	y := tensor.Zeros([]int{1024, 256}, tensor.On(dev))
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
		assert.True(t, p.Grad() == nil, "gradients are released (a parameter still holds one)")
	}
	assert.Positive(t, opt.StateBytes(), "the optimizer stepped")
}
