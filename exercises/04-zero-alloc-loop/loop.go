// Package reuse runs an iterative update with buffers allocated once, so
// that its steps allocate nothing.
package reuse

import (
	"errors"

	"github.com/gpumem/course/gpukit/tensor"
)

// Loop runs the update of Reference in buffers of its own.
//
// TODO: add the fields it needs.
type Loop struct{}

// NewLoop checks the operands (x0 [N, D], w [D, D], b [D], one device, one
// floating-point dtype) and allocates the loop's buffers: the state, a copy
// of x0, and one scratch buffer of the same size. It does not modify its
// operands, and w and b must stay unchanged while the loop runs. Bad
// operands are an error, not a panic.
//
// TODO: write it.
func NewLoop(x0, w, b *tensor.Tensor) (*Loop, error) {
	return nil, errors.New("reuse: NewLoop is not implemented yet")
}

// Step runs one update in place: it allocates nothing, and its result is
// bitwise Reference's.
//
// TODO: write it with the out= variants and in-place ops of lesson 04.
func (l *Loop) Step() error {
	return errors.New("reuse: Step is not implemented yet")
}

// State returns a view of the current state (a new reference, which the
// caller releases; the next Step overwrites what it shows), or nil after
// Release.
//
// TODO: write it.
func (l *Loop) State() *tensor.Tensor { return nil }

// Release gives the loop's buffers and references back. Step fails after it.
//
// TODO: write it.
func (l *Loop) Release() {}
