package reuse

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"testing"

	"github.com/gpumem/course/gpukit/alloc"
	"github.com/gpumem/course/gpukit/device"
	"github.com/gpumem/course/gpukit/device/simtest"
	"github.com/gpumem/course/gpukit/tensor"
	"github.com/gpumem/course/gpukit/tensor/tensortest"
)

// operands draws x0 [n, d], W [d, d] and b [d] from a fixed seed.
func operands(dev *device.Device, n, d int) (x0, w, b *tensor.Tensor) {
	gen := tensor.NewGenerator(42)
	x0 = tensor.Randn([]int{n, d}, tensor.On(dev), tensor.WithGenerator(gen))
	w = tensor.Randn([]int{d, d}, tensor.On(dev), tensor.WithGenerator(gen))
	w.MulInPlace(0.1)
	b = tensor.Randn([]int{d}, tensor.On(dev), tensor.WithGenerator(gen))
	return x0, w, b
}

// operandsSeeded draws x0 [n, d], W [d, d] and b [d] of a dtype from seed.
func operandsSeeded(dev *device.Device, n, d int, dtype tensor.Dtype, seed uint64) (x0, w, b *tensor.Tensor) {
	gen := tensor.NewGenerator(seed)
	x0 = tensor.Randn([]int{n, d}, tensor.On(dev), dtype, tensor.WithGenerator(gen))
	w = tensor.Randn([]int{d, d}, tensor.On(dev), dtype, tensor.WithGenerator(gen))
	w.MulInPlace(0.1)
	b = tensor.Randn([]int{d}, tensor.On(dev), dtype, tensor.WithGenerator(gen))
	return x0, w, b
}

// newLoopSteps makes a loop and runs it for steps, failing the test on any
// error.
func newLoopSteps(t *testing.T, what string, x0, w, b *tensor.Tensor, steps int) *Loop {
	t.Helper()
	l, err := NewLoop(x0, w, b)
	if err != nil {
		t.Fatalf("%s: NewLoop: %v", what, err)
	}
	if l == nil {
		t.Fatalf("%s: NewLoop returned no loop and no error", what)
	}
	for i := range steps {
		if err := l.Step(); err != nil {
			t.Fatalf("%s: step %d: %v", what, i+1, err)
		}
	}
	return l
}

// matchesReference checks the loop's state against Reference's after
// steps, bit for bit.
func matchesReference(t *testing.T, what string, l *Loop, x0, w, b *tensor.Tensor, steps int) {
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
		t.Errorf("%s: after %d steps the state differs from Reference's (same operations, same order?)", what, steps)
	}
}

// bits is the bytes of a tensor's elements.
func bits(t *tensor.Tensor) []byte {
	c := t.Contiguous()
	defer c.Release()
	start := c.StorageOffset() * c.Dtype().Size()
	return bytes.Clone(c.Storage().Bytes()[start : start+int(c.Nbytes())])
}

// The grader's TestMatchesReference runs another shape for another number
// of steps.
func TestMatchesReference(t *testing.T) {
	dev := simtest.Card(t, simtest.BlasWorkspace())
	x0, w, b := operandsSeeded(dev, 24, 80, tensor.Float32, 7)
	l := newLoopSteps(t, "24×80", x0, w, b, 12)
	matchesReference(t, "24×80", l, x0, w, b, 12)
}

// The grader's TestZeroSteadyStateAllocations runs another shape for
// another number of steps: after the first step, steps make no allocation,
// hold no temporary (the peak stays at what is allocated) and still give
// Reference's state, bit for bit.
func TestZeroSteadyStateAllocations(t *testing.T) {
	tensortest.NoCollector(t)
	dev := simtest.Card(t, simtest.BlasWorkspace())
	x0, w, b := operands(dev, 32, 64)
	l := newLoopSteps(t, "32×64", x0, w, b, 1)
	allocations, allocated := dev.Stats()["allocation.all.allocated"], dev.MemoryAllocated()
	dev.ResetPeakStats()
	for i := range 50 {
		if err := l.Step(); err != nil {
			t.Fatalf("step %d: %v", i+2, err)
		}
	}
	if n := dev.Stats()["allocation.all.allocated"] - allocations; n != 0 {
		t.Errorf("50 steps made %d allocations, want 0", n)
	}
	if got := dev.MemoryAllocated(); got != allocated {
		t.Errorf("allocated memory went from %d to %d bytes", allocated, got)
	}
	if peak := dev.MaxMemoryAllocated(); peak != allocated {
		t.Errorf("the peak during the steps was %d bytes, %d allocated: a step holds a temporary (use the out= variants and in-place ops)", peak, allocated)
	}
	// x0 is not used after NewLoop: keep it alive until here, or the
	// collector could free it during the steps and change allocated memory.
	runtime.KeepAlive(x0)
	matchesReference(t, "32×64", l, x0, w, b, 51)
}

