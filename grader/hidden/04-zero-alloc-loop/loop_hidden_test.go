package reuse

import (
	"bytes"
	"runtime"
	"testing"

	"github.com/gpumem/course/gpukit/alloc"
	"github.com/gpumem/course/gpukit/tensor"
	"github.com/gpumem/course/gpukit/tensor/tensortest"
)

func TestMatchesReference(t *testing.T) {
	tensortest.NoCollector(t)
	dev := newDevice(t)
	x0, w, b := operands(dev, 32, 64)
	l := run(t, x0, w, b, 10)
	sameAsReference(t, "32×64", l, x0, w, b, 10)
}

// After the first step, steps make no allocation at all, hold no temporary
// (the peak is the current value) and allocated memory stays put.
func TestZeroSteadyStateAllocations(t *testing.T) {
	tensortest.NoCollector(t)
	dev := newDevice(t)
	x0, w, b := operands(dev, 48, 96)
	l := run(t, x0, w, b, 1)
	allocations, allocated := dev.Stats()["allocation.all.allocated"], dev.MemoryAllocated()
	dev.ResetPeakStats()
	for range 60 {
		if err := l.Step(); err != nil {
			t.Fatal(err)
		}
	}
	if n := dev.Stats()["allocation.all.allocated"] - allocations; n != 0 {
		t.Errorf("60 steps made %d allocations, want 0", n)
	}
	if got := dev.MemoryAllocated(); got != allocated {
		t.Errorf("allocated memory went from %d to %d bytes", allocated, got)
	}
	if peak := dev.MaxMemoryAllocated(); peak != allocated {
		t.Errorf("peak %d bytes during the steps, %d allocated: a step holds a temporary", peak, allocated)
	}
	runtime.KeepAlive(x0)
	sameAsReference(t, "48×96 after 61 steps", l, x0, w, b, 61)
}

// NewLoop allocates at most two buffers of the state's size; Release gives
// them all back; the operands are never modified; Step after Release fails.
func TestBuffersAndRelease(t *testing.T) {
	tensortest.NoCollector(t)
	dev := newDevice(t)
	x0, w, b := operands(dev, 40, 50)
	snapshot := [][]byte{bits(x0), bits(w), bits(b)}
	versions := []int64{x0.Version(), w.Version(), b.Version()}
	refs := []int{x0.Storage().Refs(), w.Storage().Refs(), b.Storage().Refs()}
	before, blocksBefore := dev.MemoryAllocated(), dev.Stats()["allocation.all.current"]

	l := run(t, x0, w, b, 0)
	bufferBytes := dev.MemoryAllocated() - before
	if max := 2 * (alloc.Config{}.RoundSize(40 * 50 * 4)); bufferBytes > max {
		t.Errorf("NewLoop allocated %d bytes, want at most two buffers of the state's size (%d)", bufferBytes, max)
	}
	for range 5 {
		if err := l.Step(); err != nil {
			t.Fatal(err)
		}
	}
	view := l.State()
	if view == nil {
		t.Fatal("State returned nil")
	}
	if got := dev.MemoryAllocated() - before; got != bufferBytes {
		t.Errorf("State allocated %d bytes: return a view", got-bufferBytes)
	}
	view.Release()
	l.Release()
	if got := dev.MemoryAllocated(); got != before {
		t.Errorf("after Release %d bytes allocated, %d before NewLoop", got, before)
	}
	if got := dev.Stats()["allocation.all.current"]; got != blocksBefore {
		t.Errorf("after Release %d live blocks, %d before NewLoop", got, blocksBefore)
	}
	for i, op := range []*tensor.Tensor{x0, w, b} {
		if !bytes.Equal(bits(op), snapshot[i]) || op.Version() != versions[i] {
			t.Errorf("operand %d was modified", i)
		}
		if got := op.Storage().Refs(); got != refs[i] {
			t.Errorf("after Release operand %d's storage has %d references, %d before NewLoop: release every reference the loop took", i, got, refs[i])
		}
	}
	if err := l.Step(); err == nil {
		t.Error("Step after Release: got no error")
	}
	if l.State() != nil {
		t.Error("State after Release: got a tensor, want nil")
	}
}

// Other shapes and dtypes, zero steps, and bad operands: errors, never a
// panic, and nothing left allocated.
func TestShapesAndErrors(t *testing.T) {
	tensortest.NoCollector(t)
	dev := newDevice(t)
	for _, s := range [][2]int{{1, 1}, {7, 3}, {100, 17}, {5, 130}} {
		x0, w, b := operands(dev, s[0], s[1])
		for _, steps := range []int{0, 4} {
			l := run(t, x0, w, b, steps)
			sameAsReference(t, "shape", l, x0, w, b, steps)
			l.Release()
		}
	}
	gen := tensor.NewGenerator(9)
	x64 := tensor.Randn([]int{6, 4}, tensor.On(dev), tensor.Float64, tensor.WithGenerator(gen))
	w64 := tensor.Randn([]int{4, 4}, tensor.On(dev), tensor.Float64, tensor.WithGenerator(gen))
	b64 := tensor.Randn([]int{4}, tensor.On(dev), tensor.Float64, tensor.WithGenerator(gen))
	l := run(t, x64, w64, b64, 3)
	sameAsReference(t, "float64", l, x64, w64, b64, 3)
	l.Release()

	x0, w, b := operands(dev, 8, 4)
	other := newDevice(t)
	_, wOther, _ := operands(other, 8, 4)
	released := tensor.Ones([]int{4}, tensor.On(dev))
	released.Release()
	before := dev.MemoryAllocated()
	for name, ops := range map[string][3]*tensor.Tensor{
		"nil x0":              {nil, w, b},
		"nil b":               {x0, w, nil},
		"released b":          {x0, w, released},
		"x0 not 2-d":          {b, w, b},
		"w not square":        {x0, x0, b},
		"b of the wrong size": {x0, w, tensor.Ones([]int{5}, tensor.On(dev))},
		"w on another device": {x0, wOther, b},
		"mixed dtypes":        {x0, w64, b},
		"integer dtype":       {tensor.Ones([]int{8, 4}, tensor.On(dev), tensor.Int64), tensor.Ones([]int{4, 4}, tensor.On(dev), tensor.Int64), tensor.Ones([]int{4}, tensor.On(dev), tensor.Int64)},
	} {
		var err error
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("%s: NewLoop panicked (%v), want an error", name, r)
					err = nil
				}
			}()
			_, err = NewLoop(ops[0], ops[1], ops[2])
		}()
		if err == nil {
			t.Errorf("%s: got no error", name)
		}
		for _, op := range ops {
			if op != nil && op != x0 && op != w && op != b && op != wOther && op != w64 && !op.Released() {
				op.Release()
			}
		}
	}
	if got := dev.MemoryAllocated(); got != before {
		t.Errorf("refused loops left %d bytes allocated", got-before)
	}
	for _, op := range []*tensor.Tensor{x0, w, b, x64, w64, b64, wOther} {
		runtime.KeepAlive(op)
	}
}
