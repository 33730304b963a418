package batchsearch

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpumem/course/gpukit/tensor"
	"github.com/gpumem/course/gpukit/tensor/tensortest"
)

func TestFindsTheLimit(t *testing.T) {
	tensortest.NoCollector(t)
	for _, c := range []struct {
		capacity int64
		width    int
	}{{48 << 20, 512}, {40 << 20, 256}} {
		dev := Card(c.capacity)
		tr := NewTrainer(dev, c.width)
		b, err := LargestBatch(dev, 1<<16, tr.Step, tr.CleanUp)
		require.NoError(t, err)
		assert.NoError(t, tensor.Try(func() { tr.Step(b) }), "the batch found runs (capacity %d, width %d)", c.capacity, c.width)
		assert.Error(t, tensor.Try(func() { tr.Step(b + 1) }), "one more does not (capacity %d, width %d)", c.capacity, c.width)
		tr.CleanUp()
		tensor.CollectGarbage()
		dev.EmptyCache()
	}
}

// Every try starts with the memory the search started with: a failed try
// (whose gradients step leaves behind) is cleaned up before the next.
func TestFailedTriesFreed(t *testing.T) {
	tensortest.NoCollector(t)
	dev := Card(48 << 20)
	tr := NewTrainer(dev, 512)
	tensor.CollectGarbage()
	base := dev.MemoryAllocated()
	var starts []int64
	failed := 0
	_, err := LargestBatch(dev, 1<<16, func(b int) {
		starts = append(starts, dev.MemoryAllocated()-base)
		defer func() {
			if r := recover(); r != nil {
				failed++
				panic(r)
			}
		}()
		tr.Step(b)
	}, tr.CleanUp)
	require.NoError(t, err)
	require.Positive(t, failed, "some tries failed")
	for i, s := range starts {
		assert.Zero(t, s, "try %d started with %d bytes left over from the tries before", i, s)
	}
	assert.Equal(t, base, dev.MemoryAllocated(), "nothing left allocated at the end")

	// A step that fails after allocating, as a backward pass that runs out
	// of memory half way does: only cleanUp frees what it left.
	var left []*tensor.Tensor
	starts = starts[:0]
	b, err := LargestBatch(dev, 1000, func(b int) {
		starts = append(starts, dev.MemoryAllocated()-base)
		x := tensor.Zeros([]int{b, 256}, tensor.On(dev))
		left = append(left, x)
		if b > 300 {
			tensor.Zeros([]int{1 << 40}, tensor.On(dev)) // out of memory
		}
		x.Release()
		left = left[:len(left)-1]
	}, func() {
		for _, x := range left {
			x.Release()
		}
		left = nil
	})
	require.NoError(t, err)
	assert.Equal(t, 300, b, "the largest batch of a step that fails above 300")
	for i, s := range starts {
		assert.Zero(t, s, "try %d started with %d bytes left over by a failed try: call cleanUp after a failed try", i, s)
	}
	// The model and its optimizer's state count in base: keep them alive
	// until here, whatever the search collects.
	runtime.KeepAlive(tr)
}

func TestCacheLeftAsFound(t *testing.T) {
	tensortest.NoCollector(t)
	dev := Card(48 << 20)
	tr := NewTrainer(dev, 512)
	dev.EmptyCache()
	reserved := dev.MemoryReserved()
	_, err := LargestBatch(dev, 1<<16, tr.Step, tr.CleanUp)
	require.NoError(t, err)
	assert.Equal(t, reserved, dev.MemoryReserved(), "reserved memory as found")
	runtime.KeepAlive(tr) // its blocks are part of what was reserved
}

func TestFewTries(t *testing.T) {
	tensortest.NoCollector(t)
	dev := Card(48 << 20)
	tr := NewTrainer(dev, 512)
	tries := 0
	_, err := LargestBatch(dev, 1<<16, func(b int) { tries++; tr.Step(b) }, tr.CleanUp)
	require.NoError(t, err)
	assert.LessOrEqual(t, tries, 2*17, "grow and bisect: about 2·log2(maxBatch) tries at most")
}

func TestMaxBatchAndErrors(t *testing.T) {
	tensortest.NoCollector(t)
	dev := Card(48 << 20)
	tr := NewTrainer(dev, 512)
	b, err := LargestBatch(dev, 5, tr.Step, tr.CleanUp)
	require.NoError(t, err)
	assert.Equal(t, 5, b, "maxBatch caps the answer")
	b, err = LargestBatch(dev, 1, tr.Step, tr.CleanUp)
	require.NoError(t, err, "maxBatch 1: batch 1 fits")
	assert.Equal(t, 1, b, "maxBatch 1 caps the answer at 1")
	_, err = LargestBatch(dev, 0, tr.Step, tr.CleanUp)
	assert.Error(t, err, "maxBatch < 1")
	_, err = LargestBatch(dev, 8, func(int) { tr.Step(1 << 20) }, tr.CleanUp)
	assert.Error(t, err, "nothing fits")
}
