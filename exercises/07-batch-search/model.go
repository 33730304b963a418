package batchsearch

import (
	"github.com/gpumem/course/gpukit/device"
	"github.com/gpumem/course/gpukit/device/simtest"
	"github.com/gpumem/course/gpukit/nn"
	"github.com/gpumem/course/gpukit/optim"
	"github.com/gpumem/course/gpukit/tensor"
)

// This file is given: do not edit it.

// Card returns a fresh meta device (memory accounting without values, so
// tries are fast) with capacity bytes of memory.
func Card(capacity int64) *device.Device {
	// a made-up card: all of it is ours
	d, err := simtest.New(simtest.Meta(), simtest.Capacity(capacity), simtest.Named("small-card"))
	if err != nil {
		panic(err)
	}
	return d
}

// Trainer is an MLP with Adam on a device.
type Trainer struct {
	Dev   *device.Device
	Model *nn.Sequential
	Opt   *optim.Adam
	Width int
}

// NewTrainer builds a 4-layer MLP of the given width and its optimizer,
// and runs one step of batch 1 so that Adam's state exists.
func NewTrainer(dev *device.Device, width int) *Trainer {
	var layers []nn.Module
	for range 4 {
		layers = append(layers, nn.NewLinear(width, width, true, tensor.On(dev)), nn.NewGELU())
	}
	m := nn.NewSequential(layers...)
	opt, err := optim.NewAdam(nn.Parameters(m), optim.DefaultAdam())
	if err != nil {
		panic(err)
	}
	tr := &Trainer{Dev: dev, Model: m, Opt: opt, Width: width}
	tr.Step(1)
	tr.Opt.ZeroGrad(true)
	return tr
}

// Step runs one training step on a batch of the given size. Like most
// training code, it panics with *alloc.OutOfMemoryError when the device
// runs out of memory, and then leaves behind the gradients that backward
// had already made: call CleanUp after a failed step. On success it
// releases everything it made (the gradients included).
func (tr *Trainer) Step(batch int) {
	x := tensor.Randn([]int{batch, tr.Width}, tensor.On(tr.Dev))
	defer x.Release()
	y := tr.Model.Forward(x)
	defer y.Release()
	sq := y.Pow(2)
	defer sq.Release()
	loss := sq.Mean()
	defer loss.Release()
	loss.Backward()
	tr.Opt.Step()
	tr.Opt.ZeroGrad(true)
}

// CleanUp releases the gradients a failed step left behind.
func (tr *Trainer) CleanUp() { tr.Opt.ZeroGrad(true) }
