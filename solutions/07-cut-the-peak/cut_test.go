package cutpeak

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPeakCut(t *testing.T) {
	base, err := Peak(512, 8, 8192, BaselineStep)
	require.NoError(t, err)
	got, err := Peak(512, 8, 8192, TrainStep)
	require.NoError(t, err)
	t.Logf("baseline peak %d bytes, TrainStep peak %d bytes (%.0f%%)", base, got, 100*float64(got)/float64(base))
	assert.LessOrEqual(t, got, base*40/100)
}
