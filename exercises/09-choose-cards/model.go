package choosecards

import (
	"fmt"

	"github.com/gpumem/course/gpukit/device"
	"github.com/gpumem/course/gpukit/distributed"
	"github.com/gpumem/course/gpukit/nn"
	"github.com/gpumem/course/gpukit/tensor"
)

// This file is given: do not edit it. The grader uses its own copy.

// Model is a multilayer perceptron: Linear layers (no bias) from
// Widths[i] to Widths[i+1] with a ReLU between each two, trained on
// Tokens rows per card.
type Model struct {
	Widths []int
	Tokens int
}

// Params is the model's number of parameters.
func (m Model) Params() int64 {
	var n int64
	for i := 0; i+1 < len(m.Widths); i++ {
		n += int64(m.Widths[i]) * int64(m.Widths[i+1])
	}
	return n
}

// Build makes the model on home, a meta card: its tensors hold no values,
// and distributed.NewTrainer places it on the cards of a group.
func (m Model) Build(home *device.Device) *nn.Sequential {
	var layers []nn.Module
	for i := 0; i+1 < len(m.Widths); i++ {
		if i > 0 {
			layers = append(layers, nn.NewReLU())
		}
		layers = append(layers, nn.NewLinear(m.Widths[i], m.Widths[i+1], false, tensor.On(home)))
	}
	return nn.NewSequential(layers...)
}

// Config is how the model trains at a stage: mixed precision (float16
// parameters and gradients, float32 master weights), Adam, and DDP's
// gradients as views into its buckets.
func Config(stage distributed.Stage) distributed.Config {
	return distributed.Config{Stage: stage, Dtype: tensor.Float16, Optimizer: distributed.Adam, GradientAsBucketView: true}
}

// Plan is a number of cards and the ZeRO stage they train at.
type Plan struct {
	Devices int
	Stage   distributed.Stage
}

func (p Plan) String() string { return fmt.Sprintf("%d cards at %s", p.Devices, p.Stage) }

// MaxDevices is the largest group Choose considers; groups are powers of
// two: 1, 2, 4, …, 64.
const MaxDevices = 64
