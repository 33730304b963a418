package sharing

import (
	"testing"

	"github.com/gpumem/course/gpukit/alloc"
	"github.com/gpumem/course/gpukit/device"
	"github.com/gpumem/course/gpukit/device/simtest"
	"github.com/gpumem/course/gpukit/tensor"
)

// newDevice opens a private simulated classroom card, so that no test sees
// another's allocations.
func newDevice(t *testing.T) *device.Device {
	t.Helper()
	// the first product on the card takes cuBLAS's workspace (lesson 02),
	// which stays for good: take it now, so that the tests measure tensors
	return simtest.Card(t, simtest.BlasWorkspace())
}

type op = func(*tensor.Tensor) *tensor.Tensor

// block is the allocator's block for n bytes (all sizes here are split
// exactly, so a block is the request rounded up to 512 B).
func block(n int64) int64 { return alloc.Config{}.RoundSize(n) }

// chain applies first, then second, releasing the intermediate view, as a
// careful caller does.
func chain(first, second op) op {
	return func(x *tensor.Tensor) *tensor.Tensor {
		mid := first(x)
		defer mid.Release()
		return second(mid)
	}
}

func expectView(t *testing.T, x *tensor.Tensor, name string, f op) {
	t.Helper()
	r, err := Classify(x, f)
	if err != nil {
		t.Errorf("%s: Classify: %v", name, err)
		return
	}
	if !r.Shares || r.Allocations != 0 || r.Bytes != 0 {
		t.Errorf("%s: got %+v, want a view: shares storage, 0 allocations, 0 bytes", name, r)
	}
}

func expectCopy(t *testing.T, x *tensor.Tensor, name string, f op, bytes int64) {
	t.Helper()
	r, err := Classify(x, f)
	if err != nil {
		t.Errorf("%s: Classify: %v", name, err)
		return
	}
	if r.Shares || r.Allocations != 1 || r.Bytes != bytes {
		t.Errorf("%s: got %+v, want a copy: own storage, 1 allocation, %d bytes", name, r, bytes)
	}
}
