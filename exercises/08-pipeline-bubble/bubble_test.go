package bubble

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpumem/course/gpukit/nn"
	"github.com/gpumem/course/gpukit/nn/parallel"
	"github.com/gpumem/course/gpukit/tensor"
)

// The model of these tests: two cards, each with two Linear(1024, 1024)
// and their ReLUs, on a batch of 512.
func twoCards(t *testing.T) ([]parallel.Stage, *tensor.Tensor) {
	t.Helper()
	stages, err := MetaStages(1024, 2, 2)
	require.NoError(t, err)
	return stages, tensor.Randn([]int{512, 1024}, tensor.On(stages[0].Device))
}

func TestMeasure(t *testing.T) {
	stages, x := twoCards(t)
	before := []int64{stages[0].Device.MemoryAllocated(), stages[1].Device.MemoryAllocated()}

	whole, err := Measure(stages, x, 1, parallel.GPipe)
	require.NoError(t, err)
	assert.InDelta(t, 0.5, whole.Bubble, 1e-9, "with the whole batch at once, one card idles while the other works")
	require.Len(t, whole.Peak, 2, "one peak per card")
	for i, p := range whole.Peak {
		assert.Greater(t, p, before[i], "card %d's peak is above what it holds between steps", i)
	}

	gpipe, err := Measure(stages, x, 4, parallel.GPipe)
	require.NoError(t, err)
	assert.Greater(t, gpipe.Bubble, 0.2, "4 micro-batches: the copies make the bubble larger than GPipe's (S-1)/(M+S-1) = 20%")
	assert.Less(t, gpipe.Time, whole.Time, "4 micro-batches overlap the cards")
	ofob, err := Measure(stages, x, 4, parallel.OneFOneB)
	require.NoError(t, err)
	assert.Equal(t, gpipe.Time, ofob.Time, "1F1B takes as long as GPipe here")
	assert.Less(t, ofob.Peak[1], gpipe.Peak[1], "1F1B holds fewer micro-batches' activations on the last card")

	for i, s := range stages {
		assert.Equal(t, before[i], s.Device.MemoryAllocated(), "card %d holds what it held before", i)
	}
	for _, p := range nn.Parameters(stages[0].Module) {
		assert.True(t, p.Grad() == nil, "the gradients are freed (a parameter still holds one)")
	}
	_, err = Measure(stages, x, 0, parallel.GPipe)
	assert.Error(t, err, "0 micro-batches")
}

// TestPlan: at most 27% idle. GPipe's formula says 3 micro-batches (25%);
// the measured steps need more.
func TestPlan(t *testing.T) {
	stages, x := twoCards(t)
	m, order, st, err := Plan(stages, x, 0.27, 1<<30)
	require.NoError(t, err)
	assert.LessOrEqual(t, st.Bubble, 0.27)
	assert.Greater(t, m, 3, "the formula's answer is too few: the copies are on the clock")

	again, err := Measure(stages, x, m, order)
	require.NoError(t, err)
	assert.Equal(t, again, st, "Plan returns what Measure measures")
	for _, o := range []parallel.Order{parallel.GPipe, parallel.OneFOneB} {
		fewer, err := Measure(stages, x, m-1, o)
		require.NoError(t, err)
		assert.Greater(t, fewer.Bubble, 0.27, "%d micro-batches, %v, idles more than 27%%", m-1, o)
	}
}
