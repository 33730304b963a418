package sharing

import (
	"runtime"
	"strings"
	"testing"

	"github.com/gpumem/course/gpukit/tensor"
)

func TestViewsShareStorage(t *testing.T) {
	noCollector(t)
	dev := newDevice(t)
	m := tensor.Randn([]int{30, 40}, tensor.On(dev))
	for name, f := range map[string]op{
		"T":         func(x *tensor.Tensor) *tensor.Tensor { return x.T() },
		"Select":    func(x *tensor.Tensor) *tensor.Tensor { return x.Select(0, 7) },
		"Narrow":    func(x *tensor.Tensor) *tensor.Tensor { return x.Narrow(1, 5, 10) },
		"View":      func(x *tensor.Tensor) *tensor.Tensor { return x.View(-1) },
		"Unsqueeze": func(x *tensor.Tensor) *tensor.Tensor { return x.Unsqueeze(0) },
	} {
		expectView(t, m, name, f)
	}
}

func TestCopiesAllocate(t *testing.T) {
	noCollector(t)
	dev := newDevice(t)
	m := tensor.Randn([]int{30, 40}, tensor.On(dev))
	want := block(30 * 40 * 4)
	for name, f := range map[string]op{
		"Clone":            func(x *tensor.Tensor) *tensor.Tensor { return x.Clone() },
		"T().Contiguous()": chain((*tensor.Tensor).T, (*tensor.Tensor).Contiguous),
		"Add(1)":           func(x *tensor.Tensor) *tensor.Tensor { return x.Add(1) },
	} {
		expectCopy(t, m, name, f, want)
	}
}

// Other shapes, dtypes and ops than the public tests: no answer can be
// looked up by the op's name, only measured.
func TestOtherShapesAndOps(t *testing.T) {
	noCollector(t)
	dev := newDevice(t)
	x := tensor.Randn([]int{4, 5, 6}, tensor.On(dev), tensor.Float64)
	views := map[string]op{
		"Permute(2,0,1)":       func(x *tensor.Tensor) *tensor.Tensor { return x.Permute(2, 0, 1) },
		"Flatten(0,1)":         func(x *tensor.Tensor) *tensor.Tensor { return x.Flatten(0, 1) },
		"Slice step 2":         func(x *tensor.Tensor) *tensor.Tensor { return x.Slice(2, 0, 6, 2) },
		"Reshape(20,6)":        func(x *tensor.Tensor) *tensor.Tensor { return x.Reshape(20, 6) },
		"Contiguous":           func(x *tensor.Tensor) *tensor.Tensor { return x.Contiguous() },
		"Detach":               func(x *tensor.Tensor) *tensor.Tensor { return x.Detach() },
		"Unsqueeze.Expand":     chain(func(x *tensor.Tensor) *tensor.Tensor { return x.Unsqueeze(0) }, func(x *tensor.Tensor) *tensor.Tensor { return x.Expand(3, 4, 5, 6) }),
		"Narrow.Squeeze":       chain(func(x *tensor.Tensor) *tensor.Tensor { return x.Narrow(0, 2, 1) }, func(x *tensor.Tensor) *tensor.Tensor { return x.Squeeze(0) }),
		"Transpose.Transpose":  chain(func(x *tensor.Tensor) *tensor.Tensor { return x.Transpose(0, 2) }, func(x *tensor.Tensor) *tensor.Tensor { return x.Transpose(0, 2) }),
		"Select.Select.Select": chain(func(x *tensor.Tensor) *tensor.Tensor { return x.Select(0, 3) }, chain(func(x *tensor.Tensor) *tensor.Tensor { return x.Select(0, 4) }, func(x *tensor.Tensor) *tensor.Tensor { return x.Select(0, 5) })),
	}
	for name, f := range views {
		expectView(t, x, name, f)
	}
	copies := map[string]struct {
		f     op
		bytes int64
	}{
		"Permute.Reshape":        {chain(func(x *tensor.Tensor) *tensor.Tensor { return x.Permute(1, 0, 2) }, func(x *tensor.Tensor) *tensor.Tensor { return x.Reshape(-1) }), block(120 * 8)},
		"Transpose.Flatten":      {chain(func(x *tensor.Tensor) *tensor.Tensor { return x.Transpose(1, 2) }, func(x *tensor.Tensor) *tensor.Tensor { return x.Flatten(0, 2) }), block(120 * 8)},
		"Expand.Contiguous":      {chain(chain(func(x *tensor.Tensor) *tensor.Tensor { return x.Unsqueeze(0) }, func(x *tensor.Tensor) *tensor.Tensor { return x.Expand(300, 4, 5, 6) }), (*tensor.Tensor).Contiguous), block(300 * 120 * 8)},
		"Sum":                    {func(x *tensor.Tensor) *tensor.Tensor { return x.Sum() }, block(8)},
		"ToDtype(Float32)":       {func(x *tensor.Tensor) *tensor.Tensor { return x.ToDtype(tensor.Float32) }, block(120 * 4)},
		"Slice.Contiguous":       {chain(func(x *tensor.Tensor) *tensor.Tensor { return x.Slice(2, 1, 6, 2) }, (*tensor.Tensor).Contiguous), block(4 * 5 * 3 * 8)},
		"Reshape(6,20) of T(..)": {chain(func(x *tensor.Tensor) *tensor.Tensor { return x.Transpose(0, 1) }, func(x *tensor.Tensor) *tensor.Tensor { return x.Reshape(6, 20) }), block(120 * 8)},
	}
	for name, c := range copies {
		expectCopy(t, x, name, c.f, c.bytes)
	}
	// A large copy: a 600×600 float32 product is a large-pool block.
	big := tensor.Randn([]int{600, 600}, tensor.On(dev))
	expectCopy(t, big, "Matmul", func(x *tensor.Tensor) *tensor.Tensor { return x.Matmul(x) }, block(600*600*4))
	expectView(t, big, "Narrow of a big matrix", func(x *tensor.Tensor) *tensor.Tensor { return x.Narrow(0, 100, 1) })
	// Without these, the collector may free x while big is measured.
	runtime.KeepAlive(x)
	runtime.KeepAlive(big)
}

