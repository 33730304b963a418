package choosecards

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpumem/course/gpukit/alloc"
	"github.com/gpumem/course/gpukit/device"
	"github.com/gpumem/course/gpukit/device/sim"
	"github.com/gpumem/course/gpukit/distributed"
	"github.com/gpumem/course/gpukit/tensor"
)

// measured is the grader's own answer: two steps on meta cards of the
// profile, fitting when neither runs out of memory.
func measured(t *testing.T, m Model, p Plan, card device.Profile) bool {
	t.Helper()
	devs := make([]*device.Device, p.Devices)
	for i := range devs {
		d, err := device.New(sim.NewMeta(i, card))
		require.NoError(t, err)
		devs[i] = d
	}
	home, err := device.New(sim.NewMeta(sim.MaxMetaIndex, card.Resized(1<<42)))
	require.NoError(t, err)
	g, err := distributed.NewGroup(devs)
	require.NoError(t, err)
	isOOM := func(err error) bool {
		var o *alloc.OutOfMemoryError
		require.True(t, err == nil || errors.As(err, &o), "%v", err)
		return err != nil
	}
	tr, err := distributed.NewTrainer(g, m.Build(home), Config(p.Stage))
	if isOOM(err) {
		return false
	}
	defer tr.Release()
	var xs, ys []*tensor.Tensor
	if isOOM(tensor.Try(func() {
		for _, d := range devs {
			xs = append(xs, tensor.Zeros([]int{m.Tokens, m.Widths[0]}, tensor.Float16, tensor.On(d)))
			ys = append(ys, tensor.Zeros([]int{m.Tokens, m.Widths[len(m.Widths)-1]}, tensor.Float16, tensor.On(d)))
		}
	})) {
		return false
	}
	for range 2 {
		if _, err := tr.Step(xs, ys); isOOM(err) {
			return false
		}
	}
	return true
}

// best is the grader's search: fewest cards, then lowest stage.
func best(t *testing.T, m Model, card device.Profile) (Plan, bool) {
	for n := 1; n <= MaxDevices; n *= 2 {
		for s := distributed.DDP; s <= distributed.ZeRO3; s++ {
			if measured(t, m, Plan{n, s}, card) {
				return Plan{n, s}, true
			}
		}
	}
	return Plan{}, false
}

func profile(t *testing.T, name string) device.Profile {
	t.Helper()
	p, err := device.LookupProfile(name)
	require.NoError(t, err)
	return p
}

func layers(width, n int) []int {
	w := make([]int, n+1)
	for i := range w {
		w[i] = width
	}
	return w
}

type config struct {
	m    Model
	card string
}

// configs are the graded configurations: on the classroom card, where
// the batch's activations, the first step's lazy optimizer state, the
// CUDA context and the stage all decide; and on a T4. (A function, not
// package-level variables, which the student's code could change.)
func configs() (twoCardsZeRO2, fourCardsZeRO1, fourCardsZeRO3, t4TwoCardsZeRO1, t4OneCardDDP, nothing config) {
	return config{Model{layers(6144, 4), 4096}, "classroom"},
		config{Model{layers(8192, 3), 512}, "classroom"},
		config{Model{layers(4096, 4), 16384}, "classroom"},
		config{Model{layers(12288, 6), 16384}, "t4"},
		config{Model{layers(4096, 3), 512}, "t4"},
		config{Model{layers(4096, 6), 16384}, "classroom"}
}

func TestHiddenFits(t *testing.T) {
	twoCardsZeRO2, fourCardsZeRO1, fourCardsZeRO3, t4TwoCardsZeRO1, _, _ := configs()
	for _, c := range []config{twoCardsZeRO2, fourCardsZeRO1, fourCardsZeRO3, t4TwoCardsZeRO1} {
		card := profile(t, c.card)
		want, ok := best(t, c.m, card)
		require.True(t, ok)
		plans := []Plan{want, {want.Devices / 2, distributed.ZeRO3}, {want.Devices * 2, distributed.DDP}}
		if want.Stage > distributed.DDP {
			plans = append(plans, Plan{want.Devices, want.Stage - 1})
		}
		for _, p := range plans {
			if p.Devices < 1 {
				continue
			}
			got, err := Fits(c.m, p, card)
			require.NoError(t, err, "%v, %s on %s", c.m.Widths, p, c.card)
			assert.Equal(t, measured(t, c.m, p, card), got, "%v with %d rows, %s on %s", c.m.Widths, c.m.Tokens, p, c.card)
		}
	}
}

func TestHiddenChoose(t *testing.T) {
	twoCardsZeRO2, _, fourCardsZeRO3, t4TwoCardsZeRO1, _, _ := configs()
	// fits on MaxDevices cards and on no fewer
	allCardsZeRO3 := config{Model{layers(12288, 10), 1024}, "classroom"}
	for _, c := range []config{twoCardsZeRO2, fourCardsZeRO3, t4TwoCardsZeRO1, allCardsZeRO3} {
		card := profile(t, c.card)
		want, _ := best(t, c.m, card)
		got, ok, err := Choose(c.m, card)
		require.NoError(t, err)
		assert.True(t, ok, "%v with %d rows on %s", c.m.Widths, c.m.Tokens, c.card)
		assert.Equal(t, want, got, "%v with %d rows on %s", c.m.Widths, c.m.Tokens, c.card)
	}
}

func TestHiddenLowestStage(t *testing.T) {
	_, fourCardsZeRO1, _, _, t4OneCardDDP, _ := configs()
	for _, c := range []config{fourCardsZeRO1, t4OneCardDDP} {
		card := profile(t, c.card)
		want, _ := best(t, c.m, card)
		require.True(t, measured(t, c.m, Plan{want.Devices, distributed.ZeRO3}, card), "a higher stage fits too")
		got, ok, err := Choose(c.m, card)
		require.NoError(t, err)
		assert.True(t, ok)
		assert.Equal(t, want, got, "%v with %d rows on %s", c.m.Widths, c.m.Tokens, c.card)
	}
}

func TestHiddenNothingFits(t *testing.T) {
	_, fourCardsZeRO1, _, _, _, nothing := configs()
	card := profile(t, nothing.card)
	_, ok := best(t, nothing.m, card)
	require.False(t, ok)
	_, ok, err := Choose(nothing.m, card)
	require.NoError(t, err)
	assert.False(t, ok, "%v with %d rows fits on no group of classroom cards", nothing.m.Widths, nothing.m.Tokens)
	_, ok, err = Choose(fourCardsZeRO1.m, profile(t, fourCardsZeRO1.card))
	require.NoError(t, err)
	assert.True(t, ok)
}
