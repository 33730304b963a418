package viz

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDeviceMemory(t *testing.T) {
	p, err := DeviceMemory("two cards", "ms",
		Series{Name: "card 0", X: []float64{0, 1, 3}, Y: []float64{1 << 20, 3 << 20, 1 << 20}},
		Series{Name: "card 1", X: []float64{0, 2}, Y: []float64{0, 2 << 20}})
	require.NoError(t, err)
	svg, err := SVG(p, 0, 0)
	require.NoError(t, err)
	assert.True(t, bytes.Contains(svg, []byte("card 1")), "one legend entry per device")
	assert.True(t, bytes.Contains(svg, []byte("MiB")), "a bytes axis")

	_, err = DeviceMemory("none", "ms")
	assert.ErrorContains(t, err, "no devices")
	_, err = DeviceMemory("bad", "ms", Series{Name: "c", X: []float64{0, 1}, Y: []float64{1}})
	assert.ErrorContains(t, err, `device "c" has 2 times and 1 values`)
	_, err = DeviceMemory("bad", "ms", Series{Name: "c", X: []float64{1, 0}, Y: []float64{1, 1}})
	assert.ErrorContains(t, err, "must not decrease")
}

func TestStepSeries(t *testing.T) {
	got := stepSeries(Series{Name: "d", X: []float64{0, 1, 3}, Y: []float64{5, 7, 2}})
	assert.Equal(t, []float64{0, 1, 1, 3, 3}, got.X)
	assert.Equal(t, []float64{5, 5, 7, 7, 2}, got.Y)
}
