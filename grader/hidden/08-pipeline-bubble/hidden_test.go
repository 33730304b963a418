package bubble

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpumem/course/gpukit/nn"
	"github.com/gpumem/course/gpukit/nn/parallel"
	"github.com/gpumem/course/gpukit/tensor"
	"github.com/gpumem/course/gpukit/tensor/tensortest"
)

// TestMeasureMatches: each case on fresh cards, against the test's own
// measurement on other fresh cards.
func TestMeasureMatches(t *testing.T) {
	tensortest.NoCollector(t)
	for _, c := range []struct {
		layers []int
		micro  int
		order  parallel.Order
	}{
		{[]int{2, 2}, 1, parallel.GPipe},
		{[]int{2, 2}, 2, parallel.GPipe},
		{[]int{2, 2}, 4, parallel.OneFOneB},
		{[]int{3, 1}, 3, parallel.GPipe},
		{[]int{3, 1}, 3, parallel.OneFOneB},
		{[]int{1, 1, 1, 1}, 8, parallel.GPipe},
		{[]int{1, 2, 1}, 5, parallel.OneFOneB},
	} {
		what := fmt.Sprintf("stages %v, %d micro-batches, %v", c.layers, c.micro, c.order)
		stages, x := hiddenFresh(t, c.layers...)
		got, err := Measure(stages, x, c.micro, c.order)
		if !assert.NoError(t, err, what) {
			continue
		}
		ref, rx := hiddenFresh(t, c.layers...)
		want := hiddenMeasure(t, ref, rx, c.micro, c.order)
		assert.Equal(t, want.Time, got.Time, "%s: the warm step's length on the modelled clock", what)
		assert.InDelta(t, want.Bubble, got.Bubble, 1e-12, "%s: the measured bubble", what)
		assert.Equal(t, want.Peak, got.Peak, "%s: each card's peak allocated bytes during the step", what)
	}
}

// TestMeasureLeavesCards: nothing stays behind, and measuring twice on
// the same cards, after another measurement, gives the same numbers.
func TestMeasureLeavesCards(t *testing.T) {
	tensortest.NoCollector(t)
	stages, x := hiddenFresh(t, 2, 2)
	before := []int64{stages[0].Device.MemoryAllocated(), stages[1].Device.MemoryAllocated()}
	_, err := Measure(stages, x, 4, parallel.GPipe)
	require.NoError(t, err)
	got, err := Measure(stages, x, 4, parallel.OneFOneB)
	require.NoError(t, err)
	for i, s := range stages {
		assert.Equal(t, before[i], s.Device.MemoryAllocated(), "card %d holds what it held before", i)
		for _, p := range nn.Parameters(s.Module) {
			assert.True(t, p.Grad() == nil, "card %d: a parameter's gradient is left", i)
		}
	}
	ref, rx := hiddenFresh(t, 2, 2)
	assert.Equal(t, hiddenMeasure(t, ref, rx, 4, parallel.OneFOneB), got, "1F1B after GPipe on the same cards")
	runtime.KeepAlive(x) // counted in before
}

// TestMeasureRefuses: bad micro-batch counts and no input, refused before
// anything is allocated.
func TestMeasureRefuses(t *testing.T) {
	tensortest.NoCollector(t)
	stages, x := hiddenFresh(t, 1, 1)
	d := stages[0].Device
	allocs := d.Stats()["allocation.all.allocated"]
	for _, micro := range []int{0, -2, hiddenRows + 1} {
		_, err := Measure(stages, x, micro, parallel.GPipe)
		assert.Error(t, err, "%d micro-batches for %d rows", micro, hiddenRows)
	}
	_, err := Measure(stages, nil, 2, parallel.GPipe)
	assert.Error(t, err, "no input")
	assert.Equal(t, allocs, d.Stats()["allocation.all.allocated"], "a refused Measure allocates nothing")
	_, _, _, err = Plan(stages, nil, 0.5, 1<<30)
	assert.Error(t, err, "Plan with no input")

	// As many micro-batches as rows is allowed: 8 rows this time, the
	// only input on either card.
	x.Release()
	small := tensor.Randn([]int{8, hiddenWidth}, tensor.On(d))
	got, err := Measure(stages, small, 8, parallel.GPipe)
	if assert.NoError(t, err, "8 micro-batches for 8 rows") {
		ref, rx := hiddenFresh(t, 1, 1)
		rx.Release()
		rsmall := tensor.Randn([]int{8, hiddenWidth}, tensor.On(ref[0].Device))
		assert.Equal(t, hiddenMeasure(t, ref, rsmall, 8, parallel.GPipe), got, "8 micro-batches for 8 rows")
	}
}

