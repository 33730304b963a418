package saved

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gpumem/course/gpukit/tensor"
	"github.com/gpumem/course/gpukit/tensor/tensortest"
)

func TestTrain(t *testing.T) {
	tensortest.NoCollector(t)
	check(t, Shape{Batch: 64, In: 32, Hidden: 128, Out: 10}, Train)
	check(t, Shape{Batch: 3, In: 5, Hidden: 7, Out: 2}, Train)
}

func TestNoGradAndEval(t *testing.T) {
	tensortest.NoCollector(t)
	s := Shape{Batch: 64, In: 32, Hidden: 128, Out: 10}
	check(t, s, NoGrad)
	check(t, s, EvalDropout)
}

// A frozen first layer records nothing before W2; a detached hidden layer
// frees the graph before it.
func TestFrozenAndDetached(t *testing.T) {
	tensortest.NoCollector(t)
	for _, s := range []Shape{{64, 32, 128, 10}, {200, 3, 300, 40}, {1, 1, 1, 1}} {
		check(t, s, FrozenFirst)
		check(t, s, DetachHidden)
	}
}

// Random shapes (a fixed seed), every mode, against the allocator.
func TestRandomShapes(t *testing.T) {
	tensortest.NoCollector(t)
	r := rand.New(rand.NewPCG(3, 2026))
	for range 15 {
		s := Shape{Batch: 1 + r.IntN(256), In: 1 + r.IntN(64), Hidden: 1 + r.IntN(1024), Out: 1 + r.IntN(64)}
		for _, mode := range []Mode{Train, NoGrad, EvalDropout, FrozenFirst, DetachHidden} {
			check(t, s, mode)
		}
	}
}

// Sizes at the 512-byte boundaries (a mask of 511, 512 and 513 bytes, an
// activation of exactly 1 MiB), and bad input: sizes below 1, products that
// overflow int64, an unknown mode.
func TestRoundingAndErrors(t *testing.T) {
	tensortest.NoCollector(t)
	for _, s := range []Shape{
		{Batch: 7, In: 2, Hidden: 73, Out: 1},     // mask 511 B
		{Batch: 8, In: 2, Hidden: 64, Out: 128},   // mask 512 B, output 4096 B
		{Batch: 19, In: 2, Hidden: 27, Out: 27},   // mask 513 B
		{Batch: 512, In: 1, Hidden: 512, Out: 33}, // activations of exactly 1 MiB
	} {
		for _, mode := range []Mode{Train, EvalDropout, DetachHidden} {
			check(t, s, mode)
		}
	}
	for _, c := range []struct {
		s    Shape
		mode Mode
	}{
		{Shape{0, 4, 4, 4}, Train},
		{Shape{4, 0, 4, 4}, Train}, // In is below 1 too, though no saved tensor has its size
		{Shape{4, -2, 4, 4}, EvalDropout},
		{Shape{4, 4, -1, 4}, NoGrad},
		{Shape{4, 4, 4, 0}, FrozenFirst},
		{Shape{math.MaxInt / 2, 4, math.MaxInt / 2, 4}, Train},
		{Shape{math.MaxInt64 / 2, 1, 1, 3}, EvalDropout},
		{Shape{1 << 31, 1, 1, 1 << 31}, FrozenFirst}, // Batch·Hidden fits, y's Batch·Out·4 bytes do not
		{Shape{4, 4, 4, 4}, Mode(42)},
		{Shape{4, 4, 4, 4}, Mode(-1)},
	} {
		if got, err := Predict(c.s, c.mode); err == nil {
			t.Errorf("Predict(%+v, %v) = %d, want an error", c.s, c.mode, got)
		}
	}
}

// Predict predicts: it allocates no tensor and launches no kernel, on any
// device (running Model.Loss on a meta device and measuring it is not a
// prediction).
func TestPredictsWithoutRunning(t *testing.T) {
	tensortest.NoCollector(t)
	for _, c := range []struct {
		s    Shape
		mode Mode
	}{
		{Shape{64, 32, 128, 10}, Train},
		{Shape{3, 5, 7, 2}, EvalDropout},
		{Shape{200, 3, 300, 40}, DetachHidden},
	} {
		seen := &tensorLog{}
		previous := tensor.SetObserver(seen)
		got, err := Predict(c.s, c.mode)
		tensor.SetObserver(previous)
		if err != nil {
			t.Errorf("%v %+v: %v", c.mode, c.s, err)
			continue
		}
		if seen.allocated > 0 || seen.launched > 0 {
			t.Errorf("%v %+v: Predict allocated %d tensors and launched %d kernels to answer %d: predict from autograd's rules, without running anything", c.mode, c.s, seen.allocated, seen.launched, got)
		}
	}
}
