package sharing

import (
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/gpumem/course/gpukit/alloc"
	"github.com/gpumem/course/gpukit/device"
	"github.com/gpumem/course/gpukit/device/sim"
	"github.com/gpumem/course/gpukit/tensor"
)

// newDevice opens a private simulated classroom card, so that no test sees
// another's allocations.
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

type op = func(*tensor.Tensor) *tensor.Tensor

func TestViewsShareStorage(t *testing.T) {
	dev := newDevice(t)
	m := tensor.Randn([]int{30, 40}, tensor.On(dev))
	for name, f := range map[string]op{
		"T":         func(x *tensor.Tensor) *tensor.Tensor { return x.T() },
		"Select":    func(x *tensor.Tensor) *tensor.Tensor { return x.Select(0, 7) },
		"Narrow":    func(x *tensor.Tensor) *tensor.Tensor { return x.Narrow(1, 5, 10) },
		"View":      func(x *tensor.Tensor) *tensor.Tensor { return x.View(-1) },
		"Unsqueeze": func(x *tensor.Tensor) *tensor.Tensor { return x.Unsqueeze(0) },
	} {
		r, err := Classify(m, f)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !r.Shares || r.Allocations != 0 || r.Bytes != 0 {
			t.Errorf("%s: got %+v, want a view: shares storage, 0 allocations, 0 bytes", name, r)
		}
	}
}

func TestCopiesAllocate(t *testing.T) {
	dev := newDevice(t)
	m := tensor.Randn([]int{30, 40}, tensor.On(dev))
	block := alloc.Config{}.RoundSize(30 * 40 * 4) // one float32 copy, rounded to the allocator's 512 B
	for name, f := range map[string]op{
		"Clone":            func(x *tensor.Tensor) *tensor.Tensor { return x.Clone() },
		"T().Contiguous()": func(x *tensor.Tensor) *tensor.Tensor { tr := x.T(); defer tr.Release(); return tr.Contiguous() },
		"Add(1)":           func(x *tensor.Tensor) *tensor.Tensor { return x.Add(1) },
	} {
		r, err := Classify(m, f)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if r.Shares || r.Allocations != 1 || r.Bytes != block {
			t.Errorf("%s: got %+v, want a copy: own storage, 1 allocation, %d bytes", name, r, block)
		}
	}
}

// gcOff turns Go's collector off until the test ends, so that what the
// test measures does not depend on when a collection runs.
func gcOff(t *testing.T) {
	tensor.CollectGarbage()
	old := debug.SetGCPercent(-1)
	t.Cleanup(func() { debug.SetGCPercent(old) })
}

// The public twin of the grader's TestResultReleased, on other ops and
// another shape: after Classify, memory, live blocks and the input's
// references are as they were.
func TestReleasesTheResult(t *testing.T) {
	gcOff(t)
	dev := newDevice(t)
	x := tensor.Randn([]int{20, 50}, tensor.On(dev))
	for name, f := range map[string]op{
		"Narrow": func(x *tensor.Tensor) *tensor.Tensor { return x.Narrow(0, 2, 5) },
		"Mul(2)": func(x *tensor.Tensor) *tensor.Tensor { return x.Mul(2) },
	} {
		allocated, live, refs := dev.MemoryAllocated(), dev.Stats()["allocation.all.current"], x.Storage().Refs()
		if _, err := Classify(x, f); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := dev.MemoryAllocated(); got != allocated {
			t.Errorf("%s: allocated memory %d after Classify, want %d as before: release the result", name, got, allocated)
		}
		if got := dev.Stats()["allocation.all.current"]; got != live {
			t.Errorf("%s: %d live blocks after Classify, want %d", name, got, live)
		}
		if got := x.Storage().Refs(); got != refs {
			t.Errorf("%s: the input's storage has %d references after Classify, want %d: release the result", name, got, refs)
		}
	}
	runtime.KeepAlive(x)
}

// The public twin of the grader's TestFailingOps: bad input and an op that
// fails give an error (any message), never a panic, and change nothing.
func TestErrorsNotPanics(t *testing.T) {
	gcOff(t)
	dev := newDevice(t)
	x := tensor.Randn([]int{6, 7}, tensor.On(dev))
	allocated := dev.MemoryAllocated()
	for name, c := range map[string]struct {
		x *tensor.Tensor
		f op
	}{
		"View(-1) of a transpose (gpukit panics)": {x, func(x *tensor.Tensor) *tensor.Tensor {
			tr := x.T()
			defer tr.Release()
			return tr.View(-1)
		}},
		"an op returning nil": {x, func(*tensor.Tensor) *tensor.Tensor { return nil }},
		"a nil op":            {x, nil},
		"a nil tensor":        {nil, func(x *tensor.Tensor) *tensor.Tensor { return x.T() }},
	} {
		if r, err := Classify(c.x, c.f); err == nil {
			t.Errorf("%s: got %+v and no error, want an error", name, r)
		}
	}
	// The same op on a layout it can express is measured, as a view.
	if r, err := Classify(x, func(x *tensor.Tensor) *tensor.Tensor { return x.View(-1) }); err != nil || r != (Result{Shares: true}) {
		t.Errorf("View(-1) of x itself: got %+v, %v; want a view: shares storage, 0 allocations, 0 bytes", r, err)
	}
	if got := dev.MemoryAllocated(); got != allocated {
		t.Errorf("allocated memory %d after the failed classifications, want %d", got, allocated)
	}
	runtime.KeepAlive(x)
}
