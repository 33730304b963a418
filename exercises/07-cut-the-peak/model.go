package cutpeak

import (
	"fmt"

	"github.com/gpumem/course/gpukit/device"
	"github.com/gpumem/course/gpukit/device/simtest"
	"github.com/gpumem/course/gpukit/nn"
	"github.com/gpumem/course/gpukit/optim"
	"github.com/gpumem/course/gpukit/tensor"
)

// This file is given: do not edit it.

// Model is an MLP: In, then Blocks (each Linear(w, 4w) → GELU →
// Linear(4w, w)), then Out.
type Model struct {
	nn.Base
	In     *nn.Linear
	Blocks []nn.Module
	Out    *nn.Linear
}

// NewModel builds a model of the given width and depth on dev, seeded.
func NewModel(dev *device.Device, width, depth int, seed uint64) *Model {
	o := []tensor.Option{tensor.On(dev), tensor.WithGenerator(tensor.NewGenerator(seed))}
	m := &Model{In: nn.NewLinear(width, width, true, o...), Out: nn.NewLinear(width, width, true, o...)}
	for range depth {
		m.Blocks = append(m.Blocks, nn.NewSequential(nn.NewLinear(width, 4*width, true, o...), nn.NewGELU(), nn.NewLinear(4*width, width, true, o...)))
	}
	return m
}

// Members lists in, blocks.N and out.
func (m *Model) Members() nn.Members {
	ms := nn.Members{Children: []nn.NamedModule{{Name: "in", Module: m.In}}}
	for i, b := range m.Blocks {
		ms.Children = append(ms.Children, nn.NamedModule{Name: fmt.Sprint("blocks.", i), Module: b})
	}
	ms.Children = append(ms.Children, nn.NamedModule{Name: "out", Module: m.Out})
	return ms
}

// Forward runs In, the blocks and Out.
func (m *Model) Forward(x *tensor.Tensor) *tensor.Tensor {
	h := m.In.Forward(x)
	b := nn.RunLayers(m.Blocks, h)
	h.Release()
	defer b.Release()
	return m.Out.Forward(b)
}

// NewOptimizer returns Adam (lr 1e-3) over m's parameters.
func NewOptimizer(m *Model) *optim.Adam {
	opt, err := optim.NewAdam(nn.Parameters(m), optim.DefaultAdam())
	if err != nil {
		panic(err)
	}
	return opt
}

// BaselineStep is one training step: forward, mean squared error against
// y, backward, Adam step, gradients released. It returns the loss (a 0-d
// tensor without history; release it) and releases everything else.
func BaselineStep(m *Model, opt *optim.Adam, x, y *tensor.Tensor) (*tensor.Tensor, error) {
	out := m.Forward(x)
	loss := tensor.MSELoss(out, y)
	out.Release()
	loss.Backward()
	opt.Step()
	opt.ZeroGrad(true)
	defer loss.Release()
	return loss.Detach(), nil
}

// ClassroomCard is a fresh meta device with the classroom profile (2
// GiB): every allocation is accounted as on the card, no value is
// computed. The CUDA context is left out so that the whole 2 GiB is the
// budget the exercise grades against.
func ClassroomCard() *device.Device {
	d, err := simtest.New(simtest.Meta(), simtest.FullCapacity())
	if err != nil {
		panic(err)
	}
	return d
}

// Peak returns the peak allocated memory of the second of two steps of
// step on a fresh model (the first allocates Adam's state).
func Peak(width, depth, batch int, step func(*Model, *optim.Adam, *tensor.Tensor, *tensor.Tensor) (*tensor.Tensor, error)) (int64, error) {
	dev := ClassroomCard()
	m := NewModel(dev, width, depth, 1)
	opt := NewOptimizer(m)
	x := tensor.Zeros([]int{batch, width}, tensor.On(dev))
	y := tensor.Zeros([]int{batch, width}, tensor.On(dev))
	for i := range 2 {
		if i == 1 {
			dev.ResetPeakStats()
		}
		loss, err := step(m, opt, x, y)
		if err != nil {
			return 0, err
		}
		loss.Release()
	}
	return dev.MaxMemoryAllocated(), nil
}
