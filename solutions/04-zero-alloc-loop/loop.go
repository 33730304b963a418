// Package reuse runs an iterative update with buffers allocated once, so
// that its steps allocate nothing.
package reuse

import (
	"errors"
	"fmt"
	"slices"

	"github.com/gpumem/course/gpukit/tensor"
)

// Loop runs the update of Reference in buffers of its own.
type Loop struct {
	w, b   *tensor.Tensor // its own references to the caller's W and b
	state  *tensor.Tensor // the state, [N, D]
	hidden *tensor.Tensor // scratch for state·W + b and what follows, [N, D]
}

// NewLoop checks the operands (x0 [N, D], w [D, D], b [D], one device, one
// floating-point dtype) and allocates the loop's buffers: the state, a copy
// of x0, and one scratch buffer of the same size. It does not modify its
// operands, and w and b must stay unchanged while the loop runs. Bad
// operands are an error, not a panic.
func NewLoop(x0, w, b *tensor.Tensor) (*Loop, error) {
	if x0 == nil || w == nil || b == nil || x0.Released() || w.Released() || b.Released() {
		return nil, errors.New("reuse: NewLoop needs three live tensors")
	}
	if x0.Dim() != 2 {
		return nil, fmt.Errorf("reuse: x0 has shape %v, want [N, D]", x0.Shape())
	}
	d := x0.Size(1)
	if !slices.Equal(w.Shape(), []int{d, d}) || !slices.Equal(b.Shape(), []int{d}) {
		return nil, fmt.Errorf("reuse: x0 %v, w %v, b %v: want [N, D], [D, D] and [D]", x0.Shape(), w.Shape(), b.Shape())
	}
	if w.Device() != x0.Device() || b.Device() != x0.Device() {
		return nil, errors.New("reuse: x0, w and b must be on one device")
	}
	if !x0.Dtype().IsFloat() || w.Dtype() != x0.Dtype() || b.Dtype() != x0.Dtype() {
		return nil, fmt.Errorf("reuse: dtypes %v, %v, %v: want one floating-point dtype", x0.Dtype(), w.Dtype(), b.Dtype())
	}
	state, err := tensor.TryEmpty(x0.Shape(), tensor.On(x0.Device()), x0.Dtype())
	if err != nil {
		return nil, err
	}
	hidden, err := tensor.TryEmpty(x0.Shape(), tensor.On(x0.Device()), x0.Dtype())
	if err != nil {
		state.Release()
		return nil, err
	}
	var l *Loop
	err = tensor.Try(func() {
		tensor.NoGrad(func() { state.CopyFrom(x0) })
		l = &Loop{w: w.Detach(), b: b.Detach(), state: state, hidden: hidden}
	})
	if err != nil {
		state.Release()
		hidden.Release()
		return nil, err
	}
	return l, nil
}

// Step runs one update in place: it allocates nothing, and its result is
// bitwise Reference's, because it runs the same kernels in the same order.
func (l *Loop) Step() error {
	if l == nil || l.state == nil {
		return errors.New("reuse: Step on a released or missing loop")
	}
	return tensor.Try(func() {
		tensor.NoGrad(func() {
			tensor.MatmulOut(l.hidden, l.state, l.w)
			l.hidden.AddInPlace(l.b)
			l.hidden.ReluInPlace()
			l.state.MulInPlace(0.9)
			l.hidden.MulInPlace(0.1)
			l.state.AddInPlace(l.hidden)
		})
	})
}

// State returns a view of the current state (a new reference, which the
// caller releases; the next Step overwrites what it shows), or nil after
// Release.
func (l *Loop) State() *tensor.Tensor {
	if l == nil || l.state == nil {
		return nil
	}
	return l.state.Detach()
}

// Release gives the loop's buffers and references back. Step fails after it.
func (l *Loop) Release() {
	if l == nil || l.state == nil {
		return
	}
	for _, t := range []*tensor.Tensor{l.w, l.b, l.state, l.hidden} {
		t.Release()
	}
	*l = Loop{}
}
