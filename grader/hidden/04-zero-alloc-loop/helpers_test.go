package reuse

import (
	"bytes"
	"testing"

	"github.com/gpumem/course/gpukit/device"
	"github.com/gpumem/course/gpukit/device/simtest"
	"github.com/gpumem/course/gpukit/tensor"
)

// newDevice opens a private simulated classroom card that holds its
// cuBLAS workspace.
func newDevice(t *testing.T) *device.Device {
	t.Helper()
	// the first product on the card takes cuBLAS's workspace (lesson 02),
	// which stays for good: take it now, so that the tests measure tensors
	return simtest.Card(t, simtest.BlasWorkspace())
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

// run makes a loop and runs it for steps, failing the test on any error.
func run(t *testing.T, x0, w, b *tensor.Tensor, steps int) *Loop {
	t.Helper()
	l, err := NewLoop(x0, w, b)
	if err != nil {
		t.Fatal(err)
	}
	if l == nil {
		t.Fatal("NewLoop returned no loop and no error")
	}
	for i := range steps {
		if err := l.Step(); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	return l
}

// sameAsReference checks the loop's state against Reference's, bit for bit.
func sameAsReference(t *testing.T, what string, l *Loop, x0, w, b *tensor.Tensor, steps int) {
	t.Helper()
	want := Reference(x0, w, b, steps)
	defer want.Release()
	got := l.State()
	if got == nil {
		t.Errorf("%s: State returned nil", what)
		return
	}
	defer got.Release()
	if !bytes.Equal(bits(got), bits(want)) {
		t.Errorf("%s: after %d steps the state differs from Reference's", what, steps)
	}
}
