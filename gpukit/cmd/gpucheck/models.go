package main

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/gpumem/course/gpukit/amp"
	"github.com/gpumem/course/gpukit/checkpoint"
	"github.com/gpumem/course/gpukit/device"
	"github.com/gpumem/course/gpukit/nn"
	"github.com/gpumem/course/gpukit/optim"
	"github.com/gpumem/course/gpukit/tensor"
)

// The course's model steps, measured for the judge: lesson 03's saved
// tensors and lesson 07's GPT step, built here as the lessons build them
// but on an explicit device (lesson 07's cells run on a meta classroom
// card, which a cuda run cannot replace). scripts/gpu_judge_models.py
// builds the same models in PyTorch and writes the same lines; every
// memory figure is taken after warmUp, relative to what was allocated and
// reserved then, so that the CUDA context and cuBLAS's workspace, which
// the two libraries take differently, stay out of the comparison.
//
// Each step writes memtrace's output format (one JSON object a line: i,
// name, ok, error, offset and stats), which gpu_judge.py compare reads.

// Model-step statistics: allocated and reserved bytes now and at the peak
// since the last reset, above the base taken after warmUp.
const (
	statAllocated    = "allocated"
	statReserved     = "reserved"
	statPeakAlloc    = "peak_allocated"
	statPeakReserved = "peak_reserved"
)

// modelLine is one measurement point of a model step.
type modelLine struct {
	I      int              `json:"i"`
	Name   string           `json:"name"`
	OK     bool             `json:"ok"`
	Error  *string          `json:"error"`
	Offset *int64           `json:"offset"`
	Stats  map[string]int64 `json:"stats"`
}

// recorder collects a step's measurement points.
type recorder struct {
	dev                *device.Device
	baseAlloc, baseRes int64
	lines              []modelLine
}

// newRecorder runs warmUp on dev and takes the base.
func newRecorder(dev *device.Device) *recorder {
	warmUp(dev)
	return &recorder{dev: dev, baseAlloc: dev.MemoryAllocated(), baseRes: dev.MemoryReserved()}
}

// mark records the memory statistics now, under name.
func (r *recorder) mark(name string) {
	d := r.dev
	r.value(name, map[string]int64{
		statAllocated:    d.MemoryAllocated() - r.baseAlloc,
		statReserved:     d.MemoryReserved() - r.baseRes,
		statPeakAlloc:    d.MaxMemoryAllocated() - r.baseAlloc,
		statPeakReserved: d.MaxMemoryReserved() - r.baseRes,
	})
}

// value records figures that are not memory statistics (a model's
// parameter count).
func (r *recorder) value(name string, stats map[string]int64) {
	r.lines = append(r.lines, modelLine{I: len(r.lines), Name: name, OK: true, Stats: stats})
}

// warmUp takes what the first matrix product and the first backward pass
// take for good (cuBLAS's workspace, per stream in gpukit and per handle
// and stream in PyTorch, whose backward runs on its own thread), then
// empties the cache, so that the base holds only them.
func warmUp(dev *device.Device) {
	w := tensor.Ones([]int{1, 1}, tensor.On(dev), tensor.RequiresGrad())
	y := w.Matmul(w)
	s := y.Sum()
	s.Backward()
	for _, t := range []*tensor.Tensor{s, y} {
		t.Release()
	}
	w.SetGrad(nil)
	w.Release()
	dev.Synchronize()
	dev.EmptyCache()
	dev.ResetPeakStats()
}

// modelSize scales the model steps: full for a card, small for a dry run
// on sim that computes on the CPU.
type modelSize struct {
	Batch, Width int // lesson 03's MLP
	GPT          gptConfig
	CkptRows     int // lesson 07's checkpointed MLP: rows × Width
}

var (
	fullSize  = modelSize{Batch: 2048, Width: 512, GPT: gptBig, CkptRows: 1024}
	smallSize = modelSize{Batch: 64, Width: 32, GPT: gptSmall, CkptRows: 32}
)

// modelStep is one judged step.
type modelStep struct {
	Name string
	Run  func(r *recorder, s modelSize)
}

