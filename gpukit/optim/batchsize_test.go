package optim_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpumem/course/gpukit/device"
	"github.com/gpumem/course/gpukit/device/simtest"
	"github.com/gpumem/course/gpukit/nn"
	"github.com/gpumem/course/gpukit/optim"
	"github.com/gpumem/course/gpukit/tensor"
)

func smallDev(t testing.TB, capacity int64) *device.Device {
	t.Helper()
	return simtest.Card(t, simtest.Capacity(capacity), simtest.Named("tiny")) // a made-up card: all of it is ours
}

// trainStep is one forward, backward and Adam step of an MLP on a batch,
// releasing everything it makes, also when it runs out of memory half
// way (the gradients backward made before it failed included).
func trainStep(dev *device.Device, m nn.Module, opt optim.Optimizer, width int) func(int) error {
	return func(batch int) error {
		defer opt.ZeroGrad(true)
		x := tensor.Randn([]int{batch, width}, tensor.On(dev))
		defer x.Release()
		y := m.Forward(x)
		defer y.Release()
		sq := y.Pow(2)
		defer sq.Release()
		loss := sq.Mean()
		defer loss.Release()
		loss.Backward()
		opt.Step()
		return nil
	}
}

func TestFindBatchSizeAgainstOOM(t *testing.T) {
	const width = 128
	// 12 MiB to train in, and the 20 MiB segment that holds cuBLAS's
	// workspace from the first product on
	dev := smallDev(t, 32<<20)
	m := nn.NewSequential(nn.NewLinear(width, 4*width, true, tensor.On(dev)), nn.NewGELU(), nn.NewLinear(4*width, width, true, tensor.On(dev)))
	opt, err := optim.NewAdam(nn.Parameters(m), optim.DefaultAdam())
	require.NoError(t, err)
	step := trainStep(dev, m, opt, width)
	require.NoError(t, step(1)) // the optimizer state now exists
	opt.ZeroGrad(true)
	dev.EmptyCache()
	baseAlloc, baseRes := dev.MemoryAllocated(), dev.MemoryReserved()

	res, err := optim.FindBatchSize(dev, 1<<16, 0, step)
	require.NoError(t, err)
	require.Greater(t, res.Batch, 1)
	assert.Equal(t, baseAlloc, dev.MemoryAllocated(), "failed tries are freed")
	assert.Equal(t, baseRes, dev.MemoryReserved(), "the cache is left as found")
	// the answer is right: one more fails, the answer itself runs
	failed := 0
	for _, tr := range res.Tries {
		if !tr.OK {
			failed++
			assert.Error(t, tr.Err)
		}
	}
	assert.Positive(t, failed)
	require.NoError(t, tensor.Try(func() { _ = step(res.Batch) }))
	assert.Error(t, tensor.Try(func() { _ = step(res.Batch + 1) }), "batch+1 runs out of memory")
	tensor.CollectGarbage()

	// with a budget, the peak decides, not the memory left after the step
	budget := res.Peak / 2
	dev.EmptyCache()
	half, err := optim.FindBatchSize(dev, 1<<16, budget, step)
	require.NoError(t, err)
	assert.LessOrEqual(t, half.Peak, budget)
	assert.Less(t, half.Batch, res.Batch)
	for _, tr := range half.Tries {
		if tr.Err == nil && !tr.OK {
			assert.Greater(t, tr.Peak, budget, "a try that ran is refused only for its peak")
		}
	}
}

func TestFindBatchSizeRefusesLeaks(t *testing.T) {
	dev := smallDev(t, 16<<20)
	var kept []*tensor.Tensor
	_, err := optim.FindBatchSize(dev, 8, 0, func(b int) error {
		kept = append(kept, tensor.Zeros([]int{b, 1024}, tensor.On(dev)))
		return nil
	})
	assert.ErrorContains(t, err, "left 4096 bytes allocated; step must release every tensor it makes")
	_, err = optim.FindBatchSize(dev, 0, 0, nil)
	assert.ErrorContains(t, err, "maxBatch must be at least 1")
}
