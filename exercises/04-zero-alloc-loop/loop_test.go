package reuse

import (
	"bytes"
	"runtime"
	"testing"

	"github.com/gpumem/course/gpukit/device"
	"github.com/gpumem/course/gpukit/device/sim"
	"github.com/gpumem/course/gpukit/tensor"
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

// operands draws x0 [n, d], W [d, d] and b [d] from a fixed seed.
func operands(dev *device.Device, n, d int) (x0, w, b *tensor.Tensor) {
	gen := tensor.NewGenerator(42)
	x0 = tensor.Randn([]int{n, d}, tensor.On(dev), tensor.WithGenerator(gen))
	w = tensor.Randn([]int{d, d}, tensor.On(dev), tensor.WithGenerator(gen))
	w.MulInPlace(0.1)
	b = tensor.Randn([]int{d}, tensor.On(dev), tensor.WithGenerator(gen))
	return x0, w, b
}

// bits is the bytes of a tensor's elements.
func bits(t *tensor.Tensor) []byte {
	c := t.Contiguous()
	defer c.Release()
	start := c.StorageOffset() * c.Dtype().Size()
	return bytes.Clone(c.Storage().Bytes()[start : start+int(c.Nbytes())])
}

func TestMatchesReference(t *testing.T) {
	dev := newDevice(t)
	x0, w, b := operands(dev, 32, 64)
	want := Reference(x0, w, b, 10)
	l, err := NewLoop(x0, w, b)
	if err != nil {
		t.Fatal(err)
	}
	for range 10 {
		if err := l.Step(); err != nil {
			t.Fatal(err)
		}
	}
	got := l.State()
	if got == nil || !bytes.Equal(bits(got), bits(want)) {
		t.Error("after 10 steps the state differs from Reference's")
	}
}

func TestZeroSteadyStateAllocations(t *testing.T) {
	dev := newDevice(t)
	x0, w, b := operands(dev, 32, 64)
	l, err := NewLoop(x0, w, b)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Step(); err != nil {
		t.Fatal(err)
	}
	allocations, allocated := dev.Stats()["allocation.all.allocated"], dev.MemoryAllocated()
	for range 50 {
		if err := l.Step(); err != nil {
			t.Fatal(err)
		}
	}
	if n := dev.Stats()["allocation.all.allocated"] - allocations; n != 0 {
		t.Errorf("50 steps made %d allocations, want 0", n)
	}
	if got := dev.MemoryAllocated(); got != allocated {
		t.Errorf("allocated memory went from %d to %d bytes", allocated, got)
	}
	// x0 is not used after NewLoop: without this, the collector may free it
	// during the steps and change allocated memory.
	runtime.KeepAlive(x0)
	runtime.KeepAlive(w)
	runtime.KeepAlive(b)
}
