package parallel

import (
	"fmt"
	"time"

	"github.com/gpumem/course/gpukit/device"
	"github.com/gpumem/course/gpukit/internal/isnil"
	"github.com/gpumem/course/gpukit/nn"
	"github.com/gpumem/course/gpukit/tensor"
)

// Stage is a part of a model and the device it runs on.
type Stage struct {
	Module nn.Module
	Device *device.Device
}

// Pipeline runs stages on their devices, in order.
type Pipeline struct {
	nn.Base
	Stages []Stage
	// MicroBatches is how many pieces Forward cuts a batch into along
	// dimension 0 (1: naive model parallelism, the whole batch at once).
	MicroBatches int
	// Order is the order in which ForwardBackward runs the forwards and
	// backwards on each device: GPipe (the zero value) or OneFOneB.
	Order Order
	// Last holds the durations Forward measured on the device clocks.
	Last Measured
}

// Measured is what one Forward or ForwardBackward took on the device
// clocks: Compute[s][m] is stage s's forward on micro-batch m, Copy[s][m]
// the copy of its input onto stage s's device (zero for stage 0).
// ForwardBackward also records Backward[s][m], stage s's backward on
// micro-batch m, GradCopy[s][m], the copy of the gradient of its output
// onto its device (zero for the last stage), and the device's memory
// around each forward and backward.
type Measured struct {
	Order                   Order // ForwardBackward's order
	Compute, Copy           [][]time.Duration
	Backward, GradCopy      [][]time.Duration
	ForwardMem, BackwardMem [][]Allocated
}

// NewPipeline returns a pipeline of stages cut into microBatches. It
// checks that each stage lives on its device (a stage that owns no
// tensor runs wherever it is put) and that the stages chain: probe, an
// example input (a batch of one is enough), is run through them without
// gradients, and the first stage that refuses its predecessor's output
// is named.
func NewPipeline(stages []Stage, microBatches int, probe *tensor.Tensor) (*Pipeline, error) {
	if len(stages) == 0 {
		return nil, errorf("NewPipeline: no stages")
	}
	if microBatches < 1 {
		return nil, errorf("NewPipeline: %d micro-batches; need at least 1", microBatches)
	}
	if probe == nil {
		return nil, errorf("NewPipeline: probe is nil; give an example input (a batch of one is enough)")
	}
	for i, s := range stages {
		if isnil.Nil(s.Module) || s.Device == nil {
			return nil, errorf("NewPipeline: stage %d needs a module and a device", i)
		}
		for _, name := range Where(s.Module) {
			if name != s.Device.Name() {
				return nil, errorf("NewPipeline: stage %d (%T) has tensors on %s, not on its device %s", i, s.Module, name, s.Device.Name())
			}
		}
	}
	if err := probeChain(stages, probe); err != nil {
		return nil, err
	}
	return &Pipeline{Stages: stages, MicroBatches: microBatches}, nil
}

func probeChain(stages []Stage, probe *tensor.Tensor) (err error) {
	var h *tensor.Tensor
	stage := 0
	defer func() {
		if h != probe {
			h.Release()
		}
		if r := recover(); r != nil {
			err = errorf("NewPipeline: stage %d (%T) does not accept the output of stage %d: %v", stage, stages[stage].Module, stage-1, r)
			if stage == 0 {
				err = errorf("NewPipeline: stage 0 (%T) does not accept an input of shape %v: %v", stages[0].Module, probe.Shape(), r)
			}
		}
	}()
	tensor.NoGrad(func() {
		h = probe
		for i, s := range stages {
			stage = i
			in := h.To(s.Device, false)
			if h != probe {
				h.Release()
			}
			h = in
			out := s.Module.Forward(h)
			h.Release()
			h = out
		}
	})
	return nil
}

// Members lists the stages as children "0", "1", ...
func (p *Pipeline) Members() nn.Members {
	var ms nn.Members
	for i, s := range p.Stages {
		ms.Children = append(ms.Children, nn.NamedModule{Name: fmt.Sprint(i), Module: s.Module})
	}
	return ms
}

// Forward runs x through the stages, micro-batch by micro-batch, copying
// each activation to the next stage's device, and returns the outputs
// concatenated on the last stage's device. It records the durations in
// p.Last.
func (p *Pipeline) Forward(x *tensor.Tensor) *tensor.Tensor {
	checkRun("Forward", x, true)
	S := len(p.Stages)
	pieces := split(x, p.MicroBatches)
	p.Last = Measured{Compute: grid(S, len(pieces)), Copy: grid(S, len(pieces))}
	outs := make([]*tensor.Tensor, len(pieces))
	for m, h := range pieces {
		for s, st := range p.Stages {
			st.Device.Synchronize()
			t0 := st.Device.Now()
			in := h.To(st.Device, false)
			h.Release()
			st.Device.Synchronize()
			t1 := st.Device.Now()
			h = st.Module.Forward(in)
			in.Release()
			st.Device.Synchronize()
			p.Last.Copy[s][m], p.Last.Compute[s][m] = t1-t0, st.Device.Now()-t1
		}
		outs[m] = h
	}
	return join(outs)
}

// Reference runs model (the unsplit model, on one device) as a pipeline
// of p.MicroBatches would: the same micro-batches, concatenated. Its
// outputs and gradients are those of p, bitwise.
func Reference(model nn.Module, x *tensor.Tensor, microBatches int) *tensor.Tensor {
	checkRun("Reference", x, model != nil)
	pieces := split(x, microBatches)
	outs := make([]*tensor.Tensor, len(pieces))
	for m, h := range pieces {
		outs[m] = model.Forward(h)
		h.Release()
	}
	return join(outs)
}

// split cuts x into n pieces along dimension 0 (views): equal sizes,
// the first ones one row longer when n does not divide the batch, and no
// more pieces than rows.
// checkRun panics with an *Error when a run gets no input or no loss:
// what a nil would otherwise make a nil dereference deep inside.
func checkRun(op string, x *tensor.Tensor, haveFn bool) {
	switch {
	case x == nil:
		panic(errorf("%s: x is nil", op))
	case !haveFn:
		panic(errorf("%s: the model or loss function is nil", op))
	}
}

func split(x *tensor.Tensor, n int) []*tensor.Tensor {
	rows := x.Size(0)
	if n > rows {
		n = rows
	}
	pieces := make([]*tensor.Tensor, 0, n)
	start := 0
	for m := range n {
		size := rows / n
		if m < rows%n {
			size++
		}
		pieces = append(pieces, x.Narrow(0, start, size))
		start += size
	}
	return pieces
}

func join(outs []*tensor.Tensor) *tensor.Tensor {
	if len(outs) == 1 {
		return outs[0]
	}
	y := tensor.Cat(outs, 0)
	for _, o := range outs {
		o.Release()
	}
	return y
}

func grid(rows, cols int) [][]time.Duration {
	g := make([][]time.Duration, rows)
	for i := range g {
		g[i] = make([]time.Duration, cols)
	}
	return g
}
