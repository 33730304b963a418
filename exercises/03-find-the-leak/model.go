package leak

import (
	"math"

	"github.com/gpumem/course/gpukit/device"
	"github.com/gpumem/course/gpukit/tensor"
)

// This file is given: do not edit it. The grader uses its own copy.

// MLP is a two-layer perceptron, relu(x·W1 + B1)·W2 + B2, whose parameters
// require grad.
type MLP struct{ W1, B1, W2, B2 *tensor.Tensor }

// NewMLP makes a model on dev with weights drawn from a generator seeded
// with seed, so that two models made with the same arguments are equal.
func NewMLP(dev *device.Device, in, hidden, out int, seed uint64) *MLP {
	gen := tensor.NewGenerator(seed)
	layer := func(rows, cols int) (*tensor.Tensor, *tensor.Tensor) {
		w := tensor.Randn([]int{rows, cols}, tensor.On(dev), tensor.WithGenerator(gen))
		w.MulInPlace(math.Sqrt(2 / float64(rows))) // He initialisation
		return w.SetRequiresGrad(true), tensor.Zeros([]int{cols}, tensor.On(dev), tensor.RequiresGrad())
	}
	m := &MLP{}
	m.W1, m.B1 = layer(in, hidden)
	m.W2, m.B2 = layer(hidden, out)
	return m
}

// Params is the model's parameters, in a fixed order.
func (m *MLP) Params() []*tensor.Tensor { return []*tensor.Tensor{m.W1, m.B1, m.W2, m.B2} }

// Forward computes the model's output for x. It releases its own
// intermediates; the caller owns (and releases) the result, whose graph
// keeps what backward needs while grad mode is on.
func (m *MLP) Forward(x *tensor.Tensor) *tensor.Tensor {
	z := x.Matmul(m.W1)
	a := z.Add(m.B1)
	z.Release()
	h := a.Relu()
	a.Release()
	y := h.Matmul(m.W2)
	h.Release()
	out := y.Add(m.B2)
	y.Release()
	return out
}

// Step moves every parameter by -lr times its gradient, in place and
// without recording, then frees the gradients (SetGrad(nil)).
func (m *MLP) Step(lr float64) {
	tensor.NoGrad(func() {
		for _, p := range m.Params() {
			if g := p.Grad(); g != nil {
				step := g.Mul(lr)
				p.SubInPlace(step)
				step.Release()
			}
			p.SetGrad(nil)
		}
	})
}

// Release gives the parameters and their gradients back.
func (m *MLP) Release() {
	for _, p := range m.Params() {
		p.SetGrad(nil)
		p.Release()
	}
}

// Data is a training set and a validation set.
type Data struct{ X, Y, ValX, ValY *tensor.Tensor }

// NewData draws a regression problem on dev from seed: inputs x of n rows
// and targets of out columns.
func NewData(dev *device.Device, n, in, out int, seed uint64) Data {
	gen := tensor.NewGenerator(seed)
	randn := func(rows, cols int) *tensor.Tensor {
		return tensor.Randn([]int{rows, cols}, tensor.On(dev), tensor.WithGenerator(gen))
	}
	return Data{X: randn(n, in), Y: randn(n, out), ValX: randn(n/2, in), ValY: randn(n/2, out)}
}

// Release gives the data back.
func (d Data) Release() {
	for _, t := range []*tensor.Tensor{d.X, d.Y, d.ValX, d.ValY} {
		t.Release()
	}
}
