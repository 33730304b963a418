package batchsearch

import (
	"math"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpumem/course/gpukit/tensor"
)

// The grader's TestFindsTheLimit runs on other cards and models: the
// batch found runs, and one more runs out of memory.
func TestFindsTheLimit(t *testing.T) {
	for _, c := range []struct {
		capacity int64
		width    int
	}{{52 << 20, 320}, {36 << 20, 448}} {
		dev := Card(c.capacity)
		tr := NewTrainer(dev, c.width)
		b, err := LargestBatch(dev, 1<<15, tr.Step, tr.CleanUp)
		require.NoError(t, err)
		assert.NoError(t, tensor.Try(func() { tr.Step(b) }), "a card of %d MiB, width %d: the batch found, %d, runs", c.capacity>>20, c.width, b)
		assert.Error(t, tensor.Try(func() { tr.Step(b + 1) }), "a card of %d MiB, width %d: one more than the batch found, %d, runs out of memory", c.capacity>>20, c.width, b+1)
		tr.CleanUp()
		tensor.CollectGarbage()
		dev.EmptyCache()
	}
}

// The public twin of the grader's TestFailedTriesFreed, on another card,
// model and step: every try starts with the memory the search started
// with; a failed try (whose gradients step leaves behind) is cleaned up,
// with cleanUp and then the collector, before the next.
func TestEveryTryStartsClean(t *testing.T) {
	dev := Card(64 << 20)
	tr := NewTrainer(dev, 256)
	tensor.CollectGarbage()
	base := dev.MemoryAllocated()
	var starts []int64
	failed := 0
	_, err := LargestBatch(dev, 1<<14, func(b int) {
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
	require.Positive(t, failed, "some tries failed (the test's own check)")
	for i, left := range starts {
		assert.Zero(t, left, "try %d started with %d bytes left over from the tries before", i+1, left)
	}
	assert.Equal(t, base, dev.MemoryAllocated(), "bytes allocated after the search: nothing of the tries may be left")

	// A step that fails after allocating, as a backward pass that runs out
	// of memory half way does: only cleanUp frees what it left.
	var left []*tensor.Tensor
	starts = starts[:0]
	b, err := LargestBatch(dev, 700, func(b int) {
		starts = append(starts, dev.MemoryAllocated()-base)
		x := tensor.Zeros([]int{b, 128}, tensor.On(dev))
		left = append(left, x)
		if b > 170 {
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
	assert.Equal(t, 170, b, "the largest batch of a step that fails above 170")
	for i, s := range starts {
		assert.Zero(t, s, "try %d started with %d bytes left over by a failed try: call cleanUp after a failed try", i+1, s)
	}
	runtime.KeepAlive(tr) // the model and Adam's state count in base
}

// The public twin of the grader's TestCacheLeftAsFound, on another card
// and model: reserved memory is the same before and after the search.
func TestCacheAsFound(t *testing.T) {
	dev := Card(56 << 20)
	tr := NewTrainer(dev, 384)
	dev.EmptyCache()
	reserved := dev.MemoryReserved()
	_, err := LargestBatch(dev, 1<<14, tr.Step, tr.CleanUp)
	require.NoError(t, err)
	assert.Equal(t, reserved, dev.MemoryReserved(), "bytes reserved after the search, want as before: empty the cache that failed tries filled")
	runtime.KeepAlive(tr) // its blocks are part of what was reserved
}

// The public twin of the grader's TestFewTries, on another card and
// maxBatch: grow, then bisect: at most 2·log2(maxBatch) tries.
func TestGrowThenBisect(t *testing.T) {
	dev := Card(56 << 20)
	tr := NewTrainer(dev, 384)
	const maxBatch = 3000
	tries := 0
	_, err := LargestBatch(dev, maxBatch, func(b int) { tries++; tr.Step(b) }, tr.CleanUp)
	require.NoError(t, err)
	limit := 2 * int(math.Ceil(math.Log2(maxBatch)))
	assert.LessOrEqual(t, tries, limit, "tries for maxBatch %d: grow and bisect, about 2·log2(maxBatch) tries at most", maxBatch)
}

// The public twin of the grader's TestMaxBatchAndErrors, on other limits:
// maxBatch caps the answer; maxBatch < 1 and a step that never fits are
// errors.
func TestMaxBatchCaps(t *testing.T) {
	dev := Card(56 << 20)
	tr := NewTrainer(dev, 384)
	b, err := LargestBatch(dev, 7, tr.Step, tr.CleanUp)
	require.NoError(t, err)
	assert.Equal(t, 7, b, "maxBatch 7 caps the answer")
	b, err = LargestBatch(dev, 2, tr.Step, tr.CleanUp)
	require.NoError(t, err)
	assert.Equal(t, 2, b, "maxBatch 2 caps the answer")
	_, err = LargestBatch(dev, -4, tr.Step, tr.CleanUp)
	assert.Error(t, err, "maxBatch -4 is below 1: want an error")
	_, err = LargestBatch(dev, 12, func(int) { tr.Step(1 << 21) }, tr.CleanUp)
	assert.Error(t, err, "a step that never fits: want an error")
}
