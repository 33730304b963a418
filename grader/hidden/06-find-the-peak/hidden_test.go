package findpeak

// Hidden tests of exercise 06-find-the-peak. They use other models and
// shapes than the public tests, and check the report against the
// allocator's own counters on a twin device that runs the same step.

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gpumem/course/gpukit/device"
	"github.com/gpumem/course/gpukit/device/simtest"
	"github.com/gpumem/course/gpukit/profiler"
	"github.com/gpumem/course/gpukit/tensor"
	"github.com/gpumem/course/gpukit/tensor/tensortest"
)

func hiddenDev(t *testing.T) *device.Device {
	t.Helper()
	return simtest.Card(t, simtest.Index(3))
}

// truth runs the phases with the allocator's peak counter reset at the
// start of each and returns the phase with the highest peak and that
// peak.
func truth(dev *device.Device, phases []Phase) (string, int64) {
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

func checkMLP(t *testing.T, batch int, sizes []int, adam bool) {
	t.Helper()
	dev := hiddenDev(t)
	phases := MLPStep(dev, batch, sizes, adam)
	report, err := FindPeak(dev, phases)
	require.NoError(t, err)
	twin := hiddenDev(t)
	twinPhases := MLPStep(twin, batch, sizes, adam)
	name, peak := truth(twin, twinPhases)
	require.Equal(t, name, report.PeakPhase, "the phase that makes the peak")
	require.Equal(t, peak, report.PeakBytes, "the peak, as the allocator's counter has it")
	require.Equal(t, twin.MemoryAllocated(), dev.MemoryAllocated(), "FindPeak keeps nothing the step does not keep")
	runtime.KeepAlive(phases) // the model lives in the phases' closures
	runtime.KeepAlive(twinPhases)
}

func TestHiddenPeakOfAdamStep(t *testing.T) {
	tensortest.NoCollector(t)
	checkMLP(t, 48, []int{256, 1024, 512, 32}, true)
}

func TestHiddenPeakOfWideSGDStep(t *testing.T) {
	tensortest.NoCollector(t)
	checkMLP(t, 512, []int{96, 1536, 12}, false)
}

func TestHiddenPeakEqualsStepPeak(t *testing.T) {
	tensortest.NoCollector(t)
	dev := hiddenDev(t)
	phases := MLPStep(dev, 40, []int{128, 768, 768, 16}, true)
	dev.ResetPeakStats()
	report, err := FindPeak(dev, phases)
	require.NoError(t, err)
	require.Equal(t, dev.MaxMemoryAllocated(), report.PeakBytes, "the peak phase holds the peak of the whole step")
}

func TestHiddenTopOpSingle(t *testing.T) {
	tensortest.NoCollector(t)
	dev := hiddenDev(t)
	a := tensor.Ones([]int{300, 700}, tensor.On(dev)) // 840000 bytes, an 840192-byte block
	b := tensor.Ones([]int{700, 50}, tensor.On(dev))
	c := tensor.Ones([]int{200, 700}, tensor.On(dev)) // 560000 bytes, a 560128-byte block
	var kept []*tensor.Tensor
	phases := []Phase{
		{"matmul", func() { c := a.Matmul(b); c.Release() }},  // 60000 bytes
		{"sigmoid", func() { s := a.Sigmoid(); s.Release() }}, // 840192-byte block
		{"tail", func() { c := b.Neg(); c.Release() }},
		// A range whose total (3 × 560128 bytes kept) exceeds every op's
		// self memory: it is not an op.
		{"keep", func() { kept = append(kept, c.Mul(2), c.Exp(), c.Neg()) }},
	}
	report, err := FindPeak(dev, phases)
	require.NoError(t, err)
	require.Equal(t, "tensor::Sigmoid", report.TopOp, "the op with the most self device memory, not a range")
	require.Equal(t, int64(840192), report.TopOpBytes)
	require.Equal(t, "keep", report.PeakPhase)
	for _, k := range kept {
		k.Release()
	}
}

func TestHiddenTopOpSummedOverCalls(t *testing.T) {
	tensortest.NoCollector(t)
	dev := hiddenDev(t)
	x := tensor.Ones([]int{1 << 18}, tensor.On(dev)) // 1 MiB
	y := tensor.Ones([]int{3 << 17}, tensor.On(dev)) // 1.5 MiB
	phases := []Phase{
		{"three muls", func() {
			for range 3 {
				m := x.Mul(3) // 1 MiB each, 3 MiB in all
				m.Release()
			}
		}},
		{"one exp", func() { e := y.Exp(); e.Release() }}, // 1.5 MiB once
	}
	report, err := FindPeak(dev, phases)
	require.NoError(t, err)
	require.Equal(t, "tensor::Mul", report.TopOp, "self memory summed over the op's calls")
	require.Equal(t, int64(3<<20), report.TopOpBytes)
	require.Equal(t, "one exp", report.PeakPhase)
	require.Equal(t, int64(1<<20+3<<20), report.PeakBytes, "x, y and the result of Exp")
}

// Ties go to the first: the earlier phase, and the op that first appears
// in the table (KeyAverages' order), not the last one, not the first name
// in alphabetical order.
func TestHiddenTiesGoToTheFirst(t *testing.T) {
	tensortest.NoCollector(t)
	dev := hiddenDev(t)
	x := tensor.Ones([]int{1 << 18}, tensor.On(dev)) // 1 MiB
	phases := []Phase{
		{"zeta", func() { n := x.Neg(); n.Release() }},  // 1 MiB
		{"alpha", func() { e := x.Exp(); e.Release() }}, // 1 MiB too
	}
	report, err := FindPeak(dev, phases)
	require.NoError(t, err)
	require.Equal(t, "zeta", report.PeakPhase, "two phases peak at the same bytes: the earlier one is the peak phase")
	require.Equal(t, int64(2<<20), report.PeakBytes, "x and one result of 1 MiB")
	require.Equal(t, "tensor::Neg", report.TopOp, "two ops have the same self device memory: the one that first appears in the table (it ran first)")
	require.Equal(t, int64(1<<20), report.TopOpBytes)
	runtime.KeepAlive(x)
}

func TestHiddenNoPhases(t *testing.T) {
	tensortest.NoCollector(t)
	dev := hiddenDev(t)
	_, err := FindPeak(dev, []Phase{})
	require.ErrorContains(t, err, "phase")
	p, err := profiler.Start(profiler.Options{})
	require.NoError(t, err, "FindPeak without phases leaves no profile running")
	p.Stop()
}

func TestHiddenStopsItsProfile(t *testing.T) {
	tensortest.NoCollector(t)
	dev := hiddenDev(t)
	_, err := FindPeak(dev, MLPStep(dev, 8, []int{16, 32, 4}, false))
	require.NoError(t, err)
	p, err := profiler.Start(profiler.Options{})
	require.NoError(t, err, "FindPeak must stop the profile it started")
	p.Stop()

	// Also when a phase panics (the profile's Stop is deferred).
	func() {
		defer func() { _ = recover() }()
		_, _ = FindPeak(dev, []Phase{{"boom", func() { panic("a phase failed") }}})
	}()
	p, err = profiler.Start(profiler.Options{})
	require.NoError(t, err, "a phase panicked: FindPeak must still stop the profile it started (defer)")
	p.Stop()
}

func TestHiddenRefusesInsideAProfile(t *testing.T) {
	tensortest.NoCollector(t)
	dev := hiddenDev(t)
	outer, err := profiler.Start(profiler.Options{})
	require.NoError(t, err)
	defer outer.Stop()
	ran := false
	_, err = FindPeak(dev, []Phase{{"x", func() { ran = true }}})
	require.ErrorContains(t, err, "already running", "the profiler's own error, passed on")
	require.False(t, ran, "nothing runs when the profile cannot start")
	_, err = profiler.Start(profiler.Options{})
	require.Error(t, err, "the caller's profile is still running: FindPeak did not stop it")
}