func checkPlan(t *testing.T, layers []int, maxBubble float64, budget int64) {
	t.Helper()
	what := fmt.Sprintf("stages %v, at most %.0f%% idle and %d bytes a card", layers, 100*maxBubble, budget)
	wm, wo, ws, ok := hiddenPlan(t, layers, maxBubble, budget)
	require.True(t, ok, "%s: the test's own search finds a plan", what)
	stages, x := hiddenFresh(t, layers...)
	m, o, st, err := Plan(stages, x, maxBubble, budget)
	if !assert.NoError(t, err, what) {
		return
	}
	assert.Equal(t, wm, m, "%s: the fewest micro-batches", what)
	assert.Equal(t, wo, o, "%s: the order", what)
	assert.Equal(t, ws, st, "%s: what the chosen plan's step measured", what)
}

// TestPlanBubble: limits between GPipe's formula and the measured bubble.
func TestPlanBubble(t *testing.T) {
	tensortest.NoCollector(t)
	checkPlan(t, []int{2, 2}, 0.27, 1<<30)
	checkPlan(t, []int{1, 1, 1, 1}, 0.32, 1<<30)
	checkPlan(t, []int{2, 2}, 0.5, 1<<30)
}

// TestPlanOrder: with three layers on the first card and one on the
// second, GPipe idles too long at every count and 1F1B does not.
func TestPlanOrder(t *testing.T) {
	tensortest.NoCollector(t)
	checkPlan(t, []int{3, 1}, 0.32, 1<<30)
}

// TestPlanBudget: the budget is the largest peak of 1F1B at 4
// micro-batches, which GPipe at 4 exceeds; Plan measures GPipe first on
// the same cards.
func TestPlanBudget(t *testing.T) {
	tensortest.NoCollector(t)
	ref, rx := hiddenFresh(t, 2, 2)
	gpipe := hiddenMeasure(t, ref, rx, 4, parallel.GPipe)
	ofob := hiddenMeasure(t, ref, rx, 4, parallel.OneFOneB)
	budget := max(ofob.Peak[0], ofob.Peak[1])
	require.Greater(t, max(gpipe.Peak[0], gpipe.Peak[1]), budget, "GPipe peaks higher than 1F1B at 4 micro-batches")
	checkPlan(t, []int{2, 2}, 0.30, budget)
}

// TestPlanAsManyAsRows: with a batch of 4 rows Plan tries up to 4
// micro-batches (fewer than MaxMicro), 4 included; the limit is the
// bubble that only 4 reach.
func TestPlanAsManyAsRows(t *testing.T) {
	tensortest.NoCollector(t)
	fresh := func() ([]parallel.Stage, *tensor.Tensor) {
		stages, err := MetaStages(hiddenWidth, 2, 2)
		require.NoError(t, err)
		return stages, tensor.Randn([]int{4, hiddenWidth}, tensor.On(stages[0].Device))
	}
	// The test's own search on fresh cards, in Plan's order, up to 4
	// micro-batches with GPipe.
	ref, rx := fresh()
	fewer := 1.0 // the lowest bubble below 4 micro-batches
	for m := 1; m < 4; m++ {
		for _, o := range []parallel.Order{parallel.GPipe, parallel.OneFOneB} {
			fewer = min(fewer, hiddenMeasure(t, ref, rx, m, o).Bubble)
		}
	}
	want := hiddenMeasure(t, ref, rx, 4, parallel.GPipe)
	require.Less(t, want.Bubble, fewer, "4 micro-batches idle less than fewer")

	stages, x := fresh()
	m, o, st, err := Plan(stages, x, want.Bubble, 1<<30)
	if !assert.NoError(t, err, "a batch of 4 rows, at most %.1f%% idle: 4 micro-batches (as many as rows) meet it", 100*want.Bubble) {
		return
	}
	assert.Equal(t, 4, m, "a batch of 4 rows: the fewest micro-batches that meet the limit is 4, as many as rows")
	assert.Equal(t, parallel.GPipe, o, "the first order that meets the limit")
	assert.Equal(t, want, st, "what the chosen plan's step measured")
}

// TestPlanNone: limits nothing meets, beside ones that are met.
func TestPlanNone(t *testing.T) {
	tensortest.NoCollector(t)
	checkPlan(t, []int{3, 1}, 0.35, 1<<30)
	stages, x := hiddenFresh(t, 3, 1)
	_, _, _, err := Plan(stages, x, 0.2, 1<<30)
	assert.Error(t, err, "stages 3 and 1 idle more than 20%% at every count up to %d", MaxMicro)
	stages, x = hiddenFresh(t, 2, 2)
	_, _, _, err = Plan(stages, x, 0.9, stages[0].Device.MemoryAllocated()-1)
	assert.Error(t, err, "a budget below what the first card holds before the step")
}
