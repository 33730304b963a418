package saved

import (
	"github.com/gpumem/course/gpukit/device"
	"github.com/gpumem/course/gpukit/tensor"
)

// This file is given: do not edit it. The grader uses its own copy.

// Shape is the sizes of the computation: x is [Batch, In], W1 [In, Hidden],
// B1 [Hidden], W2 [Hidden, Out] and the target [Batch, Out].
type Shape struct{ Batch, In, Hidden, Out int }

// Mode is how the forward pass runs.
type Mode int

const (
	Train        Mode = iota // every parameter requires grad, dropout in training mode
	NoGrad                   // Train's forward inside tensor.NoGrad
	EvalDropout              // like Train, but dropout in evaluation mode (the identity)
	FrozenFirst              // W1 and B1 do not require grad (only W2 is trained)
	DetachHidden             // like Train, but the dropout output is detached before W2
)

// String names the mode.
func (m Mode) String() string {
	switch m {
	case Train:
		return "Train"
	case NoGrad:
		return "NoGrad"
	case EvalDropout:
		return "EvalDropout"
	case FrozenFirst:
		return "FrozenFirst"
	case DetachHidden:
		return "DetachHidden"
	}
	return "Mode(?)"
}

// Model holds the inputs and parameters of the computation.
type Model struct {
	X, Target, W1, B1, W2 *tensor.Tensor
	gen                   *tensor.Generator
}

// NewModel draws the inputs and parameters on dev from seed, with the
// parameters requiring grad as mode says.
func NewModel(dev *device.Device, s Shape, mode Mode, seed uint64) *Model {
	gen := tensor.NewGenerator(seed)
	randn := func(shape ...int) *tensor.Tensor {
		return tensor.Randn(shape, tensor.On(dev), tensor.WithGenerator(gen))
	}
	m := &Model{X: randn(s.Batch, s.In), Target: randn(s.Batch, s.Out),
		W1: randn(s.In, s.Hidden), B1: randn(s.Hidden), W2: randn(s.Hidden, s.Out), gen: gen}
	m.W2.SetRequiresGrad(true)
	if mode != FrozenFirst {
		m.W1.SetRequiresGrad(true)
		m.B1.SetRequiresGrad(true)
	}
	return m
}

// Loss runs the forward pass in the given mode:
//
//	z = X·W1;  h = z + B1;  g = gelu(h);  d = dropout(g, 0.25);  y = d·W2;  loss = mse(y, Target)
//
// releasing every intermediate as soon as the next one exists. What stays
// allocated afterwards, besides the model, is the loss and what its graph
// saved. The caller releases the loss.
func (m *Model) Loss(mode Mode) *tensor.Tensor {
	var loss *tensor.Tensor
	forward := func() {
		z := m.X.Matmul(m.W1)
		h := z.Add(m.B1)
		z.Release()
		g := h.Gelu()
		h.Release()
		d := g.Dropout(0.25, mode != EvalDropout, m.gen)
		g.Release()
		if mode == DetachHidden {
			detached := d.Detach()
			d.Release()
			d = detached
		}
		y := d.Matmul(m.W2)
		d.Release()
		loss = tensor.MSELoss(y, m.Target)
		y.Release()
	}
	if mode == NoGrad {
		tensor.NoGrad(forward)
	} else {
		forward()
	}
	return loss
}
