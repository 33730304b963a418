package parallel

import (
	"time"

	"github.com/gpumem/course/gpukit/device"
	"github.com/gpumem/course/gpukit/nn"
	"github.com/gpumem/course/gpukit/tensor"
)

// Allocated is the memory a device held around one piece of a pipelined
// step: at its start, after the incoming copy arrived, and at its end.
type Allocated struct{ Start, Copied, End int64 }

// ForwardBackward runs one GPipe training step over x: the forward of
// every micro-batch through the stages, then the backward of the
// micro-batches in reverse order, each flowing from the last stage to the
// first. loss turns the last stage's output on micro-batch m into a
// scalar; the parameters' gradients accumulate over the micro-batches
// (sum the micro-batch losses to get the batch's). It returns the sum of
// the losses (0 on meta devices, which hold no values) and records in p.Last the durations of every forward,
// backward and copy on the device clocks, and each device's memory
// around them (ScheduleStep lays them out).
//
// Each stage's input is a copy of the previous stage's output that is a
// leaf of its own graph, so each stage's backward runs on its own; the
// gradient of that input is copied back onto the previous stage's device.
// The gradients are those of ReferenceStep on the unsplit model, bitwise.
func (p *Pipeline) ForwardBackward(x *tensor.Tensor, loss func(out *tensor.Tensor, micro int) *tensor.Tensor) float64 {
	S := len(p.Stages)
	pieces := split(x, p.MicroBatches)
	M := len(pieces)
	p.Last = Measured{Compute: grid(S, M), Copy: grid(S, M), Backward: grid(S, M), GradCopy: grid(S, M),
		ForwardMem: memGrid(S, M), BackwardMem: memGrid(S, M)}
	ins := make([][]*tensor.Tensor, S)  // each stage's input, per micro-batch
	outs := make([][]*tensor.Tensor, S) // each stage's output (the last's: the loss)
	for s := range S {
		ins[s], outs[s] = make([]*tensor.Tensor, M), make([]*tensor.Tensor, M)
	}
	for m, piece := range pieces {
		for s, st := range p.Stages {
			d := st.Device
			d.Synchronize()
			mem, t0 := Allocated{Start: d.MemoryAllocated()}, d.Now()
			var in *tensor.Tensor
			if s == 0 {
				in = piece.To(d, false) // autograd carries x's gradient back, if it needs one
				piece.Release()
			} else {
				tensor.NoGrad(func() { in = outs[s-1][m].To(d, false) })
				in.SetRequiresGrad(true)
			}
			d.Synchronize()
			mem.Copied = d.MemoryAllocated()
			t1 := d.Now()
			out := st.Module.Forward(in)
			if s == S-1 {
				l := loss(out, m)
				out.Release()
				out = l
			}
			d.Synchronize()
			mem.End = d.MemoryAllocated()
			ins[s][m], outs[s][m] = in, out
			p.Last.Copy[s][m], p.Last.Compute[s][m], p.Last.ForwardMem[s][m] = t1-t0, d.Now()-t1, mem
		}
	}
	var total float64
	for m := M - 1; m >= 0; m-- {
		var grad *tensor.Tensor // d loss / d (stage s's output), on stage s's device
		for s := S - 1; s >= 0; s-- {
			d := p.Stages[s].Device
			d.Synchronize()
			mem, t0 := Allocated{Start: d.MemoryAllocated()}, d.Now()
			if s < S-1 {
				// Receive the gradient of the next stage's input, and
				// free that input there: the sender's step is over.
				next := ins[s+1][m]
				tensor.NoGrad(func() { grad = next.Grad().To(d, false) })
				next.SetGrad(nil)
				next.Release()
				p.Last.BackwardMem[s+1][m].End = p.Stages[s+1].Device.MemoryAllocated()
			}
			d.Synchronize()
			mem.Copied = d.MemoryAllocated()
			t1 := d.Now()
			if s == S-1 {
				if d.Kind() != device.Meta { // a meta device has no values to read
					total += outs[s][m].Item()
					d.Synchronize()
					t1 = d.Now() // reading the loss is not the backward's work
				}
				outs[s][m].Backward()
			} else {
				outs[s][m].Backward(tensor.WithGradient(grad))
				grad.Release()
			}
			outs[s][m].Release()
			if s == 0 {
				ins[0][m].Release()
			}
			d.Synchronize()
			mem.End = d.MemoryAllocated()
			p.Last.GradCopy[s][m], p.Last.Backward[s][m], p.Last.BackwardMem[s][m] = t1-t0, d.Now()-t1, mem
		}
	}
	return total
}

