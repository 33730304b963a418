package profiler_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/gpumem/course/gpukit/profiler"
	"github.com/gpumem/course/gpukit/tensor"
)

func TestProfilerMisuse(t *testing.T) {
	var nilProfile *profiler.Profile
	assert.NotPanics(t, nilProfile.Stop)
	_, err := nilProfile.Events()
	assert.EqualError(t, err, "profiler: the profile is nil (did Start return an error?)")
	_, err = nilProfile.Timeline(nil)
	assert.ErrorContains(t, err, "profiler: ")

	p, err := profiler.Start(profiler.Options{})
	if !assert.NoError(t, err) {
		return
	}
	dev := newDev(t)
	tensor.Ones([]int{4}, tensor.On(dev)).Release()
	p.Stop()
	_, err = p.Timeline(nil)
	assert.EqualError(t, err, "profiler: Timeline of a nil device")
	_, err = p.PhasePeaks(nil)
	assert.EqualError(t, err, "profiler: Timeline of a nil device")
	assert.EqualError(t, p.WriteChromeTrace(nil), "profiler: WriteChromeTrace to a nil writer")

	var m *profiler.Monitor
	assert.Nil(t, m.Stop())
}
