// Package leak is a training loop that runs out of memory after enough
// steps. Find what keeps memory alive and fix it.
package leak

import "github.com/gpumem/course/gpukit/tensor"

// History is the loss of every step: on the training set before the step's
// update, and on the validation set after it.
type History struct{ Train, Val []float64 }

// Fit trains m on d for steps steps of gradient descent with learning rate
// lr and returns the losses it logged. Allocated memory after Fit is what it
// was before, and does not grow with steps: nothing of a step outlives it.
// steps < 0 or a nil model is an error.
//
// TODO: this version works, but its memory grows with every step. Fix it
// without changing what it computes.
func Fit(m *MLP, d Data, steps int, lr float64) (History, error) {
	var train, val []*tensor.Tensor
	for step := 0; step < steps; step++ {
		loss := tensor.MSELoss(m.Forward(d.X), d.Y)
		loss.Backward()
		m.Step(lr)
		train = append(train, loss) // kept for logging

		valLoss := tensor.MSELoss(m.Forward(d.ValX), d.ValY) // how are we doing?
		val = append(val, valLoss)
	}
	var h History
	for i := range train {
		h.Train = append(h.Train, train[i].Item())
		h.Val = append(h.Val, val[i].Item())
	}
	return h, nil
}