// modelSteps lists the judged steps, in order; scripts/gpu_judge_models.py
// has the same names.
func modelSteps() []modelStep {
	steps := []modelStep{
		{"lesson03-autograd-saves", l03AutogradSaves},
		{"lesson03-budget", l03Budget},
		{"lesson03-freezing", l03Freezing},
		{"lesson03-nograd-peaks", l03NoGradPeaks},
		{"lesson07-checkpoint-segments", l07CheckpointSegments},
	}
	for _, o := range gptRuns {
		steps = append(steps, modelStep{"lesson07-gpt-" + o.name, func(r *recorder, s modelSize) { l07GPTStep(r, s.GPT, o.opts) }})
	}
	return steps
}

func lookupModelStep(name string) (modelStep, error) {
	steps := modelSteps()
	for _, s := range steps {
		if s.Name == name {
			return s, nil
		}
	}
	names := make([]string, len(steps))
	for i, s := range steps {
		names[i] = s.Name
	}
	return modelStep{}, fmt.Errorf("gpucheck models: no step %q; the steps are %s", name, strings.Join(names, ", "))
}

// runModelStep runs one step on dev and returns its lines, as JSON lines.
func runModelStep(dev *device.Device, step modelStep, size modelSize) ([]byte, error) {
	r := newRecorder(dev)
	if err := tensor.Try(func() { step.Run(r, size) }); err != nil {
		return nil, fmt.Errorf("gpucheck models: %s on %s: %w", step.Name, dev.Name(), err)
	}
	var b strings.Builder
	for _, l := range r.lines {
		j, err := json.Marshal(l)
		if err != nil {
			return nil, err
		}
		b.Write(j)
		b.WriteByte('\n')
	}
	return []byte(b.String()), nil
}

// Lesson 03: layers linear layers relu(h·W + b) of a square width, as the
// lesson's mlp (weights and biases require grad).
type mlp struct{ weights, biases []*tensor.Tensor }

func newMLP(dev *device.Device, layers, width int) mlp {
	var m mlp
	for range layers {
		w := tensor.Randn([]int{width, width}, tensor.On(dev))
		m.weights = append(m.weights, w.SetRequiresGrad(true))
		m.biases = append(m.biases, tensor.Zeros([]int{width}, tensor.On(dev), tensor.RequiresGrad()))
	}
	return m
}

func (m mlp) params() []*tensor.Tensor { return append(slices.Clone(m.weights), m.biases...) }

func (m mlp) release() {
	for _, p := range m.params() {
		p.SetGrad(nil)
		p.Release()
	}
}

// forward is the lesson's: it releases its own intermediates.
func (m mlp) forward(x *tensor.Tensor, after func(layer int)) *tensor.Tensor {
	h := x
	for i := range m.weights {
		z := h.Matmul(m.weights[i])
		a := z.Add(m.biases[i])
		z.Release()
		next := a.Relu()
		a.Release()
		if h != x {
			h.Release()
		}
		h = next
		if after != nil {
			after(i)
		}
	}
	return h
}

// lossOf is the mean of the squared outputs.
func lossOf(out *tensor.Tensor) *tensor.Tensor {
	sq := out.Pow(2)
	loss := sq.Mean()
	sq.Release()
	return loss
}

// l03AutogradSaves is the cell autograd-saves.
func l03AutogradSaves(r *recorder, s modelSize) {
	dev := r.dev
	m := newMLP(dev, 6, s.Width)
	x := tensor.Randn([]int{s.Batch, s.Width}, tensor.On(dev))
	r.mark("weights and input")
	out := m.forward(x, func(i int) { r.mark(fmt.Sprint("layer ", i+1)) })
	loss := lossOf(out)
	out.Release()
	r.mark("loss")
	dev.ResetPeakStats()
	loss.Backward()
	r.mark("backward")
	for _, p := range m.params() {
		p.SetGrad(nil)
	}
	r.mark("gradients freed")
	loss.Release()
	tensor.NoGrad(func() {
		out := m.forward(x, func(i int) { r.mark(fmt.Sprint("no-grad layer ", i+1)) })
		out.Release()
	})
	x.Release()
	m.release()
	r.mark("released")
}