// Classify releases what op returned: memory, live blocks and the input's
// reference count are as before, for views and copies alike.
func TestResultReleased(t *testing.T) {
	noCollector(t)
	dev := newDevice(t)
	x := tensor.Randn([]int{64, 64}, tensor.On(dev))
	for name, f := range map[string]op{
		"Clone": func(x *tensor.Tensor) *tensor.Tensor { return x.Clone() },
		"T":     func(x *tensor.Tensor) *tensor.Tensor { return x.T() },
		"Exp":   func(x *tensor.Tensor) *tensor.Tensor { return x.Exp() },
		"View":  func(x *tensor.Tensor) *tensor.Tensor { return x.View(16, 256) },
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

// Bad input and failing ops give errors, never a panic, and change nothing.
func TestFailingOps(t *testing.T) {
	noCollector(t)
	dev := newDevice(t)
	x := tensor.Randn([]int{8, 9}, tensor.On(dev))
	allocated := dev.MemoryAllocated()

	_, err := Classify(x, func(x *tensor.Tensor) *tensor.Tensor { tr := x.T(); defer tr.Release(); return tr.View(-1) })
	if err == nil || !strings.Contains(err.Error(), "tensor:") {
		t.Errorf("View of a transpose: got error %v, want the tensor package's error wrapped", err)
	}
	if _, err := Classify(x, func(*tensor.Tensor) *tensor.Tensor { return nil }); err == nil {
		t.Error("an op returning nil: got no error")
	}
	if _, err := Classify(x, nil); err == nil {
		t.Error("a nil op: got no error")
	}
	if _, err := Classify(nil, func(x *tensor.Tensor) *tensor.Tensor { return x.T() }); err == nil {
		t.Error("a nil tensor: got no error")
	}
	if got := dev.MemoryAllocated(); got != allocated {
		t.Errorf("allocated memory %d after failed classifications, want %d", got, allocated)
	}
	if got := dev.Stats()["allocation.all.current"]; got != 2 {
		t.Errorf("%d live blocks, want 2 (the input and cuBLAS's workspace)", got)
	}
	runtime.KeepAlive(x)
}
