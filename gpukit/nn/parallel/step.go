package parallel

import (
	"fmt"
	"time"

	"github.com/gpumem/course/gpukit/device"
	"github.com/gpumem/course/gpukit/nn"
	"github.com/gpumem/course/gpukit/tensor"
)

// Order is the order in which each device of a pipeline runs the
// forwards and backwards of the micro-batches in a training step.
type Order int

const (
	// GPipe runs every forward, then the backwards in reverse order
	// (Huang et al., 2019): each device holds the activations of all
	// micro-batches at once.
	GPipe Order = iota
	// OneFOneB is PipeDream-Flush's one-forward-one-backward order
	// (Narayanan et al., 2021): stage s (of S) runs S-1-s forwards ahead,
	// then alternates one forward and one backward, then drains the
	// backwards, in micro-batch order. A device holds the activations of
	// at most S-s micro-batches, and the step is as long as GPipe's.
	OneFOneB
)

func (o Order) String() string {
	switch o {
	case GPipe:
		return "GPipe"
	case OneFOneB:
		return "1F1B"
	}
	return fmt.Sprintf("Order(%d)", int(o))
}

// stepOp is one piece of a step on one device: a forward or a backward of
// a micro-batch.
type stepOp struct {
	backward bool
	micro    int
}

// ops returns each stage's list of operations in order o.
func (o Order) ops(S, M int) [][]stepOp {
	order := make([][]stepOp, S)
	for s := range S {
		switch o {
		case OneFOneB:
			warmup := min(S-1-s, M)
			for mb := range warmup {
				order[s] = append(order[s], stepOp{false, mb})
			}
			for i := range M - warmup {
				order[s] = append(order[s], stepOp{false, warmup + i}, stepOp{true, i})
			}
			for mb := M - warmup; mb < M; mb++ {
				order[s] = append(order[s], stepOp{true, mb})
			}
		default:
			for mb := range M {
				order[s] = append(order[s], stepOp{false, mb})
			}
			for mb := M - 1; mb >= 0; mb-- {
				order[s] = append(order[s], stepOp{true, mb})
			}
		}
	}
	return order
}

// Allocated is the memory a device held around one piece of a pipelined
// step: at its start, after the incoming copy arrived, and at its end. A
// backward's gradient is sent by the next stage as soon as it is
// computed, so for a backward Copied is Start (the gradient is already
// there, counted by the first sample after it arrived).
type Allocated struct{ Start, Copied, End int64 }

