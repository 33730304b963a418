package leak

import (
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/gpumem/course/gpukit/device"
	"github.com/gpumem/course/gpukit/device/sim"
)

// newDevice opens a private simulated classroom card that holds its
// cuBLAS workspace.
func newDevice(t *testing.T) *device.Device {
	t.Helper()
	p, err := device.LookupProfile("classroom")
	if err != nil {
		t.Fatal(err)
	}
	d, err := device.New(sim.New(0, p))
	if err != nil {
		t.Fatal(err)
	}
	// the first product on the card takes cuBLAS's workspace (lesson 02),
	// which stays for good: take it now, so that the tests measure tensors
	if err := d.BlasWorkspace(d.DefaultStream()); err != nil {
		t.Fatal(err)
	}
	return d
}

// noCollector turns Go's garbage collector off for the test: memory must be
// returned by Release, not by a collection that may or may not run.
func noCollector(t *testing.T) {
	old := debug.SetGCPercent(-1)
	t.Cleanup(func() { debug.SetGCPercent(old) })
}

func TestHistoryValues(t *testing.T) {
	noCollector(t)
	dev := newDevice(t)
	m := NewMLP(dev, 16, 64, 4, 1)
	d := NewData(dev, 128, 16, 4, 2)
	before := dev.MemoryAllocated()
	h, err := Fit(m, d, 10, 0.05)
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Train) != 10 || len(h.Val) != 10 {
		t.Fatalf("logged %d training and %d validation losses, want 10 of each", len(h.Train), len(h.Val))
	}
	if h.Train[9] >= h.Train[0] {
		t.Errorf("the training loss went from %g to %g: it should go down", h.Train[0], h.Train[9])
	}
	if after := dev.MemoryAllocated(); after != before {
		t.Errorf("allocated memory went from %d to %d bytes during Fit, want no change", before, after)
	}
	runtime.KeepAlive(m)
	runtime.KeepAlive(d)
}

func TestMemoryFlat(t *testing.T) {
	noCollector(t)
	peak := func(steps int) int64 {
		dev := newDevice(t)
		m := NewMLP(dev, 16, 64, 4, 1)
		d := NewData(dev, 128, 16, 4, 2)
		base := dev.MemoryAllocated()
		dev.ResetPeakStats()
		if _, err := Fit(m, d, steps, 0.05); err != nil {
			t.Fatal(err)
		}
		runtime.KeepAlive(m)
		runtime.KeepAlive(d)
		return dev.MaxMemoryAllocated() - base
	}
	if few, many := peak(3), peak(12); few != many {
		t.Errorf("peak memory above the model and data: %d bytes for 3 steps, %d for 12: it must not grow with steps", few, many)
	}
}
