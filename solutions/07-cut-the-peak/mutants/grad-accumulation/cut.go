// Mutant: the batch is split into micro-batches whose gradients accumulate, with neither checkpointing nor autocast.

package cutpeak

import (
	"github.com/gpumem/course/gpukit/optim"
	"github.com/gpumem/course/gpukit/tensor"
)

// parts is the number of micro-batches a step is split into.
const parts = 8

// TrainStep runs the step on micro-batches of x and y: each one's loss,
// scaled by 1/parts, adds its gradients to the parameters' grads; Adam
// steps once. The loss returned is the sum of the scaled losses.
func TrainStep(m *Model, opt *optim.Adam, x, y *tensor.Tensor) (*tensor.Tensor, error) {
	var total *tensor.Tensor
	err := tensor.Try(func() {
		n := x.Size(0)
		for i := range parts {
			xs := x.Narrow(0, i*n/parts, (i+1)*n/parts-i*n/parts)
			ys := y.Narrow(0, i*n/parts, (i+1)*n/parts-i*n/parts)
			out := m.Forward(xs)
			loss := tensor.MSELoss(out, ys)
			out.Release()
			scaled := loss.Mul(1 / float64(parts))
			loss.Release()
			scaled.Backward()
			part := scaled.Detach()
			scaled.Release()
			if total == nil {
				total = part
			} else {
				sum := total.Add(part)
				total.Release()
				part.Release()
				total = sum
			}
			xs.Release()
			ys.Release()
		}
		opt.Step()
	})
	opt.ZeroGrad(true)
	if err != nil {
		if total != nil {
			total.Release()
		}
		return nil, err
	}
	return total, nil
}
