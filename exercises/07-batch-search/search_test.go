package batchsearch

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpumem/course/gpukit/tensor"
)

func TestFindsTheLimit(t *testing.T) {
	dev := Card(48 << 20)
	tr := NewTrainer(dev, 512)
	b, err := LargestBatch(dev, 1<<16, tr.Step, tr.CleanUp)
	require.NoError(t, err)
	assert.NoError(t, tensor.Try(func() { tr.Step(b) }), "the batch found runs")
	assert.Error(t, tensor.Try(func() { tr.Step(b + 1) }), "one more does not")
}
