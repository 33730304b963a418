package kvcache_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpumem/course/gpukit/device"
	"github.com/gpumem/course/gpukit/device/simtest"
	"github.com/gpumem/course/gpukit/nn"
	"github.com/gpumem/course/gpukit/nn/kvcache"
	"github.com/gpumem/course/gpukit/tensor"
)

// newBlock is a fresh classroom card with a seeded causal Block(16, 4) of
// dtype dt on it.
func newBlock(t testing.TB, dt tensor.Dtype) (*device.Device, *nn.Block) {
	t.Helper()
	dev := simtest.Card(t)
	b := nn.NewBlock(16, 4, tensor.On(dev), dt, tensor.WithGenerator(tensor.NewGenerator(1)))
	b.Attn.Causal = true
	return dev, b
}

// decode runs x [B, T, D] token by token and returns the outputs.
func decode(t *testing.T, d *kvcache.Decoder, x *tensor.Tensor) [][]float64 {
	var outs [][]float64
	for i := range x.Size(1) {
		tok := x.Narrow(1, i, 1)
		y, err := d.Step(tok)
		require.NoError(t, err)
		outs = append(outs, y.Float64s())
		y.Release()
		tok.Release()
	}
	return outs
}

func TestStrategiesGiveTheSameOutputs(t *testing.T) {
	dev, b := newBlock(t, tensor.Float64)
	x := tensor.Randn([]int{2, 9, 16}, tensor.On(dev), tensor.Float64, tensor.WithGenerator(tensor.NewGenerator(2)))
	pre, err := kvcache.NewDecoder(b, kvcache.Preallocated, 2, 12)
	require.NoError(t, err)
	cat, err := kvcache.NewDecoder(b, kvcache.Concat, 2, 12)
	require.NoError(t, err)
	a, c := decode(t, pre, x), decode(t, cat, x)
	assert.Equal(t, a, c, "bitwise")

	// ... and what the block computes on the whole sequence at once.
	var full *tensor.Tensor
	tensor.NoGrad(func() { full = b.Forward(x) })
	for i := range 9 {
		col := full.Narrow(1, i, 1)
		assert.InDeltaSlice(t, col.Float64s(), a[i], 1e-12, "token %d", i)
		col.Release()
	}

	// Chunked prefill then decoding gives the same too.
	chunked, err := kvcache.NewDecoder(b, kvcache.Preallocated, 2, 12)
	require.NoError(t, err)
	prompt := x.Narrow(1, 0, 7)
	last, err := chunked.Prefill(prompt, 3)
	require.NoError(t, err)
	assert.InDeltaSlice(t, a[6], last.Float64s(), 1e-12)
	rest := x.Narrow(1, 7, 2)
	tail := decode(t, chunked, rest)
	assert.InDeltaSlice(t, a[8], tail[1], 1e-12)
	assert.Equal(t, 9, chunked.Len)
}

// Preallocated allocates its cache once; Concat allocates a new, larger
// cache at every step and holds old and new for a moment.
func TestCacheMemory(t *testing.T) {
	const B, T, D, max = 2, 64, 16, 64
	run := func(s kvcache.Strategy) (allocs, peak, unused, cache int64) {
		dev, b := newBlock(t, tensor.Float32)
		x := tensor.Randn([]int{B, T, D}, tensor.On(dev))
		base := dev.MemoryAllocated()
		dev.ResetPeakStats()
		d, err := kvcache.NewDecoder(b, s, B, max)
		require.NoError(t, err)
		start := dev.Stats()["allocation.all.allocated"]
		decode(t, d, x)
		return dev.Stats()["allocation.all.allocated"] - start, dev.MaxMemoryAllocated() - base,
			dev.MemoryReserved() - dev.MemoryAllocated(), d.CacheBytes()
	}
	preAllocs, prePeak, preUnused, preCache := run(kvcache.Preallocated)
	catAllocs, catPeak, catUnused, catCache := run(kvcache.Concat)
	assert.Greater(t, catPeak, prePeak, "old and new caches coexist during a concatenation")
	t.Logf("reserved but unused: preallocated %d, concat %d bytes", preUnused, catUnused)
	assert.EqualValues(t, 2*B*max*D*4, preCache)
	assert.EqualValues(t, 2*B*T*D*4, catCache)
	assert.EqualValues(t, 2*T, catAllocs-preAllocs, "two new cache tensors per token")
}

func TestRefusals(t *testing.T) {
	dev, b := newBlock(t, tensor.Float32)
	d, err := kvcache.NewDecoder(b, kvcache.Preallocated, 1, 2)
	require.NoError(t, err)
	x := tensor.Randn([]int{1, 3, 16}, tensor.On(dev))
	_, err = d.Step(x)
	assert.ErrorContains(t, err, "kvcache: Step: 3 tokens after the 0 in the cache exceed MaxLen 2")
	assert.Equal(t, 0, d.Len)
	_, err = d.Step(tensor.Randn([]int{1, 1, 8}, tensor.On(dev)))
	assert.ErrorContains(t, err, "expected [1, C, 16]")
	_, err = d.Prefill(x, 0)
	assert.ErrorContains(t, err, "chunk 0")

	b.Attn.Causal = false
	_, err = kvcache.NewDecoder(b, kvcache.Concat, 1, 2)
	assert.ErrorContains(t, err, "not causal")
	b.Attn.Causal = true
	_, err = kvcache.NewDecoder(b, kvcache.Concat, 0, 2)
	assert.ErrorContains(t, err, "must be positive")
	assert.Equal(t, 4, kvcache.ChunkForBudget(b, 1, 64, 4*4*64*4))
}
