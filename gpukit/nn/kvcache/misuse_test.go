package kvcache_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpumem/course/gpukit/nn"
	"github.com/gpumem/course/gpukit/nn/kvcache"
	"github.com/gpumem/course/gpukit/tensor"
)

func TestDecoderMisuse(t *testing.T) {
	dev, b := newBlock(t, tensor.Float32)
	assert.Equal(t, "Strategy(9)", kvcache.Strategy(9).String())
	_, err := kvcache.NewDecoder(b, kvcache.Strategy(9), 1, 4)
	assert.EqualError(t, err, "kvcache: NewDecoder: unknown strategy Strategy(9); use Preallocated or Concat")
	_, err = kvcache.NewDecoder(nil, kvcache.Concat, 1, 4)
	assert.EqualError(t, err, "kvcache: NewDecoder: block is nil")
	_, err = kvcache.NewDecoder(&nn.Block{}, kvcache.Concat, 1, 4)
	assert.EqualError(t, err, "kvcache: NewDecoder: the block has no attention, layer norms or MLP; make it with nn.NewBlock")

	for _, s := range []kvcache.Strategy{kvcache.Preallocated, kvcache.Concat} {
		d, err := kvcache.NewDecoder(b, s, 1, 4)
		require.NoError(t, err)
		_, err = d.Step(nil)
		assert.EqualError(t, err, "kvcache: Step: x is nil")
		d.Release()
		x := tensor.Zeros([]int{1, 1, 16}, tensor.On(dev))
		_, err = d.Step(x)
		if s == kvcache.Preallocated {
			assert.EqualError(t, err, "kvcache: Step: the decoder was released")
		} else {
			assert.NoError(t, err, "a released Concat decoder starts again from an empty cache")
		}
		d.Release()
		d.Strategy = kvcache.Strategy(-1)
		_, err = d.Step(x)
		assert.ErrorContains(t, err, "kvcache: Step: unknown strategy Strategy(-1)")
		x.Release()
	}
	d, err := kvcache.NewDecoder(b, kvcache.Concat, 1, 4)
	require.NoError(t, err)
	_, err = d.Prefill(nil, 2)
	assert.EqualError(t, err, "kvcache: Prefill: x is nil")
	assert.Zero(t, kvcache.ChunkForBudget(nil, 1, 8, 1<<20))
	var zero kvcache.Decoder
	_, err = zero.Step(tensor.Zeros([]int{1, 1, 16}, tensor.On(dev)))
	assert.EqualError(t, err, "kvcache: Step: the decoder has no block; make it with NewDecoder")
}