// l03Budget is the cell memory-anatomy-budget: forward, backward and
// Adam's state, at a batch of 2 × Batch rows and at 32 rows.
func l03Budget(r *recorder, s modelSize) {
	dev := r.dev
	m := newMLP(dev, 6, s.Width)
	for _, rows := range []int{2 * s.Batch, 32} {
		at := func(what string) { r.mark(fmt.Sprintf("%d rows: %s", rows, what)) }
		x := tensor.Randn([]int{rows, s.Width}, tensor.On(dev))
		out := m.forward(x, nil)
		at("forward")
		loss := lossOf(out)
		out.Release()
		dev.ResetPeakStats()
		loss.Backward()
		at("backward")
		loss.Release()
		var state []*tensor.Tensor
		for _, p := range m.params() {
			state = append(state, tensor.ZerosLike(p), tensor.ZerosLike(p)) // exp_avg, exp_avg_sq
		}
		at("adam state")
		for _, t := range state {
			t.Release()
		}
		for _, p := range m.params() {
			p.SetGrad(nil)
		}
		x.Release()
		at("released")
	}
	m.release()
}

// l03Freezing is the cell freezing-layer-saves: saved tensors after the
// forward pass and gradients after backward, with frozen layers.
func l03Freezing(r *recorder, s modelSize) {
	dev := r.dev
	x := tensor.Randn([]int{s.Batch, s.Width}, tensor.On(dev))
	for _, c := range []struct {
		name   string
		frozen func(i int) bool
	}{
		{"none", func(int) bool { return false }},
		{"first 3 of 6", func(i int) bool { return i < 3 }},
		{"first 5 of 6", func(i int) bool { return i < 5 }},
		{"last 3 of 6", func(i int) bool { return i >= 3 }},
	} {
		m := newMLP(dev, 6, s.Width)
		for i := range m.weights {
			m.weights[i].SetRequiresGrad(!c.frozen(i))
			m.biases[i].SetRequiresGrad(!c.frozen(i))
		}
		out := m.forward(x, nil)
		r.mark(c.name + ": forward")
		loss := lossOf(out)
		out.Release()
		loss.Backward()
		loss.Release()
		r.mark(c.name + ": backward")
		m.release()
	}
	x.Release()
}

// l03NoGradPeaks is the cell nograd-saves-does-2: the peak of one forward
// pass with autograd, inside NoGrad and inside InferenceMode.
func l03NoGradPeaks(r *recorder, s modelSize) {
	dev := r.dev
	x := tensor.Randn([]int{s.Batch, s.Width}, tensor.On(dev))
	for _, layers := range []int{1, 2, 4, 8, 12} {
		m := newMLP(dev, layers, s.Width)
		for _, mode := range []struct {
			name string
			run  func(func())
		}{{"autograd", func(f func()) { f() }}, {"no-grad", tensor.NoGrad}, {"inference", tensor.InferenceMode}} {
			dev.ResetPeakStats()
			mode.run(func() { m.forward(x, nil).Release() })
			r.mark(fmt.Sprintf("%d layers, %s", layers, mode.name))
		}
		m.release()
	}
	x.Release()
}

// l07CheckpointSegments is the cell mistake-10-checkpointing: what a
// forward pass of (Linear, ReLU) × 4 holds with 8, 4 and 2 segments.
func l07CheckpointSegments(r *recorder, s modelSize) {
	dev := r.dev
	var layers []nn.Module
	for range 4 {
		layers = append(layers, nn.NewLinear(s.Width, s.Width, true, tensor.On(dev)), nn.NewReLU())
	}
	m := nn.NewSequential(layers...)
	x := tensor.Randn([]int{s.CkptRows, s.Width}, tensor.On(dev), tensor.RequiresGrad())
	r.mark("model and input")
	for _, segments := range []int{0, 8, 4, 2} {
		dev.ResetPeakStats()
		var y *tensor.Tensor
		if segments == 0 {
			y = m.Forward(x)
		} else {
			y = checkpoint.Sequential(layers, segments, x)
		}
		r.mark(fmt.Sprintf("%d segments: forward", segments))
		loss := y.Mean()
		y.Release()
		loss.Backward()
		loss.Release()
		r.mark(fmt.Sprintf("%d segments: backward", segments))
		nn.ZeroGrad(m, true)
		x.SetGrad(nil)
	}
	nn.Release(m)
	x.Release()
}

// Lesson 07's GPT (nn.GPT) and its batches.
type gptConfig struct{ Vocab, Dim, Heads, Layers, Seq, Batch int }