// ForwardBackward runs one training step over x through the pipeline,
// each device running the forwards and backwards of the micro-batches in
// p.Order (GPipe: every forward, then the backwards in reverse order,
// each flowing from the last stage to the first). loss turns the last
// stage's output on micro-batch m into a scalar; the parameters'
// gradients accumulate over the micro-batches (sum the micro-batch losses
// to get the batch's). It returns the sum of the losses (0 on meta
// devices, which hold no values) and records in p.Last the durations of
// every forward, backward and copy on the device clocks, and each
// device's memory around them (ScheduleStep lays them out).
//
// Each stage's input is a copy of the previous stage's output that is a
// leaf of its own graph, so each stage's backward runs on its own. When a
// stage's backward is done, the gradient of its input is copied onto the
// previous stage's device (on that device's clock) and the input is
// freed. The gradients are those of ReferenceStep on the unsplit model
// run in the same order, bitwise.
func (p *Pipeline) ForwardBackward(x *tensor.Tensor, loss func(out *tensor.Tensor, micro int) *tensor.Tensor) float64 {
	checkRun("ForwardBackward", x, loss != nil)
	S := len(p.Stages)
	pieces := split(x, p.MicroBatches)
	M := len(pieces)
	p.Last = Measured{Order: p.Order, Compute: grid(S, M), Copy: grid(S, M), Backward: grid(S, M), GradCopy: grid(S, M),
		ForwardMem: memGrid(S, M), BackwardMem: memGrid(S, M)}
	ins := tensorGrid(S, M)   // each stage's input
	outs := tensorGrid(S, M)  // each stage's output (the last's: the loss)
	grads := tensorGrid(S, M) // d loss / d output, received from the next stage
	var total float64

	forward := func(s, m int) {
		st := p.Stages[s]
		d := st.Device
		d.Synchronize()
		mem, t0 := Allocated{Start: d.MemoryAllocated()}, d.Now()
		var in *tensor.Tensor
		if s == 0 {
			in = pieces[m].To(d, false) // autograd carries x's gradient back, if it needs one
			pieces[m].Release()
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
	backward := func(s, m int) {
		d := p.Stages[s].Device
		d.Synchronize()
		mem := Allocated{Start: d.MemoryAllocated()}
		mem.Copied = mem.Start // the gradient arrived when the next stage sent it
		t0 := d.Now()
		if s == S-1 {
			if d.Kind() != device.Meta {
				total += outs[s][m].Item()
				d.Synchronize()
				t0 = d.Now() // reading the loss is not the backward's work
			}
			outs[s][m].Backward()
		} else {
			outs[s][m].Backward(tensor.WithGradient(grads[s][m]))
			grads[s][m].Release()
		}
		outs[s][m].Release()
		in := ins[s][m]
		if s > 0 {
			// Send the gradient of the input to the previous stage, on its
			// clock, and free the input here.
			prev := p.Stages[s-1].Device
			prev.Synchronize()
			c0 := prev.Now()
			tensor.NoGrad(func() { grads[s-1][m] = in.Grad().To(prev, false) })
			prev.Synchronize()
			p.Last.GradCopy[s-1][m] = prev.Now() - c0
			in.SetGrad(nil)
		}
		in.Release()
		d.Synchronize()
		mem.End = d.MemoryAllocated()
		p.Last.Backward[s][m], p.Last.BackwardMem[s][m] = d.Now()-t0, mem
	}

	// Run each device's operations in order, each once its input exists:
	// the devices' clocks are independent, so only the order on each
	// device matters, not how the devices interleave here.
	runInOrder(p.Order.ops(S, M), func(s int, o stepOp) {
		if o.backward {
			backward(s, o.micro)
		} else {
			forward(s, o.micro)
		}
	})
	return total
}

// runInOrder runs every stage's list of operations in order, each once
// what it needs is done: a forward of m on stage s needs the forward of m
// on stage s-1, a backward of m on stage s the backward of m on stage s+1
// (on the last stage, its own forward of m). It takes one operation per
// stage in turn, so the stages advance together as they would in time,
// and what one sends another does not pile up ahead of the schedule.
func runInOrder(order [][]stepOp, run func(s int, o stepOp)) {
	S := len(order)
	done := map[stepKey]bool{}
	ready := func(s int, o stepOp) bool {
		switch {
		case !o.backward && s > 0:
			return done[stepKey{false, s - 1, o.micro}]
		case o.backward && s < S-1:
			return done[stepKey{true, s + 1, o.micro}]
		case o.backward:
			return done[stepKey{false, s, o.micro}]
		}
		return true
	}
	next := make([]int, S)
	for progressed := true; progressed; {
		progressed = false
		for s := range S {
			if next[s] == len(order[s]) || !ready(s, order[s][next[s]]) {
				continue
			}
			o := order[s][next[s]]
			run(s, o)
			done[stepKey{o.backward, s, o.micro}] = true
			next[s]++
			progressed = true
		}
	}
}

type stepKey struct {
	backward     bool
	stage, micro int
}

// ReferenceStep runs model (the unsplit model, on one device) as
// ForwardBackward runs a pipeline of microBatches in order: the forwards
// of the same micro-batches, then their backwards in the order the
// pipeline's devices run them (reverse for GPipe, forward for OneFOneB).
// It returns the sum of the losses; the gradients are the pipeline's,
// bitwise.
func ReferenceStep(model nn.Module, x *tensor.Tensor, microBatches int, order Order, loss func(out *tensor.Tensor, micro int) *tensor.Tensor) float64 {
	checkRun("ReferenceStep", x, model != nil && loss != nil)
	pieces := split(x, microBatches)
	losses := make([]*tensor.Tensor, len(pieces))
	for m, h := range pieces {
		out := model.Forward(h)
		h.Release()
		losses[m] = loss(out, m)
		out.Release()
	}
	var total float64
	for _, o := range order.ops(1, len(pieces))[0] {
		if o.backward {
			total += losses[o.micro].Item()
			losses[o.micro].Backward()
			losses[o.micro].Release()
		}
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

func tensorGrid(rows, cols int) [][]*tensor.Tensor {
	g := make([][]*tensor.Tensor, rows)
	for i := range g {
		g[i] = make([]*tensor.Tensor, cols)
	}
	return g
}

// ScheduleStep lays out the measured durations of ForwardBackward as the
// pipeline's order runs them: each device runs its forwards and backwards
// one at a time, in order, each as soon as the device is free and its
// input has arrived. A forward of m on stage s waits for stage s-1's
// forward of m; a backward of m on stage s waits for stage s+1's backward
// of m (on the last stage, for its own forward of m). The copy in (the
// activation, or the gradient) runs first, on the receiving device. The
// intervals carry the memory measured around them.
func ScheduleStep(m Measured) Timeline {
	S := len(m.Compute)
	if S == 0 || len(m.Backward) != S {
		return Timeline{}
	}
	return listSchedule(m, m.Order.ops(S, len(m.Compute[0])))
}

// listSchedule runs each device's list of operations in order, each as
// soon as the device is free and its input has arrived.
func listSchedule(m Measured, order [][]stepOp) Timeline {
	S, M := len(m.Compute), len(m.Compute[0])
	end := [2][][]time.Duration{grid(S, M), grid(S, M)}
	free := make([]time.Duration, S)
	tl := Timeline{Busy: make([]time.Duration, S)}
	runInOrder(order, func(s int, o stepOp) {
		var ready time.Duration
		switch {
		case !o.backward && s > 0:
			ready = end[0][s-1][o.micro]
		case o.backward && s < S-1:
			ready = end[1][s+1][o.micro]
		case o.backward:
			ready = end[0][s][o.micro]
		}
		start := max(free[s], ready)
		cp, run, mem, kind := m.Copy[s][o.micro], m.Compute[s][o.micro], m.ForwardMem, 0
		if o.backward {
			cp, run, mem, kind = m.GradCopy[s][o.micro], m.Backward[s][o.micro], m.BackwardMem, 1
		}
		iv := Interval{Stage: s, Micro: o.micro, Backward: o.backward, Start: start, CopyEnd: start + cp, End: start + cp + run}
		if mem != nil {
			iv.Mem = mem[s][o.micro]
		}
		end[kind][s][o.micro], free[s] = iv.End, iv.End
		tl.Intervals = append(tl.Intervals, iv)
		tl.Busy[s] += iv.End - iv.Start
		tl.Total = max(tl.Total, iv.End)
	})
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