// ReferenceStep runs model (the unsplit model, on one device) as
// ForwardBackward runs a pipeline of microBatches: the forwards of the
// same micro-batches, then their backwards in reverse order. It returns
// the sum of the losses; the gradients are the pipeline's, bitwise.
func ReferenceStep(model nn.Module, x *tensor.Tensor, microBatches int, loss func(out *tensor.Tensor, micro int) *tensor.Tensor) float64 {
	pieces := split(x, microBatches)
	losses := make([]*tensor.Tensor, len(pieces))
	for m, h := range pieces {
		out := model.Forward(h)
		h.Release()
		losses[m] = loss(out, m)
		out.Release()
	}
	var total float64
	for m := len(losses) - 1; m >= 0; m-- {
		total += losses[m].Item()
		losses[m].Backward()
		losses[m].Release()
	}
	return total
}

func memGrid(rows, cols int) [][]Allocated {
	g := make([][]Allocated, rows)
	for i := range g {
		g[i] = make([]Allocated, cols)
	}
	return g
}

// ScheduleStep lays out the measured durations of ForwardBackward as
// GPipe runs them: each device does the forwards of micro-batches 0..M-1,
// then the backwards of M-1..0, one at a time. A forward of m on stage s
// waits for stage s-1's forward of m; a backward of m on stage s waits
// for stage s+1's backward of m (on the last stage, for its own forward
// of m). The copy in (the activation, or the gradient) runs first, on the
// receiving device. The intervals carry the memory measured around them.
func ScheduleStep(m Measured) Timeline {
	S := len(m.Compute)
	if S == 0 || len(m.Backward) != S {
		return Timeline{}
	}
	M := len(m.Compute[0])
	order := make([][]stepOp, S)
	for s := range S {
		for mb := range M {
			order[s] = append(order[s], stepOp{false, mb})
		}
		for mb := M - 1; mb >= 0; mb-- {
			order[s] = append(order[s], stepOp{true, mb})
		}
	}
	return listSchedule(m, order)
}

type stepOp struct {
	backward bool
	micro    int
}

// listSchedule runs each device's list of operations in order, each as
// soon as the device is free and its input has arrived.
func listSchedule(m Measured, order [][]stepOp) Timeline {
	S, M := len(m.Compute), len(m.Compute[0])
	end := [2][][]time.Duration{grid(S, M), grid(S, M)}
	done := [2][][]bool{boolGrid(S, M), boolGrid(S, M)}
	next, free := make([]int, S), make([]time.Duration, S)
	tl := Timeline{Busy: make([]time.Duration, S)}
	for progressed := true; progressed; {
		progressed = false
		for s := range S {
			for next[s] < len(order[s]) {
				o := order[s][next[s]]
				k, from := 0, s-1 // forward: from the previous stage
				if o.backward {
					k, from = 1, s+1
					if s == S-1 {
						k, from = 0, s // the last stage's own forward
					}
				}
				var ready time.Duration
				if from >= 0 && from < S {
					if !done[k][from][o.micro] {
						break
					}
					ready = end[k][from][o.micro]
				}
				start := max(free[s], ready)
				cp, run, mem := m.Copy[s][o.micro], m.Compute[s][o.micro], m.ForwardMem
				kind := 0
				if o.backward {
					cp, run, mem, kind = m.GradCopy[s][o.micro], m.Backward[s][o.micro], m.BackwardMem, 1
				}
				iv := Interval{Stage: s, Micro: o.micro, Backward: o.backward, Start: start, CopyEnd: start + cp, End: start + cp + run}
				if mem != nil {
					iv.Mem = mem[s][o.micro]
				}
				end[kind][s][o.micro], done[kind][s][o.micro] = iv.End, true
				free[s] = iv.End
				tl.Intervals = append(tl.Intervals, iv)
				tl.Busy[s] += iv.End - iv.Start
				tl.Total = max(tl.Total, iv.End)
				next[s]++
				progressed = true
			}
		}
	}
	tl.Bubble = bubble(tl, S)
	return tl
}

func bubble(tl Timeline, stages int) float64 {
	var busy time.Duration
	for _, b := range tl.Busy {
		busy += b
	}
	if tl.Total == 0 {
		return 0
	}
	return 1 - float64(busy)/(float64(stages)*float64(tl.Total))
}

func boolGrid(rows, cols int) [][]bool {
	g := make([][]bool, rows)
	for i := range g {
		g[i] = make([]bool, cols)
	}
	return g
}
