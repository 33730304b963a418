package sharing

import (
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
