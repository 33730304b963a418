// Mutant: when a profile is already running, the phases still run, unprofiled, before the error is returned.

// Package findpeak is the exercise of lesson 06: instrument a training
// step with gpukit/profiler and report where its memory peaks.
package findpeak

import (
	"errors"
	"fmt"
	"strings"

	"github.com/gpumem/course/gpukit/device"
	"github.com/gpumem/course/gpukit/profiler"
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
	if len(phases) == 0 {
		return Report{}, errors.New("findpeak: no phases to run")
	}
	p, err := profiler.Start(profiler.Options{})
	if err != nil {
		for _, ph := range phases {
			ph.Run()
		}
		return Report{}, fmt.Errorf("findpeak: %w", err)
	}
	func() {
		defer p.Stop() // also when a phase panics
		for _, ph := range phases {
			end := profiler.Record(ph.Name)
			ph.Run()
			end()
		}
	}()

	peaks, err := p.PhasePeaks(dev)
	if err != nil {
		return Report{}, fmt.Errorf("findpeak: %w", err)
	}
	var r Report
	for i, pk := range peaks {
		if i == 0 || pk.Peak > r.PeakBytes {
			r.PeakPhase, r.PeakBytes = pk.Name, pk.Peak
		}
	}
	rows, err := p.KeyAverages(false)
	if err != nil {
		return Report{}, fmt.Errorf("findpeak: %w", err)
	}
	for _, row := range rows {
		if strings.HasPrefix(row.Key, "tensor::") && (r.TopOp == "" || row.SelfDeviceMemory > r.TopOpBytes) {
			r.TopOp, r.TopOpBytes = row.Key, row.SelfDeviceMemory
		}
	}
	return r, nil
}
