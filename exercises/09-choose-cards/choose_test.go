package choosecards

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpumem/course/gpukit/device"
	"github.com/gpumem/course/gpukit/distributed"
)

// Four layers of 8192×8192 (268 M parameters) with 512 rows per card on
// the 2 GiB classroom card: the model states alone are 4.3 GB with Adam,
// and it takes four cards at ZeRO-3 (measured: lower stages keep too much
// on each card, and two cards hold too much even at ZeRO-3).
func TestChoosePublic(t *testing.T) {
	card, err := device.LookupProfile("classroom")
	require.NoError(t, err)
	m := Model{Widths: []int{8192, 8192, 8192, 8192, 8192}, Tokens: 512}

	fits, err := Fits(m, Plan{Devices: 4, Stage: distributed.ZeRO3}, card)
	require.NoError(t, err)
	assert.True(t, fits, "4 cards at ZeRO-3 fit")
	fits, err = Fits(m, Plan{Devices: 2, Stage: distributed.ZeRO3}, card)
	require.NoError(t, err)
	assert.False(t, fits, "2 cards at ZeRO-3 do not")

	p, ok, err := Choose(m, card)
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, Plan{Devices: 4, Stage: distributed.ZeRO3}, p)
}

// The public twin of the grader's TestHiddenLowestStage, on other models
// and cards: where a lower stage fits on as few cards as a higher one,
// Choose takes the lower (the least communication). The plans were
// measured: ZeRO-3 fits on as few cards in both.
func TestChoosesTheLowestStage(t *testing.T) {
	for _, c := range []struct {
		m    Model
		card string
		want Plan
	}{
		{Model{slices.Repeat([]int{8192}, 3), 2048}, "classroom", Plan{Devices: 2, Stage: distributed.ZeRO1}},
		{Model{slices.Repeat([]int{8192}, 4), 4096}, "t4", Plan{Devices: 1, Stage: distributed.DDP}},
	} {
		card, err := device.LookupProfile(c.card)
		require.NoError(t, err)
		got, ok, err := Choose(c.m, card)
		require.NoError(t, err)
		assert.True(t, ok, "%d layers of %d with %d rows per card on %s cards fit", len(c.m.Widths)-1, c.m.Widths[0], c.m.Tokens, c.card)
		assert.Equal(t, c.want.String(), got.String(), "%d layers of %d with %d rows per card on %s cards: the fewest cards, then the lowest stage that fits on them", len(c.m.Widths)-1, c.m.Widths[0], c.m.Tokens, c.card)
	}
}

// The public twin of the grader's TestHiddenNothingFits, on another
// model: 16384 rows of 8192 per card fit on no group of classroom cards,
// however many share the model: Choose says so with ok false (and no
// error); a model that fits gets ok true.
func TestNothingFitsIsNotOK(t *testing.T) {
	card, err := device.LookupProfile("classroom")
	require.NoError(t, err)
	_, ok, err := Choose(Model{slices.Repeat([]int{8192}, 3), 16384}, card)
	require.NoError(t, err)
	assert.False(t, ok, "2 layers of 8192 with 16384 rows per card fit on no group of up to %d classroom cards", MaxDevices)
	_, ok, err = Choose(Model{slices.Repeat([]int{8192}, 3), 2048}, card)
	require.NoError(t, err)
	assert.True(t, ok, "2 layers of 8192 with 2048 rows per card fit on 2 classroom cards")
}
