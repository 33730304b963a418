package parallel_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpumem/course/gpukit/device"
	"github.com/gpumem/course/gpukit/device/simtest"
	"github.com/gpumem/course/gpukit/nn"
	"github.com/gpumem/course/gpukit/nn/parallel"
	"github.com/gpumem/course/gpukit/tensor"
)

func newDev(t testing.TB, index int) *device.Device { return simtest.Card(t, simtest.Index(index)) }

// mlp builds Linear(16,32) ReLU Linear(32,32) ReLU Linear(32,8), the
// first half on d0 and the rest on d1, from one seed: the same values
// whatever the devices.
func mlp(d0, d1 *device.Device) (first, second *nn.Sequential) {
	g := tensor.NewGenerator(42)
	on := func(d *device.Device) []tensor.Option {
		return []tensor.Option{tensor.On(d), tensor.Float64, tensor.WithGenerator(g)}
	}
	first = nn.NewSequential(nn.NewLinear(16, 32, true, on(d0)...), nn.NewReLU())
	second = nn.NewSequential(nn.NewLinear(32, 32, true, on(d1)...), nn.NewReLU(), nn.NewLinear(32, 8, true, on(d1)...))
	return first, second
}

func TestWhereAndDeviceOf(t *testing.T) {
	d0, d1 := newDev(t, 0), newDev(t, 1)
	first, second := mlp(d0, d1)
	assert.Empty(t, parallel.Where(nn.NewReLU()))
	_, err := parallel.DeviceOf(nn.NewReLU())
	assert.ErrorContains(t, err, "owns no parameters or buffers")
	assert.Equal(t, []string{"sim:0"}, parallel.Where(first))
	d, err := parallel.DeviceOf(first)
	require.NoError(t, err)
	assert.Same(t, d0, d)
	both := nn.NewSequential(first, second)
	assert.Equal(t, []string{"sim:0", "sim:1"}, parallel.Where(both))
	_, err = parallel.DeviceOf(both)
	assert.ErrorContains(t, err, "several devices: sim:0, sim:1")
	_, err = parallel.DeviceOf(nn.NewLinear(2, 2, false, tensor.OnHost(false)))
	assert.ErrorContains(t, err, "host")
}

// blocks is the memory the allocator gives ts: each rounded up to 512 bytes.
func blocks(ts []*tensor.Tensor) int64 {
	var n int64
	for _, t := range ts {
		n += (t.Nbytes() + 511) / 512 * 512
	}
	return n
}

func grads(m nn.Module) [][]float64 {
	var out [][]float64
	for _, p := range nn.Parameters(m) {
		out = append(out, p.Grad().Float64s())
	}
	return out
}

// Split over two devices, naive and pipelined, the model gives the
// single-device model's outputs and gradients, bitwise.
func TestPipelineEqualsSingleDeviceBitwise(t *testing.T) {
	for _, micro := range []int{1, 3, 4} {
		d0, d1 := newDev(t, 0), newDev(t, 1)
		// the first product on each device takes cuBLAS's workspace for good
		ws0, ws1 := simtest.WarmBlas(t, d0), simtest.WarmBlas(t, d1)
		first, second := mlp(d0, d1)
		probe := tensor.Zeros([]int{1, 16}, tensor.On(d0), tensor.Float64)
		p, err := parallel.NewPipeline([]parallel.Stage{{first, d0}, {second, d1}}, micro, probe)
		require.NoError(t, err)
		// Each device holds its own stage (the probe's activations are
		// gone); the allocator rounds each tensor up to 512 bytes.
		assert.Equal(t, ws0+blocks(nn.Parameters(first))+blocks([]*tensor.Tensor{probe}), d0.MemoryAllocated())
		assert.Equal(t, ws1+blocks(nn.Parameters(second)), d1.MemoryAllocated())
		ref0, ref1 := mlp(d0, d0)
		ref := nn.NewSequential(ref0, ref1)

		x := tensor.Randn([]int{10, 16}, tensor.On(d0), tensor.Float64, tensor.WithGenerator(tensor.NewGenerator(5)))
		y := p.Forward(x)
		want := parallel.Reference(ref, x, micro)
		assert.Equal(t, "sim:1", y.DeviceName())
		assert.Equal(t, want.Float64s(), y.Float64s(), "micro-batches %d", micro)

		loss, refLoss := y.Mul(y).Sum(), want.Mul(want).Sum()
		loss.Backward()
		refLoss.Backward()
		assert.Equal(t, grads(ref), grads(p), "micro-batches %d", micro)
		// The parameters' gradients stay on their devices.
		assert.Equal(t, "sim:0", nn.Parameters(first)[0].Grad().DeviceName())
		assert.Equal(t, "sim:1", nn.Parameters(second)[0].Grad().DeviceName())

		assert.Len(t, p.Last.Compute[0], micro)
		assert.Positive(t, p.Last.Copy[1][0], "the copy onto sim:1 is on its clock")
		if micro == 1 {
			plain := nn.NewSequential(ref0, ref1).Forward(x)
			assert.Equal(t, plain.Float64s(), y.Float64s(), "rows are independent: micro-batching does not change the outputs")
		}
	}
}

