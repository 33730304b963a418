package sharing

import (
	"runtime"
	"testing"

	"github.com/gpumem/course/gpukit/tensor"
	"github.com/gpumem/course/gpukit/tensor/tensortest"
)

func TestViewsShareStorage(t *testing.T) {
	tensortest.NoCollector(t)
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
	tensortest.NoCollector(t)
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
	tensortest.NoCollector(t)
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

// What an op allocated, what it freed again and whose storage it returns
// are three things, each measured while the op runs: an op that frees a
// temporary handed out two blocks but added one, a view of a fresh copy
// holds the copy's whole block, and a view of another tensor shares nothing
// with x although it allocated nothing.
func TestTemporariesAndOtherStorage(t *testing.T) {
	tensortest.NoCollector(t)
	dev := newDevice(t)
	x := tensor.Randn([]int{30, 40}, tensor.On(dev))
	other := tensor.Randn([]int{40, 30}, tensor.On(dev))
	whole := block(30 * 40 * 4)
	for _, c := range []struct {
		name string
		f    op
		want Result
	}{
		{"Add(1).Mul(2): a temporary, freed", chain(func(x *tensor.Tensor) *tensor.Tensor { return x.Add(1) }, func(x *tensor.Tensor) *tensor.Tensor { return x.Mul(2) }),
			Result{Shares: false, Allocations: 2, Bytes: whole}},
		{"Clone().Narrow(0, 0, 1): one row of a new copy", chain((*tensor.Tensor).Clone, func(x *tensor.Tensor) *tensor.Tensor { return x.Narrow(0, 0, 1) }),
			Result{Shares: false, Allocations: 1, Bytes: whole}},
		{"a view of another tensor", func(*tensor.Tensor) *tensor.Tensor { return other.T() },
			Result{Shares: false, Allocations: 0, Bytes: 0}},
		{"a sum, freed, then a view of x", func(x *tensor.Tensor) *tensor.Tensor { s := x.Sum(); s.Release(); return x.T() },
			Result{Shares: true, Allocations: 1, Bytes: 0}},
	} {
		got, err := Classify(x, c.f)
		if err != nil {
			t.Errorf("%s: Classify: %v", c.name, err)
			continue
		}
		if got != c.want {
			t.Errorf("%s: got %+v, want %+v", c.name, got, c.want)
		}
	}
	runtime.KeepAlive(x)
	runtime.KeepAlive(other)
}

// Classify releases what op returned: memory, live blocks and the input's
// reference count are as before, for views and copies alike.
func TestResultReleased(t *testing.T) {
	tensortest.NoCollector(t)
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

// Bad input and failing ops give errors (any message), never a panic, and
// change nothing; the same op on a layout it can handle is measured.
func TestFailingOps(t *testing.T) {
	tensortest.NoCollector(t)
	dev := newDevice(t)
	x := tensor.Randn([]int{8, 9}, tensor.On(dev))
	allocated := dev.MemoryAllocated()

	flat := func(x *tensor.Tensor) *tensor.Tensor { return x.View(-1) }
	for _, c := range []struct {
		name    string
		x       *tensor.Tensor
		f       op
		wantErr bool
	}{
		{"View(-1) of a transpose (the op panics)", x, chain((*tensor.Tensor).T, flat), true},
		{"View(-1) of x itself (a view)", x, flat, false},
		{"an op returning nil", x, func(*tensor.Tensor) *tensor.Tensor { return nil }, true},
		{"a nil op", x, nil, true},
		{"a nil tensor", nil, func(x *tensor.Tensor) *tensor.Tensor { return x.T() }, true},
	} {
		r, err := Classify(c.x, c.f)
		switch {
		case c.wantErr && err == nil:
			t.Errorf("%s: got %+v and no error, want an error", c.name, r)
		case !c.wantErr && err != nil:
			t.Errorf("%s: %v, want no error", c.name, err)
		case !c.wantErr && r != (Result{Shares: true}):
			t.Errorf("%s: got %+v, want a view: shares storage, 0 allocations, 0 bytes", c.name, r)
		}
	}
	if got := dev.MemoryAllocated(); got != allocated {
		t.Errorf("allocated memory %d after the classifications, want %d", got, allocated)
	}
	if got := dev.Stats()["allocation.all.current"]; got != 2 {
		t.Errorf("%d live blocks, want 2 (the input and cuBLAS's workspace)", got)
	}
	runtime.KeepAlive(x)
}
