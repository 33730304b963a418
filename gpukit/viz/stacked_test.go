package viz

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestStackedSteps(t *testing.T) {
	x := []float64{0, 1, 2}
	p, err := StackedSteps("memory", "time", "bytes", true, x,
		Series{Name: "a", Y: []float64{1, 2, 0}}, Series{Name: "b", Y: []float64{0, 0, 0}}, Series{Name: "c", Y: []float64{3, 3, 3}})
	require.NoError(t, err)
	png, err := PNG(p, 0, 0)
	require.NoError(t, err)
	require.NotEmpty(t, png)

	_, err = StackedSteps("m", "", "", false, x, Series{Name: "short", Y: []float64{1}})
	require.ErrorContains(t, err, `layer "short" has 1 values for 3 x values`)
	_, err = StackedSteps("m", "", "", false, nil)
	require.Error(t, err)
}

func TestStepOutline(t *testing.T) {
	pts := stepOutline([]float64{0, 1}, []float64{0, 0}, []float64{2, 5})
	// up the steps: (0,2) (1,2) (1,5); back along the bottom: (1,0) (1,0) (0,0)
	want := []float64{2, 2, 5, 0, 0, 0}
	require.Len(t, pts, len(want))
	for i, p := range pts {
		require.Equal(t, want[i], p.Y, "point %d", i)
	}
}