func TestStagesThatDoNotChainAreRefused(t *testing.T) {
	d0, d1 := newDev(t, 0), newDev(t, 1)
	simtest.WarmBlas(t, d0) // the probe's product takes cuBLAS's workspace for good
	a := nn.NewLinear(8, 16, false, tensor.On(d0))
	b := nn.NewLinear(32, 4, false, tensor.On(d1))
	probe := tensor.Zeros([]int{1, 8}, tensor.On(d0))
	m0, m1 := d0.MemoryAllocated(), d1.MemoryAllocated()
	_, err := parallel.NewPipeline([]parallel.Stage{{a, d0}, {b, d1}}, 2, probe)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "parallel: NewPipeline: stage 1 (*nn.Linear) does not accept the output of stage 0")
	assert.Equal(t, m0, d0.MemoryAllocated(), "the probe's tensors are gone")
	assert.Equal(t, m1, d1.MemoryAllocated())

	_, err = parallel.NewPipeline([]parallel.Stage{{a, d0}}, 1, tensor.Zeros([]int{1, 5}, tensor.On(d0)))
	assert.ErrorContains(t, err, "stage 0 (*nn.Linear) does not accept an input of shape [1 5]")
	_, err = parallel.NewPipeline([]parallel.Stage{{a, d1}}, 1, probe)
	assert.ErrorContains(t, err, "has tensors on sim:0, not on its device sim:1")
	_, err = parallel.NewPipeline([]parallel.Stage{{a, d0}}, 0, probe)
	assert.ErrorContains(t, err, "at least 1")
	_, err = parallel.NewPipeline(nil, 1, probe)
	assert.ErrorContains(t, err, "no stages")
}

func TestScheduleBubble(t *testing.T) {
	ms := time.Millisecond
	uniform := func(S, M int, compute, cp time.Duration) parallel.Measured {
		var m parallel.Measured
		for s := range S {
			m.Compute = append(m.Compute, make([]time.Duration, M))
			m.Copy = append(m.Copy, make([]time.Duration, M))
			for mb := range M {
				m.Compute[s][mb] = compute
				if s > 0 {
					m.Copy[s][mb] = cp
				}
			}
		}
		return m
	}
	for _, tc := range []struct {
		S, M   int
		copy   time.Duration
		total  time.Duration
		bubble float64
	}{
		{2, 1, 0, 2 * ms, 0.5},          // naive: one device works at a time
		{2, 4, 0, 5 * ms, 1.0 / 5},      // (S-1)/(M+S-1)
		{4, 8, 0, 11 * ms, 3.0 / 11},    // (S-1)/(M+S-1)
		{2, 4, ms, 9 * ms, 1 - 12.0/18}, // stage 1 takes 2 ms per micro-batch
	} {
		tl := parallel.Schedule(uniform(tc.S, tc.M, ms, tc.copy))
		assert.Equal(t, tc.total, tl.Total, "S=%d M=%d", tc.S, tc.M)
		assert.InDelta(t, tc.bubble, tl.Bubble, 1e-12, "S=%d M=%d", tc.S, tc.M)
		assert.Len(t, tl.Intervals, tc.S*tc.M)
	}
}
