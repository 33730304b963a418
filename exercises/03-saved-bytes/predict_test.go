package saved

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/gpumem/course/gpukit/device/simtest"
	"github.com/gpumem/course/gpukit/tensor"
)

// measure runs Model.Loss on a private simulated classroom card and returns
// what it left allocated beyond the model.
func measure(t *testing.T, s Shape, mode Mode) int64 {
	t.Helper()
	dev := simtest.Card(t)
	m := NewModel(dev, s, mode, 1)
	// the first product on the card takes cuBLAS's workspace (lesson 02),
	// which stays: take it first, so that what is left is the graph's
	if err := dev.BlasWorkspace(dev.DefaultStream()); err != nil {
		t.Fatal(err)
	}
	before := dev.MemoryAllocated()
	loss := m.Loss(mode)
	defer loss.Release()
	left := dev.MemoryAllocated() - before
	runtime.KeepAlive(m) // the collector must not free the model before the measurement
	return left
}

// shapeText writes a shape as the test's messages show it.
func shapeText(s Shape) string {
	return fmt.Sprintf("Batch %d, In %d, Hidden %d, Out %d", s.Batch, s.In, s.Hidden, s.Out)
}

// modeText names a mode, an unknown one by its number.
func modeText(mode Mode) string {
	if name := mode.String(); name != "Mode(?)" {
		return name
	}
	return fmt.Sprintf("Mode(%d)", int(mode))
}

// callPredict calls Predict and turns a panic into a test error (and ok false).
func callPredict(t *testing.T, s Shape, mode Mode) (n int64, err error, ok bool) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Errorf("%s (%s): Predict panicked (%v), want no panic, ever", modeText(mode), shapeText(s), r)
			ok = false
		}
	}()
	n, err = Predict(s, mode)
	return n, err, true
}

func check(t *testing.T, s Shape, mode Mode) {
	t.Helper()
	got, err, ok := callPredict(t, s, mode)
	if !ok {
		return
	}
	if err != nil {
		t.Errorf("%v (%s): %v", mode, shapeText(s), err)
		return
	}
	if want := measure(t, s, mode); got != want {
		t.Errorf("%v (%s): predicted %d bytes, the allocator holds %d", mode, shapeText(s), got, want)
	}
}

func TestTrain(t *testing.T) {
	check(t, Shape{Batch: 64, In: 32, Hidden: 128, Out: 10}, Train)
	check(t, Shape{Batch: 3, In: 5, Hidden: 7, Out: 2}, Train)
}

func TestNoGradAndEval(t *testing.T) {
	s := Shape{Batch: 64, In: 32, Hidden: 128, Out: 10}
	check(t, s, NoGrad)
	check(t, s, EvalDropout)
}

// The public twin of the grader's TestFrozenAndDetached, on other shapes: a
// frozen first layer records nothing before W2; a detached hidden layer
// frees the graph before it.
func TestFrozenAndDetachedModes(t *testing.T) {
	for _, s := range []Shape{{48, 16, 96, 6}, {150, 2, 220, 30}, {2, 1, 3, 1}} {
		check(t, s, FrozenFirst)
		check(t, s, DetachHidden)
	}
}

// The public twin of the grader's TestRandomShapes, with another seed and
// fewer shapes: random shapes in every mode, against the allocator.
func TestSeededShapes(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 5))
	for range 5 {
		s := Shape{Batch: 1 + r.IntN(256), In: 1 + r.IntN(64), Hidden: 1 + r.IntN(1024), Out: 1 + r.IntN(64)}
		for _, mode := range []Mode{Train, NoGrad, EvalDropout, FrozenFirst, DetachHidden} {
			check(t, s, mode)
		}
	}
}

// The public twin of the grader's TestRoundingAndErrors, on other shapes:
// a dropout mask of 511, 512 and 513 bytes, activations of exactly 1 MiB;
// sizes below 1 (In too), byte sizes that overflow int64 and unknown modes
// are errors.
func TestBoundariesAndErrors(t *testing.T) {
	for _, s := range []Shape{
		{Batch: 1, In: 3, Hidden: 511, Out: 2},    // mask 511 B
		{Batch: 16, In: 3, Hidden: 32, Out: 32},   // mask 512 B, y 2048 B
		{Batch: 3, In: 3, Hidden: 171, Out: 43},   // mask 513 B
		{Batch: 256, In: 2, Hidden: 1024, Out: 5}, // activations of exactly 1 MiB
	} {
		for _, mode := range []Mode{Train, EvalDropout, FrozenFirst} {
			check(t, s, mode)
		}
	}
	for _, c := range []struct {
		s    Shape
		mode Mode
		why  string
	}{
		{Shape{-3, 4, 4, 4}, NoGrad, "Batch below 1"},
		{Shape{5, -1, 5, 5}, DetachHidden, "In below 1 (no saved tensor has its size, but it is a size)"},
		{Shape{5, 5, 0, 5}, Train, "Hidden below 1"},
		{Shape{5, 5, 5, -7}, EvalDropout, "Out below 1"},
		{Shape{math.MaxInt64 / 3, 2, 8, 1}, Train, "the [Batch, Hidden] activations' bytes overflow int64"},
		{Shape{1 << 32, 1, 1, 1 << 30}, DetachHidden, "y's Batch·Out·4 bytes overflow int64"},
		{Shape{4, 4, 4, 4}, Mode(5), "an unknown mode"},
		{Shape{4, 4, 4, 4}, Mode(-3), "a negative mode"},
	} {
		if got, err, ok := callPredict(t, c.s, c.mode); ok && err == nil {
			t.Errorf("%s: Predict(%s; %s) = %d and no error, want an error", c.why, shapeText(c.s), modeText(c.mode), got)
		}
	}
}

// storageCount counts, as a tensor.Observer, the storages allocated and
// the kernels launched while it is installed.
type storageCount struct{ allocated, launched int }

func (c *storageCount) Allocated(*tensor.Storage) { c.allocated++ }
func (c *storageCount) Freed(*tensor.Storage)     {}
func (c *storageCount) Launched(tensor.Launch)    { c.launched++ }

// The public twin of the grader's TestPredictsWithoutRunning, on other
// shapes and modes: Predict allocates no tensor and launches no kernel, on
// any device (running Model.Loss on a meta device is not a prediction).
func TestPredictsWithoutTensors(t *testing.T) {
	for _, c := range []struct {
		s    Shape
		mode Mode
	}{
		{Shape{40, 12, 100, 8}, Train},
		{Shape{9, 4, 33, 3}, NoGrad},
		{Shape{120, 6, 64, 16}, FrozenFirst},
	} {
		seen := &storageCount{}
		previous := tensor.SetObserver(seen)
		got, err, ok := callPredict(t, c.s, c.mode)
		tensor.SetObserver(previous)
		if !ok {
			continue
		}
		if err != nil {
			t.Errorf("%v (%s): %v", c.mode, shapeText(c.s), err)
			continue
		}
		if seen.allocated > 0 || seen.launched > 0 {
			t.Errorf("%v (%s): Predict allocated %d tensors and launched %d kernels to answer %d: predict from autograd's rules, without running anything", c.mode, shapeText(c.s), seen.allocated, seen.launched, got)
		}
	}
}
