// Mutant: the training loss is logged after the update (from a second forward pass).

// Package leak is a training loop that runs out of memory after enough
// steps. Find what keeps memory alive and fix it.
package leak

import (
	"errors"
	"fmt"

	"github.com/gpumem/course/gpukit/tensor"
)

// History is the loss of every step: on the training set before the step's
// update, and on the validation set after it.
type History struct{ Train, Val []float64 }

// Fit trains m on d for steps steps of gradient descent with learning rate
// lr and returns the losses it logged. Allocated memory after Fit is what it
// was before, and does not grow with steps: nothing of a step outlives it.
// steps < 0 or a nil model is an error.
func Fit(m *MLP, d Data, steps int, lr float64) (History, error) {
	if m == nil {
		return History{}, errors.New("leak: Fit needs a model")
	}
	if steps < 0 {
		return History{}, fmt.Errorf("leak: %d steps; want 0 or more", steps)
	}
	h := History{Train: make([]float64, 0, steps), Val: make([]float64, 0, steps)}
	for step := 0; step < steps; step++ {
		pred := m.Forward(d.X)
		loss := tensor.MSELoss(pred, d.Y)
		pred.Release() // the graph keeps what Backward needs
		loss.Backward()
		loss.Release()
		m.Step(lr)
		tensor.NoGrad(func() {
			p := m.Forward(d.X)
			l := tensor.MSELoss(p, d.Y)
			h.Train = append(h.Train, l.Item())
			p.Release()
			l.Release()
		})

		// Evaluation records nothing, and its tensors go at once.
		tensor.NoGrad(func() {
			valPred := m.Forward(d.ValX)
			valLoss := tensor.MSELoss(valPred, d.ValY)
			h.Val = append(h.Val, valLoss.Item())
			valPred.Release()
			valLoss.Release()
		})
	}
	return h, nil
}
