// Package findpeak is the exercise of lesson 06: instrument a training
// step with gpukit/profiler and report where its memory peaks.
package findpeak

import (
	"errors"

	"github.com/gpumem/course/gpukit/device"
)

// Report is what FindPeak measured over one run of the phases.
type Report struct {
	// PeakPhase is the name of the phase during which dev's allocated
	// memory reached its highest, and PeakBytes that highest value: what
	// dev.MaxMemoryAllocated() would report had its peak been reset when
	// the phase began.
	PeakPhase string
	PeakBytes int64
	// TopOp is the op (a row of the profiler's table, such as
	// "tensor::Matmul"; not a range, not "[memory]") with the most self
	// device memory over the whole run, summed over its calls as the Self
	// CUDA Mem column sums it, and TopOpBytes that sum.
	TopOp      string
	TopOpBytes int64
}

// FindPeak runs the phases once, in order, under the profiler, each
// inside a range named after it (profiler.Record), and reports the phase
// that makes the peak of dev's allocated memory and the op with the most
// self device memory. It returns an error, and runs nothing, when there
// are no phases or when a profile is already running; the profile it
// starts is stopped before it returns.
func FindPeak(dev *device.Device, phases []Phase) (Report, error) {
	// TODO: start a profile, run each phase inside profiler.Record(name),
	// stop the profile, then read p.PhasePeaks(dev) and p.KeyAverages.
	return Report{}, errors.New("findpeak: not implemented yet")
}
