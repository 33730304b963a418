package bubble

import (
	"errors"
	"fmt"

	"github.com/gpumem/course/gpukit/device"
	"github.com/gpumem/course/gpukit/device/sim"
	"github.com/gpumem/course/gpukit/nn"
	"github.com/gpumem/course/gpukit/nn/parallel"
	"github.com/gpumem/course/gpukit/tensor"
)

// MaxMicro is the most micro-batches Plan tries.
const MaxMicro = 16

// MetaStages returns one stage per entry of layers, stage i on a fresh
// meta card sim:i of the classroom profile (it allocates and keeps the
// modelled clock, but computes no values), holding layers[i] pairs of
// Linear(width, width) and ReLU. The model's input is a batch of rows of
// width numbers on the first stage's card.
func MetaStages(width int, layers ...int) ([]parallel.Stage, error) {
	p, err := device.LookupProfile("classroom")
	if err != nil {
		return nil, err
	}
	if len(layers) == 0 {
		return nil, errors.New("bubble: MetaStages needs at least one stage")
	}
	var stages []parallel.Stage
	for i, n := range layers {
		if n < 1 || width < 1 {
			return nil, fmt.Errorf("bubble: stage %d of %d layers %d wide; need at least 1 of each", i, n, width)
		}
		d, err := device.New(sim.NewMeta(i, p))
		if err != nil {
			return nil, err
		}
		s := nn.NewSequential()
		for range n {
			s.Layers = append(s.Layers, nn.NewLinear(width, width, true, tensor.On(d)), nn.NewReLU())
		}
		stages = append(stages, parallel.Stage{Module: s, Device: d})
	}
	return stages, nil
}
