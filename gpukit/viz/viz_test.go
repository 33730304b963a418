package viz

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFormatBytes(t *testing.T) {
	for _, tc := range []struct {
		n    int64
		want string
	}{
		{0, "0 B"},
		{512, "512 B"},
		{1024, "1.00 KiB"},
		{20971520, "20.00 MiB"},
		{4000256, "3.81 MiB"},
		{2 << 30, "2.00 GiB"},
		{-2048, "-2.00 KiB"},
	} {
		assert.Equal(t, tc.want, FormatBytes(tc.n), "FormatBytes(%d)", tc.n)
	}
}

func TestLinesRendersPNGAndSVG(t *testing.T) {
	p, err := Lines("memory", "step", "allocated", true,
		Series{Name: "a", X: []float64{0, 1, 2}, Y: []float64{0, 1 << 20, 3 << 20}})
	require.NoError(t, err)
	png, err := PNG(p, 0, 0)
	require.NoError(t, err)
	assert.True(t, bytes.HasPrefix(png, []byte("\x89PNG")), "PNG signature")
	svg, err := SVG(p, 0, 0)
	require.NoError(t, err)
	assert.Contains(t, string(svg), "MiB", "the byte axis is labelled in MiB")
}

func TestMismatchedSeriesIsAnError(t *testing.T) {
	_, err := Lines("x", "", "", false, Series{Name: "bad", X: []float64{1, 2}, Y: []float64{1}})
	assert.ErrorContains(t, err, `viz: series "bad" has 2 x values and 1 y values`)
	_, err = Bars("x", "", false, []string{"a"}, []float64{1, 2})
	assert.ErrorContains(t, err, "viz: 1 labels for 2 values")
}

func ExampleFormatBytes() {
	fmt.Println(FormatBytes(4000256))
	fmt.Println(FormatBytes(20971520))
	// Output:
	// 3.81 MiB
	// 20.00 MiB
}

func TestByteTicksAreRoundBinaryNumbers(t *testing.T) {
	var labels []string
	for _, tick := range (ByteTicks{}).Ticks(0, 112<<20) {
		if tick.Label != "" {
			labels = append(labels, tick.Label)
		}
	}
	assert.Equal(t, []string{"0 B", "16.00 MiB", "32.00 MiB", "48.00 MiB", "64.00 MiB", "80.00 MiB", "96.00 MiB", "112.00 MiB"}, labels)
}

func TestBarsCarryTheirValues(t *testing.T) {
	p, err := Bars("kept", "bytes", true, []string{"big", "tiny"}, []float64{64 << 20, 16 << 10})
	require.NoError(t, err)
	svg, err := SVG(p, 0, 0)
	require.NoError(t, err)
	assert.Contains(t, string(svg), "16.00 KiB", "a bar too small to see is still labelled")
	assert.Contains(t, string(svg), "64.00 MiB")
}
