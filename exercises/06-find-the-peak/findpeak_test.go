package findpeak

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

// checkStep runs FindPeak on one training step and the same step on a twin
// device with the allocator's peak reset at each phase: the peak phase and
// its bytes must be the allocator's, and FindPeak keeps no memory of its
// own.
func checkStep(t *testing.T, batch int, sizes []int, adam bool) {
	t.Helper()
	dev := simtest.Card(t)
	phases := MLPStep(dev, batch, sizes, adam)
	report, err := FindPeak(dev, phases)
	require.NoError(t, err)
	twin := simtest.Card(t)
	twinPhases := MLPStep(twin, batch, sizes, adam)
	name, peak := allocatorPeaks(twin, twinPhases)
	require.Equal(t, name, report.PeakPhase, "the phase that makes the peak (batch %d, sizes %v)", batch, sizes)
	require.Equal(t, peak, report.PeakBytes, "the peak in bytes, as the allocator's counter has it with its peak reset when the phase begins (batch %d, sizes %v)", batch, sizes)
	require.Equal(t, twin.MemoryAllocated(), dev.MemoryAllocated(), "bytes allocated after the step: FindPeak keeps nothing the step does not keep")
	runtime.KeepAlive(phases) // the model lives in the phases' closures
	runtime.KeepAlive(twinPhases)
}

// The twin of the grader's TestHiddenPeakOfWideSGDStep, on other shapes.
func TestPeakOfAnSGDStep(t *testing.T) {
	tensortest.NoCollector(t)
	checkStep(t, 16, []int{64, 256, 10}, false)
	checkStep(t, 384, []int{40, 1280, 6}, false)
}

// The twin of the grader's TestHiddenPeakOfAdamStep, on another model.
func TestPeakOfAnAdamStep(t *testing.T) {
	tensortest.NoCollector(t)
	checkStep(t, 24, []int{160, 640, 320, 20}, true)
}

// The twin of the grader's TestHiddenPeakEqualsStepPeak, on another model:
// the peak phase holds the peak of the whole step.
func TestPeakIsTheWholeStepsPeak(t *testing.T) {
	tensortest.NoCollector(t)
	dev := simtest.Card(t)
	phases := MLPStep(dev, 28, []int{96, 512, 512, 24}, true)
	dev.ResetPeakStats()
	report, err := FindPeak(dev, phases)
	require.NoError(t, err)
	require.Equal(t, dev.MaxMemoryAllocated(), report.PeakBytes, "the peak phase's bytes are the peak of the whole step, as dev.MaxMemoryAllocated() has it")
	runtime.KeepAlive(phases)
}

