package sharing

import (
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/gpumem/course/gpukit/alloc"
	"github.com/gpumem/course/gpukit/device/simtest"
	"github.com/gpumem/course/gpukit/tensor"
)

type op = func(*tensor.Tensor) *tensor.Tensor

func TestViewsShareStorage(t *testing.T) {
	dev := simtest.Card(t, simtest.BlasWorkspace())
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
	dev := simtest.Card(t, simtest.BlasWorkspace())
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
	dev := simtest.Card(t, simtest.BlasWorkspace())
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
	dev := simtest.Card(t, simtest.BlasWorkspace())
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

// classifyAs checks one op's Result against want.
func classifyAs(t *testing.T, x *tensor.Tensor, name string, f op, want Result) {
	t.Helper()
	got, err := Classify(x, f)
	if err != nil {
		t.Errorf("%s: %v", name, err)
		return
	}
	if got != want {
		t.Errorf("%s: got %+v, want %+v", name, got, want)
	}
}

// The public twin of the grader's TestOtherShapesAndOps, on another
// shape, a float64 tensor, chains of ops and a product large enough for
// the large pool: a view allocates nothing, a copy one block of its own
// size, rounded, whatever its dtype and however it was reached.
func TestOtherShapes(t *testing.T) {
	gcOff(t)
	dev := simtest.Card(t, simtest.BlasWorkspace())
	rounded := alloc.Config{}.RoundSize
	x := tensor.Randn([]int{3, 4, 5}, tensor.On(dev), tensor.Float64) // 60 float64s
	view := Result{Shares: true}
	copyOf := func(bytes int64) Result { return Result{Allocations: 1, Bytes: rounded(bytes)} }
	for _, c := range []struct {
		name string
		f    op
		want Result
	}{
		{"Permute(1, 2, 0)", func(x *tensor.Tensor) *tensor.Tensor { return x.Permute(1, 2, 0) }, view},
		{"Flatten(1, 2)", func(x *tensor.Tensor) *tensor.Tensor { return x.Flatten(1, 2) }, view},
		{"Reshape(12, 5)", func(x *tensor.Tensor) *tensor.Tensor { return x.Reshape(12, 5) }, view},
		{"Transpose(0, 1).Transpose(0, 1)", func(x *tensor.Tensor) *tensor.Tensor {
			tr := x.Transpose(0, 1)
			defer tr.Release()
			return tr.Transpose(0, 1)
		}, view},
		{"Transpose(0, 2).Reshape(-1)", func(x *tensor.Tensor) *tensor.Tensor {
			tr := x.Transpose(0, 2)
			defer tr.Release()
			return tr.Reshape(-1)
		}, copyOf(60 * 8)},
		{"Sum()", func(x *tensor.Tensor) *tensor.Tensor { return x.Sum() }, copyOf(8)},
		{"ToDtype(Float32)", func(x *tensor.Tensor) *tensor.Tensor { return x.ToDtype(tensor.Float32) }, copyOf(60 * 4)},
	} {
		classifyAs(t, x, c.name, c.f, c.want)
	}
	big := tensor.Randn([]int{700, 700}, tensor.On(dev)) // 1.96 MB of float32: a large-pool block
	classifyAs(t, big, "Matmul of a 700×700 matrix", func(x *tensor.Tensor) *tensor.Tensor { return x.Matmul(x) }, copyOf(700*700*4))
	classifyAs(t, big, "Narrow of a 700×700 matrix", func(x *tensor.Tensor) *tensor.Tensor { return x.Narrow(1, 10, 3) }, view)
	runtime.KeepAlive(x)
	runtime.KeepAlive(big)
}

// The public twin of the grader's TestTemporariesAndOtherStorage, on
// other ops: an op that frees a temporary handed out two blocks and added
// one, a view of a fresh copy holds the copy's whole block, and a view of
// another tensor shares nothing with x though it allocated nothing.
func TestTemporariesAndOthers(t *testing.T) {
	gcOff(t)
	dev := simtest.Card(t, simtest.BlasWorkspace())
	x := tensor.Randn([]int{20, 50}, tensor.On(dev))
	other := tensor.Randn([]int{50, 20}, tensor.On(dev))
	whole := alloc.Config{}.RoundSize(20 * 50 * 4)
	for _, c := range []struct {
		name string
		f    op
		want Result
	}{
		{"Mul(3).Add(2): a temporary, freed", func(x *tensor.Tensor) *tensor.Tensor {
			tmp := x.Mul(3)
			defer tmp.Release()
			return tmp.Add(2)
		}, Result{Allocations: 2, Bytes: whole}},
		{"Clone().Select(0, 3): one row of a new copy", func(x *tensor.Tensor) *tensor.Tensor {
			c := x.Clone()
			defer c.Release()
			return c.Select(0, 3)
		}, Result{Allocations: 1, Bytes: whole}},
		{"a narrow of another tensor", func(*tensor.Tensor) *tensor.Tensor { return other.Narrow(0, 1, 2) }, Result{}},
		{"a mean, freed, then a view of x", func(x *tensor.Tensor) *tensor.Tensor {
			m := x.Mean()
			m.Release()
			return x.Unsqueeze(1)
		}, Result{Shares: true, Allocations: 1}},
	} {
		classifyAs(t, x, c.name, c.f, c.want)
	}
	runtime.KeepAlive(x)
	runtime.KeepAlive(other)
}