var (
	gptBig   = gptConfig{Vocab: 2048, Dim: 512, Heads: 8, Layers: 8, Seq: 256, Batch: 12}
	gptSmall = gptConfig{Vocab: 32, Dim: 32, Heads: 2, Layers: 2, Seq: 16, Batch: 2}
)

// gptOptions are the lesson's Options: Segments > 0 checkpoints the
// blocks (one segment per block in the runs), Mixed runs the forward
// under float16 autocast with a GradScaler.
type gptOptions struct {
	Checkpoint bool
	Mixed      bool
}

var gptRuns = []struct {
	name string
	opts gptOptions
}{
	{"baseline", gptOptions{}},
	{"checkpointing", gptOptions{Checkpoint: true}},
	{"mixed", gptOptions{Mixed: true}},
	{"both", gptOptions{Checkpoint: true, Mixed: true}},
}

// gptBatch is the lesson's Batch: random ids and, as targets, each
// position's previous token (zeros on a meta device, which has no values).
func gptBatch(dev *device.Device, c gptConfig, gen *tensor.Generator) (ids, targets *tensor.Tensor) {
	ids = tensor.Randint(0, int64(c.Vocab), []int{c.Batch, c.Seq}, tensor.On(dev), tensor.WithGenerator(gen))
	if ids.IsMeta() {
		return ids, tensor.Zeros([]int{c.Batch * c.Seq}, tensor.On(dev), tensor.Int64)
	}
	v := ids.Float64s()
	t := make([]int64, len(v))
	for i := range v {
		if i%c.Seq > 0 {
			t[i] = int64(v[i-1])
		}
	}
	return ids, tensor.FromSlice(t, []int{len(t)}, tensor.On(dev))
}

// l07GPTStep is the cells anatomy-training-step and
// checkpointing-mixed-precision: two training steps of the GPT with Adam
// (lr 1e-2), the memory after each phase and the peak inside it.
func l07GPTStep(r *recorder, c gptConfig, o gptOptions) {
	dev := r.dev
	m := nn.NewGPT(nn.GPTConfig{Vocab: c.Vocab, Dim: c.Dim, Heads: c.Heads, Layers: c.Layers},
		tensor.On(dev), tensor.WithGenerator(tensor.NewGenerator(1)))
	if o.Checkpoint {
		m.RunBlocks = func(blocks []nn.Module, x *tensor.Tensor) *tensor.Tensor {
			return checkpoint.Sequential(blocks, len(blocks), x)
		}
	}
	cfg := optim.DefaultAdam()
	cfg.LR = 1e-2
	opt, err := optim.NewAdam(nn.Parameters(m), cfg)
	if err != nil {
		panic(err)
	}
	scaler, err := amp.NewGradScaler(amp.DefaultGradScaler())
	if err != nil {
		panic(err)
	}
	r.value("parameters", map[string]int64{"count": int64(nn.NumParams(m)), "bytes": nn.Nbytes(m)})
	r.mark("model")
	gen := tensor.NewGenerator(7)
	for s := 1; s <= 2; s++ {
		ids, targets := gptBatch(dev, c, gen)
		dev.ResetPeakStats()
		at := func(phase string) {
			r.mark(fmt.Sprintf("step %d: %s", s, phase))
			dev.ResetPeakStats()
		}
		var loss *tensor.Tensor
		forward := func() {
			logits := m.Forward(ids)
			flat := logits.View(-1, logits.Size(-1))
			loss = tensor.CrossEntropy(flat, targets)
			flat.Release()
			logits.Release()
		}
		if o.Mixed {
			if err := amp.Autocast(tensor.Float16, forward); err != nil {
				panic(err)
			}
		} else {
			forward()
		}
		at("forward")
		if o.Mixed {
			scaled := scaler.Scale(loss)
			scaled.Backward()
			scaled.Release()
			at("backward")
			if _, err := scaler.Step(opt); err != nil {
				panic(err)
			}
			scaler.Update()
		} else {
			loss.Backward()
			at("backward")
			opt.Step()
		}
		at("step")
		opt.ZeroGrad(true)
		at("zero_grad")
		loss.Release()
		ids.Release()
		targets.Release()
		at("batch released")
	}
	r.value("adam state", map[string]int64{"bytes": opt.StateBytes()})
	opt.Release()
	nn.Release(m)
	r.mark("released")
}