func TestTopOp(t *testing.T) {
	dev := simtest.Card(t)
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

// The twin of the grader's TestHiddenTopOpSingle, on other ops and shapes:
// the top op is an op, not a range whose total is larger.
func TestTopOpIsNotARange(t *testing.T) {
	tensortest.NoCollector(t)
	dev := simtest.Card(t)
	a := tensor.Ones([]int{250, 600}, tensor.On(dev)) // 600000 bytes, a 600064-byte block
	c := tensor.Ones([]int{100, 900}, tensor.On(dev)) // 360000 bytes, a 360448-byte block
	var kept []*tensor.Tensor
	phases := []Phase{
		{"tanh", func() { r := a.Tanh(); r.Release() }},
		{"neg", func() { r := c.Neg(); r.Release() }},
		// Four results of 360448 bytes kept: this range holds more than
		// any op's self memory, but it is not an op.
		{"keep", func() { kept = append(kept, c.Mul(3), c.Sqrt(), c.Exp(), c.Abs()) }},
	}
	report, err := FindPeak(dev, phases)
	require.NoError(t, err)
	require.Equal(t, "tensor::Tanh", report.TopOp, "the op with the most self device memory: an op of the table, not a range")
	require.Equal(t, int64(600064), report.TopOpBytes, "tensor::Tanh's self device memory")
	require.Equal(t, "keep", report.PeakPhase)
	for _, k := range kept {
		k.Release()
	}
}

// The twin of the grader's TestHiddenTopOpSummedOverCalls, on other ops and
// sizes: an op's self memory is summed over its calls.
func TestTopOpSummedOverCalls(t *testing.T) {
	tensortest.NoCollector(t)
	dev := simtest.Card(t)
	x := tensor.Ones([]int{1 << 17}, tensor.On(dev)) // 512 KiB
	y := tensor.Ones([]int{3 << 17}, tensor.On(dev)) // 1.5 MiB
	phases := []Phase{
		{"four negs", func() {
			for range 4 {
				n := x.Neg() // 512 KiB each, 2 MiB in all
				n.Release()
			}
		}},
		{"one sigmoid", func() { s := y.Sigmoid(); s.Release() }}, // 1.5 MiB once
	}
	report, err := FindPeak(dev, phases)
	require.NoError(t, err)
	require.Equal(t, "tensor::Neg", report.TopOp, "self device memory summed over the op's calls")
	require.Equal(t, int64(2<<20), report.TopOpBytes, "tensor::Neg's self device memory over its four calls")
	require.Equal(t, "one sigmoid", report.PeakPhase)
	require.Equal(t, int64(1<<19+3<<20), report.PeakBytes, "x, y and the result of Sigmoid")
}

// The twin of the grader's TestHiddenTiesGoToTheFirst, on other ops and
// names: ties go to the earlier phase and to the op that first appears in
// the table, not the last one, not the first in alphabetical order.
func TestTiesGoToTheFirst(t *testing.T) {
	tensortest.NoCollector(t)
	dev := simtest.Card(t)
	x := tensor.Ones([]int{1 << 17}, tensor.On(dev)) // 512 KiB
	phases := []Phase{
		{"omega", func() { s := x.Sigmoid(); s.Release() }}, // 512 KiB
		{"beta", func() { a := x.Abs(); a.Release() }},      // 512 KiB too
	}
	report, err := FindPeak(dev, phases)
	require.NoError(t, err)
	require.Equal(t, "omega", report.PeakPhase, "two phases peak at the same bytes: the earlier one is the peak phase")
	require.Equal(t, int64(1<<20), report.PeakBytes, "x and one result of 512 KiB")
	require.Equal(t, "tensor::Sigmoid", report.TopOp, "two ops have the same self device memory: the one that first appears in the table (it ran first)")
	require.Equal(t, int64(1<<19), report.TopOpBytes)
	runtime.KeepAlive(x)
}

// The twin of the grader's TestHiddenNoPhases: no phases (nil here) is an
// error, and no profile is left running.
func TestNoPhases(t *testing.T) {
	_, err := FindPeak(simtest.Card(t), nil)
	require.ErrorContains(t, err, "phase")
	p, err := profiler.Start(profiler.Options{})
	require.NoError(t, err, "FindPeak without phases must leave no profile running")
	p.Stop()
}

// The twin of the grader's TestHiddenStopsItsProfile, on another step: the
// profile FindPeak started is stopped when it returns, also when a phase
// panics.
func TestStopsItsProfile(t *testing.T) {
	tensortest.NoCollector(t)
	dev := simtest.Card(t)
	_, err := FindPeak(dev, MLPStep(dev, 4, []int{12, 24, 3}, true))
	require.NoError(t, err)
	p, err := profiler.Start(profiler.Options{})
	require.NoError(t, err, "FindPeak must stop the profile it started")
	p.Stop()

	func() {
		defer func() { _ = recover() }()
		_, _ = FindPeak(dev, []Phase{{"ok", func() {}}, {"fails", func() { panic("the second phase failed") }}})
	}()
	p, err = profiler.Start(profiler.Options{})
	require.NoError(t, err, "a phase panicked: FindPeak must still stop the profile it started (defer the Stop)")
	p.Stop()
}

// The twin of the grader's TestHiddenRefusesInsideAProfile, with other
// phases: inside a running profile FindPeak returns the profiler's error,
// runs nothing and leaves the caller's profile running.
func TestRefusesInsideAProfile(t *testing.T) {
	tensortest.NoCollector(t)
	dev := simtest.Card(t)
	outer, err := profiler.Start(profiler.Options{})
	require.NoError(t, err)
	defer outer.Stop()
	ran := 0
	_, err = FindPeak(dev, []Phase{{"first", func() { ran++ }}, {"second", func() { ran++ }}})
	require.ErrorContains(t, err, "already running", "the profiler's own error, passed on")
	require.Zero(t, ran, "phases that ran although the profile could not start")
	_, err = profiler.Start(profiler.Options{})
	require.Error(t, err, "the caller's profile must still be running: FindPeak stopped it")
}
