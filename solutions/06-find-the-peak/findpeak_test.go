package findpeak

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gpumem/course/gpukit/device"
	"github.com/gpumem/course/gpukit/device/sim"
	"github.com/gpumem/course/gpukit/tensor"
)

func newDev(t *testing.T) *device.Device {
	t.Helper()
	p, err := device.LookupProfile("classroom")
	require.NoError(t, err)
	d, err := device.New(sim.New(0, p))
	require.NoError(t, err)
	return d
}

// allocatorPeaks runs the phases with the allocator's peak counter reset
// at the start of each, and returns the phase with the highest peak.
func allocatorPeaks(dev *device.Device, phases []Phase) (string, int64) {
	var name string
	var peak int64
	for _, ph := range phases {
		dev.ResetPeakStats()
		ph.Run()
		if p := dev.MaxMemoryAllocated(); p > peak {
			name, peak = ph.Name, p
		}
	}
	return name, peak
}

func TestPeakOfAnSGDStep(t *testing.T) {
	sizes := []int{64, 256, 10}
	dev := newDev(t)
	report, err := FindPeak(dev, MLPStep(dev, 16, sizes, false))
	require.NoError(t, err)
	twin := newDev(t)
	name, peak := allocatorPeaks(twin, MLPStep(twin, 16, sizes, false))
	require.Equal(t, name, report.PeakPhase)
	require.Equal(t, peak, report.PeakBytes)
}

func TestTopOp(t *testing.T) {
	dev := newDev(t)
	big := tensor.Ones([]int{512, 1024}, tensor.On(dev)) // 2 MiB
	small := tensor.Ones([]int{128}, tensor.On(dev))
	phases := []Phase{
		{"small", func() { s := small.Mul(2); s.Release() }},
		{"big", func() { e := big.Exp(); e.Release() }},
	}
	report, err := FindPeak(dev, phases)
	require.NoError(t, err)
	require.Equal(t, "tensor::Exp", report.TopOp)
	require.Equal(t, int64(2<<20), report.TopOpBytes)
	require.Equal(t, "big", report.PeakPhase)
	require.Equal(t, int64(2*(2<<20)+512), report.PeakBytes, "big, small and the result of Exp")
}

func TestNoPhases(t *testing.T) {
	_, err := FindPeak(newDev(t), nil)
	require.ErrorContains(t, err, "phase")
}
