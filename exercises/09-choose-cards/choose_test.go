package choosecards

import (
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