// The public twin of the grader's TestBuffersAndRelease, on another shape:
// NewLoop allocates at most two buffers of the state's size, State a view
// (nothing), Release gives every buffer and reference back, the operands
// are never modified, and after Release Step fails and State is nil.
func TestBuffersReleasedOperandsKept(t *testing.T) {
	tensortest.NoCollector(t)
	dev := simtest.Card(t, simtest.BlasWorkspace())
	x0, w, b := operandsSeeded(dev, 24, 36, tensor.Float32, 3)
	operands := []*tensor.Tensor{x0, w, b}
	names := []string{"x0", "W", "b"}
	var snapshot [][]byte
	var versions []int64
	var refs []int
	for _, op := range operands {
		snapshot = append(snapshot, bits(op))
		versions = append(versions, op.Version())
		refs = append(refs, op.Storage().Refs())
	}
	before, blocksBefore := dev.MemoryAllocated(), dev.Stats()["allocation.all.current"]

	l := newLoopSteps(t, "24×36", x0, w, b, 0)
	bufferBytes := dev.MemoryAllocated() - before
	if max := 2 * (alloc.Config{}.RoundSize(24 * 36 * 4)); bufferBytes > max {
		t.Errorf("NewLoop allocated %d bytes, want at most two buffers of the state's size (%d bytes in all)", bufferBytes, max)
	}
	for i := range 3 {
		if err := l.Step(); err != nil {
			t.Fatalf("step %d: %v", i+1, err)
		}
	}
	view := l.State()
	if view == nil {
		t.Fatal("State returned nil before Release")
	}
	if got := dev.MemoryAllocated() - before; got != bufferBytes {
		t.Errorf("State allocated %d bytes: return a view of the state, not a copy", got-bufferBytes)
	}
	view.Release()
	l.Release()
	if got := dev.MemoryAllocated(); got != before {
		t.Errorf("after Release %d bytes allocated, %d before NewLoop", got, before)
	}
	if got := dev.Stats()["allocation.all.current"]; got != blocksBefore {
		t.Errorf("after Release %d live blocks, %d before NewLoop", got, blocksBefore)
	}
	for i, op := range operands {
		if !bytes.Equal(bits(op), snapshot[i]) || op.Version() != versions[i] {
			t.Errorf("%s was modified: the loop must work in buffers of its own", names[i])
		}
		if got := op.Storage().Refs(); got != refs[i] {
			t.Errorf("after Release %s's storage has %d references, %d before NewLoop: release every reference the loop took", names[i], got, refs[i])
		}
	}
	if err := l.Step(); err == nil {
		t.Error("Step after Release: got no error")
	}
	if l.State() != nil {
		t.Error("State after Release: got a tensor, want nil")
	}
}

// The public twin of the grader's TestShapesAndErrors, on other shapes and
// operands: zero steps and a few, float64, and bad operands, which are
// errors (never a panic) and leave nothing allocated.
func TestOtherShapesAndBadOperands(t *testing.T) {
	tensortest.NoCollector(t)
	dev := simtest.Card(t, simtest.BlasWorkspace())
	for _, s := range [][2]int{{2, 5}, {9, 1}, {33, 8}} {
		x0, w, b := operandsSeeded(dev, s[0], s[1], tensor.Float32, 5)
		for _, steps := range []int{0, 2} {
			what := fmt.Sprintf("%d×%d", s[0], s[1])
			l := newLoopSteps(t, what, x0, w, b, steps)
			matchesReference(t, what, l, x0, w, b, steps)
			l.Release()
		}
	}
	x64, w64, b64 := operandsSeeded(dev, 3, 7, tensor.Float64, 13)
	l := newLoopSteps(t, "float64 3×7", x64, w64, b64, 5)
	matchesReference(t, "float64 3×7", l, x64, w64, b64, 5)
	l.Release()

	x0, w, b := operandsSeeded(dev, 6, 5, tensor.Float32, 21)
	other := simtest.Card(t, simtest.BlasWorkspace())
	_, _, bOther := operandsSeeded(other, 6, 5, tensor.Float32, 21)
	released := tensor.Ones([]int{6, 5}, tensor.On(dev))
	released.Release()
	before := dev.MemoryAllocated()
	for _, c := range []struct {
		name      string
		x0, w, b  *tensor.Tensor
		temporary bool // its operands other than x0, w and b are the test's to release
	}{
		{"nil W", x0, nil, b, false},
		{"released x0", released, w, b, false},
		{"a 1-d x0", b, w, b, false},
		{"a W of 6×6 for a state of width 5", x0, tensor.Ones([]int{6, 6}, tensor.On(dev)), b, true},
		{"a 2-d b", x0, w, tensor.Ones([]int{1, 5}, tensor.On(dev)), true},
		{"b on another device", x0, w, bOther, false},
		{"a float64 b with float32 x0 and W", x0, w, b64, false},
		{"int32 operands", tensor.Ones([]int{6, 5}, tensor.On(dev), tensor.Int32), tensor.Ones([]int{5, 5}, tensor.On(dev), tensor.Int32), tensor.Ones([]int{5}, tensor.On(dev), tensor.Int32), true},
	} {
		var err error
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("%s: NewLoop panicked (%v), want an error", c.name, r)
					err = errors.New("panicked")
				}
			}()
			_, err = NewLoop(c.x0, c.w, c.b)
		}()
		if err == nil {
			t.Errorf("%s: NewLoop returned no error", c.name)
		}
		if c.temporary {
			for _, op := range []*tensor.Tensor{c.x0, c.w, c.b} {
				if op != x0 && op != w && op != b && !op.Released() {
					op.Release()
				}
			}
		}
	}
	if got := dev.MemoryAllocated(); got != before {
		t.Errorf("the refused loops left %d bytes allocated: free what NewLoop took before returning an error", got-before)
	}
	for _, op := range []*tensor.Tensor{x0, w, b, x64, w64, b64, bOther} {
		runtime.KeepAlive(op)
	}
}
