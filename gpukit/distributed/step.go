package distributed

import (
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gpumem/course/gpukit/tensor"
)

// Step runs one training step: rank r's forward and backward on
// inputs[r] against targets[r] (its share of the batch, [B, in] and
// [B, out], the same B on every rank), the gradients' reduction for the
// trainer's stage, and the optimizer's update. It returns the mean
// squared error of the whole batch (0 on meta cards) and records each
// rank's memory and time in Last.
//
// Each rank scales its loss's gradient by 1/N, as DistributedDataParallel
// divides the gradients by the world size, so the sum the collectives
// compute is the gradient of the whole batch's mean loss: N ranks take
// the step one card takes on the whole batch.
//
// After the step the gradients are kept (the model states are
// parameters, gradients and optimizer state) and every activation and
// temporary is freed. An error (an out-of-memory on a card, misuse)
// leaves the trainer unusable.
func (t *Trainer) Step(inputs, targets []*tensor.Tensor) (float64, error) {
	if t.broken != nil {
		return 0, errorf("Step: an earlier step failed (%v); build a new trainer", t.broken)
	}
	if err := t.checkBatch(inputs, targets); err != nil {
		return 0, err
	}
	var loss float64
	err := tensor.Try(func() { tensor.NoGrad(func() { loss = t.step(inputs, targets) }) })
	if err != nil {
		t.broken = err
		return 0, fmt.Errorf("distributed: Step: %w", err)
	}
	t.steps++
	return loss, nil
}

func (t *Trainer) checkBatch(inputs, targets []*tensor.Tensor) error {
	N := t.g.Size()
	if len(inputs) != N || len(targets) != N {
		return errorf("Step: %d inputs and %d targets for %d ranks; pass one of each per rank", len(inputs), len(targets), N)
	}
	first, last := t.layers[0], t.layers[len(t.layers)-1]
	for r := range N {
		x, y := inputs[r], targets[r]
		switch {
		case x == nil || y == nil:
			return errorf("Step: rank %d's input or target is nil", r)
		case x.Released() || y.Released():
			return errorf("Step: rank %d's input or target was released", r)
		case x.Device() != t.ranks[r].d || y.Device() != t.ranks[r].d:
			return errorf("Step: rank %d's input is on %s and target on %s; both must be on the rank's card %s", r, x.DeviceName(), y.DeviceName(), t.ranks[r].d.Name())
		case x.Dim() != 2 || x.Size(1) != first.in:
			return errorf("Step: rank %d's input has shape %v; want [batch, %d]", r, x.Shape(), first.in)
		case !slices.Equal(y.Shape(), []int{x.Size(0), last.out}):
			return errorf("Step: rank %d's target has shape %v; want [%d, %d]", r, y.Shape(), x.Size(0), last.out)
		case x.Size(0) != inputs[0].Size(0):
			return errorf("Step: rank %d has a batch of %d, rank 0 of %d; data parallelism averages equal shares", r, x.Size(0), inputs[0].Size(0))
		case !x.Dtype().IsFloat() || !y.Dtype().IsFloat():
			return errorf("Step: rank %d's input and target must be floating-point", r)
		}
	}
	return nil
}

// weights returns views of a flat parameter (or gradient) as the weight
// [out, in] and bias [out] (nil without bias).
func weights(flat *tensor.Tensor, s layerSpec) (w, b *tensor.Tensor) {
	n := flat.Narrow(0, 0, s.out*s.in)
	w = n.View(s.out, s.in)
	n.Release()
	if s.bias {
		b = flat.Narrow(0, s.out*s.in, s.out)
	}
	return w, b
}

// gather all-gathers layer i's parameter shards into a full flat
// parameter on every rank (ZeRO-3), allocated through each card's
// allocator. The default streams do not wait for it yet: the caller
// waits before the layer computes.
func (t *Trainer) gather(i int, lim *limiter) gathered {
	s := t.layers[i]
	full := make([]*tensor.Tensor, len(t.ranks))
	shards := make([]*tensor.Tensor, len(t.ranks))
	for r, rk := range t.ranks {
		full[r] = tensor.Empty([]int{s.padded}, t.cfg.Dtype, tensor.On(rk.d))
		shards[r] = rk.units[i].param
	}
	w := must(t.g.AllGather(full, shards))
	lim.add(w)
	return gathered{full, w}
}

type gathered struct {
	full []*tensor.Tensor
	w    *Work
}

// pass hands out ZeRO-3's gathered layers in the order one pass (forward
// or backward) computes them, gathering each on demand or one layer
// ahead (Config.Prefetch), and counts how many are held at once.
type pass struct {
	t       *Trainer
	lim     *limiter
	order   []int
	i       int       // the next position in order to hand out
	ahead   *gathered // the gather issued for order[i], if any
	held    int
	maxHeld *int
}

// fetch returns the gathered parameters of the pass's next layer, the
// default streams made to wait for them. With PrefetchNext it first
// issues the gather of the layer after, which then runs while this one
// computes.
func (p *pass) fetch() []*tensor.Tensor {
	l := p.order[p.i]
	var g gathered
	if p.ahead != nil {
		g, p.ahead = *p.ahead, nil
	} else {
		g = p.t.gather(l, p.lim)
		p.held++
	}
	p.i++
	if p.t.cfg.Prefetch == PrefetchNext && p.i < len(p.order) {
		next := p.t.gather(p.order[p.i], p.lim)
		p.ahead = &next
		p.held++
	}
	*p.maxHeld = max(*p.maxHeld, p.held)
	g.w.Wait()
	return g.full
}

// done frees a layer's gathered parameters once the layer has computed
// (FSDP's reshard).
func (p *pass) done(full []*tensor.Tensor) {
	release(full...)
	p.held--
}

// limiter is FSDP's rate limiter (limit_all_gathers=True): the host lets
// at most two layers' collectives run ahead of it and waits for the
// oldest before it issues a third. Without it the host, which only
// queues work, would not wait once in a step, and the blocks a
// communication stream used (recorded on it) could not be handed out
// again before the step's end: ZeRO-3's gathered copies and ZeRO-2's
// gradients would pile up in reserved memory, layer after layer.
type limiter struct{ q []*Work }

func (l *limiter) add(w *Work) {
	l.q = append(l.q, w)
	if len(l.q) > 2 {
		l.q[0].Sync()
		l.q = l.q[1:]
	}
}

func (t *Trainer) step(inputs, targets []*tensor.Tensor) float64 {
	N, L := t.g.Size(), len(t.layers)
	stage := t.cfg.Stage
	t.g.ResetStats()
	t0 := make([]time.Duration, N)
	for r, rk := range t.ranks {
		rk.d.Synchronize()
		rk.d.ResetPeakStats()
		t0[r] = rk.d.Now()
	}

	// acts[r][l] is the input of layer l on rank r, the one tensor each
	// layer saves for backward (a ReLU's output doubles as its mask).
	acts := make([][]*tensor.Tensor, N)
	t.eachRank(func(r int, _ *rank) {
		acts[r] = make([]*tensor.Tensor, L+1)
		acts[r][0] = inputs[r].ToDtype(t.cfg.Dtype)
	})

	// Forward.
	var lim limiter
	var gatheredMax int
	fwd := pass{t: t, lim: &lim, maxHeld: &gatheredMax}
	for l := range L {
		fwd.order = append(fwd.order, l)
	}
	for l := range L {
		s := t.layers[l]
		var full []*tensor.Tensor
		if stage == ZeRO3 {
			full = fwd.fetch()
		}
		t.eachRank(func(r int, rk *rank) {
			flat := rk.units[l].param
			if full != nil {
				flat = full[r]
			}
			w, b := weights(flat, s)
			wt := w.T()
			y := acts[r][l].Matmul(wt)
			release(wt, w)
			if b != nil {
				yb := y.Add(b)
				release(y, b)
				y = yb
			}
			if l < L-1 {
				y.ReluInPlace()
			}
			acts[r][l+1] = y
		})
		if full != nil {
			fwd.done(full) // FSDP frees the gathered parameters after the forward
		}
	}

	// Loss: the mean squared error of each rank's share; its gradient is
	// scaled by 1/N so that the reduced gradient is the whole batch's.
	losses := make([]float64, N)
	dh := make([]*tensor.Tensor, N)
	t.eachRank(func(r int, _ *rank) {
		out := acts[r][L]
		y32 := out.ToDtype(tensor.Float32)
		tg := targets[r].ToDtype(tensor.Float32)
		diff := y32.Sub(tg)
		release(y32, tg, out)
		acts[r][L] = nil
		if !diff.IsMeta() {
			sq := diff.Mul(diff)
			m := sq.Mean()
			losses[r] = m.Item()
			release(sq, m)
		}
		g := diff.Mul(2 / float64(diff.Numel()*N))
		dh[r] = g.ToDtype(t.cfg.Dtype)
		release(diff, g)
	})
	var total float64
	for _, l := range losses {
		total += l / float64(N)
	}

	// Backward, last layer first.
	var ipg []*tensor.Tensor // DeepSpeed's reduce bucket, for backward only
	if t.cfg.DeepSpeed {
		ipg = make([]*tensor.Tensor, N)
		for r, rk := range t.ranks {
			ipg[r] = tensor.Empty([]int{t.cfg.ReduceBucketSize}, t.cfg.Dtype, tensor.On(rk.d))
		}
	}
	var works []*Work
	nextBucket := 0
	bwd := pass{t: t, lim: &lim, maxHeld: &gatheredMax}
	for l := L - 1; l >= 0; l-- {
		bwd.order = append(bwd.order, l)
	}
	for l := L - 1; l >= 0; l-- {
		s := t.layers[l]
		var full []*tensor.Tensor
		if stage == ZeRO3 {
			full = bwd.fetch() // gathered again: the forward's copy is gone
		}
		grads := make([]*tensor.Tensor, N) // this layer's full gradient per rank
		t.eachRank(func(r int, rk *rank) {
			u := rk.units[l]
			dy := dh[r]
			if l < L-1 {
				mask := acts[r][l+1].Gt(0)
				zero := tensor.Scalar(0, t.cfg.Dtype, tensor.On(rk.d))
				dy = tensor.Where(mask, dh[r], zero)
				release(mask, zero, dh[r], acts[r][l+1])
				acts[r][l+1] = nil
			}
			flat := u.param
			if full != nil {
				flat = full[r]
			}
			w, b := weights(flat, s)
			dyT := dy.T()
			dW := dyT.Matmul(acts[r][l])
			release(dyT)
			var db *tensor.Tensor
			if b != nil {
				db = dy.Sum(0)
			}
			dh[r] = nil
			if l > 0 {
				dh[r] = dy.Matmul(w)
			} else {
				release(acts[r][0])
				acts[r][0] = nil
			}
			release(dy, w, b)

			// Where the full gradient goes: the persistent gradient at
			// stages 0 and 1, a temporary that lives until its
			// reduce-scatter at stages 2 and 3.
			var g *tensor.Tensor
			switch stage {
			case DDP, ZeRO1:
				if u.grad == nil {
					u.grad = tensor.Zeros([]int{s.padded}, t.cfg.Dtype, tensor.On(rk.d))
				}
				g = u.grad
			default:
				g = tensor.Zeros([]int{s.padded}, t.cfg.Dtype, tensor.On(rk.d))
			}
			gw, gb := weights(g, s)
			gw.CopyFrom(dW)
			release(gw, dW)
			if gb != nil {
				gb.CopyFrom(db)
				release(gb, db)
			}
			grads[r] = g
		})
		if full != nil {
			bwd.done(full)
		}

		switch stage {
		case DDP:
			b := t.buckets[nextBucket]
			if !t.cfg.GradientAsBucketView {
				j := slices.Index(b.layers, l)
				for r, rk := range t.ranks {
					dst := rk.buckets[nextBucket].Narrow(0, b.offset[j], s.numel)
					dst.CopyFrom(grads[r])
					dst.Release()
				}
			}
			if b.layers[len(b.layers)-1] == l { // the bucket is ready
				bufs := make([]*tensor.Tensor, N)
				for r, rk := range t.ranks {
					bufs[r] = rk.buckets[nextBucket]
				}
				works = append(works, must(t.g.AllReduce(bufs)))
				nextBucket++
			}
		case ZeRO1:
			// Each rank needs only its shard of the reduced gradient: a
			// reduce-scatter into that shard of the full gradient.
			outs := make([]*tensor.Tensor, N)
			for r := range N {
				outs[r] = grads[r].Narrow(0, r*s.shard, s.shard)
			}
			works = append(works, must(t.g.ReduceScatter(outs, grads)))
			release(outs...)
		default:
			outs := make([]*tensor.Tensor, N)
			for r, rk := range t.ranks {
				u := rk.units[l]
				if u.grad == nil {
					u.grad = t.slot(rk, &rk.gradFlat, t.cfg.Dtype, l)
				}
				outs[r] = u.grad
			}
			w := must(t.g.ReduceScatter(outs, grads))
			works = append(works, w)
			lim.add(w)
			release(grads...) // recorded on the comm stream: reused only after the reduce-scatter
		}
	}
	for _, w := range works {
		w.Wait()
	}
	release(ipg...)
	if stage == DDP && !t.cfg.GradientAsBucketView {
		for bi, b := range t.buckets {
			for j, l := range b.layers {
				for _, rk := range t.ranks {
					src := rk.buckets[bi].Narrow(0, b.offset[j], t.layers[l].numel)
					rk.units[l].grad.CopyFrom(src)
					src.Release()
				}
			}
		}
	}

	// Optimizer: each rank updates what it owns.
	t.eachRank(func(r int, rk *rank) {
		if t.cfg.DeepSpeed {
			t.deepSpeedUpdate(rk, r)
			return
		}
		for l := range L {
			t.update(rk, r, l, nil)
		}
	})
	if stage == ZeRO1 || stage == ZeRO2 {
		for l := range L {
			s := t.layers[l]
			full := make([]*tensor.Tensor, N)
			own := make([]*tensor.Tensor, N)
			for r, rk := range t.ranks {
				full[r] = rk.units[l].param
				own[r] = full[r].Narrow(0, r*s.shard, s.shard)
			}
			must(t.g.AllGather(full, own)).Wait()
			release(own...)
		}
	}

	t.last = make([]StepStats, N)
	for r, rk := range t.ranks {
		d := rk.d
		d.Synchronize()
		st := StepStats{
			Allocated:    d.MemoryAllocated(),
			Peak:         d.MaxMemoryAllocated(),
			PeakReserved: d.MaxMemoryReserved(),
			Time:         d.Now() - t0[r],
			Comm:         t.g.stats[r].Time,
			CommBytes:    t.g.stats[r].Bytes,
			Gathered:     gatheredMax,
		}
		if stage == DDP && !t.cfg.GradientAsBucketView {
			for _, b := range rk.buckets {
				st.Buckets += b.Storage().Block().Size()
			}
		}
		t.last[r] = st
	}
	return total
}

// eachRank runs fn for every rank, on up to GOMAXPROCS goroutines (each
// in no-grad mode, which is per goroutine): between collectives the
// ranks' cards are independent, as their processes are. A panic (an
// out-of-memory error, misuse) is raised again on the caller's goroutine
// once every rank has stopped, the lowest rank's when several panic.
func (t *Trainer) eachRank(fn func(r int, rk *rank)) {
	n := len(t.ranks)
	workers := min(runtime.GOMAXPROCS(0), n)
	if workers <= 1 {
		for r, rk := range t.ranks {
			fn(r, rk)
		}
		return
	}
	panics := make([]any, n)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			tensor.NoGrad(func() {
				for {
					r := int(next.Add(1) - 1)
					if r >= n {
						return
					}
					func() {
						defer func() { panics[r] = recover() }()
						fn(r, t.ranks[r])
					}()
				}
			})
		})
	}
	wg.Wait()
	for _, p := range panics {
		if p != nil {
			panic(p)
		}
	}
}

func must(w *Work, err error) *Work {
	if err != nil {
		panic(err)
	}
	return w
}

// deepSpeedUpdate is the optimizer step of DeepSpeed's stages 1 and 2
// (DeepSpeedZeroOptimizer.step in stage_1_and_2.py): the rank's
// partition of the gradients is flattened into one 16-bit copy and cast
// to float32, the 16-bit gradients are freed, and Adam updates each
// layer's shard from the float32 copy, which is freed last.
func (t *Trainer) deepSpeedUpdate(rk *rank, r int) {
	L := len(t.layers)
	own := make([]*tensor.Tensor, L)
	var total int
	for l := range L {
		u, s := rk.units[l], t.layers[l]
		total += s.shard
		if t.cfg.Stage == ZeRO1 {
			// DeepSpeed frees the rest of a stage-1 gradient once it is
			// reduced; only the rank's partition stays until the step.
			v := u.grad.Narrow(0, r*s.shard, s.shard)
			own[l] = tensor.Empty([]int{s.shard}, t.cfg.Dtype, tensor.On(rk.d))
			own[l].CopyFrom(v)
			release(v, u.grad)
			u.grad = nil
		} else {
			own[l] = u.grad
		}
	}
	flat := tensor.Empty([]int{total}, t.cfg.Dtype, tensor.On(rk.d))
	off := 0
	for l := range L {
		dst := flat.Narrow(0, off, t.layers[l].shard)
		dst.CopyFrom(own[l])
		release(dst)
		off += t.layers[l].shard
	}
	g32 := flat // full precision: the flat copy is already float32
	if t.mixed() {
		g32 = flat.ToDtype(tensor.Float32)
		release(flat)
	}
	// free_grad_in_param_list: the 16-bit gradients go before the update.
	release(own...)
	for _, u := range rk.units {
		u.grad = nil
	}
	if rk.gradFlat != nil {
		rk.flats = slices.DeleteFunc(rk.flats, func(f *tensor.Tensor) bool { return f == rk.gradFlat })
		release(rk.gradFlat)
		rk.gradFlat = nil
	}
	off = 0
	for l := range L {
		g := g32.Narrow(0, off, t.layers[l].shard)
		t.update(rk, r, l, g)
		release(g)
		off += t.layers[l].shard
	}
	release(g32)
}

// update applies the optimizer to what rank r owns of one layer: the
// whole layer at stage 0, its shard at stages 1-3. g32, when not nil, is
// the float32 gradient of that shard (DeepSpeed's step); otherwise the
// unit's gradient is used.
func (t *Trainer) update(rk *rank, r, l int, g32 *tensor.Tensor) {
	u, s := rk.units[l], t.layers[l]
	g, p := u.grad, u.param
	var views []*tensor.Tensor
	if g32 != nil {
		g = g32
	} else if t.cfg.Stage == ZeRO1 {
		g = g.Narrow(0, r*s.shard, s.shard)
		views = append(views, g)
	}
	if t.cfg.Stage == ZeRO1 || t.cfg.Stage == ZeRO2 {
		p = p.Narrow(0, r*s.shard, s.shard)
		views = append(views, p)
	}
	defer release(views...)
	target := p // what the optimizer updates: the float32 master, or the parameter itself
	if t.mixed() {
		target = u.master
		if g.Dtype() != tensor.Float32 {
			g = g.ToDtype(tensor.Float32)
			defer g.Release()
		}
	}
	switch t.cfg.Optimizer {
	case Adam:
		if u.s1 == nil {
			u.s1 = t.slot(rk, &rk.s1Flat, tensor.Float32, l)
			u.s2 = t.slot(rk, &rk.s2Flat, tensor.Float32, l)
		}
		c := t.cfg.Adam
		sc := tensor.AdamScalars{LR: c.LR, Beta1: c.Betas[0], Beta2: c.Betas[1], Eps: c.Eps,
			WeightDecay: c.WeightDecay, Step: t.steps + 1}
		if !tensor.FusedAdam(target, g, u.s1, u.s2, sc) {
			panic(errorf("Step: Adam's fused kernel refused a %s parameter on %s", target.Dtype(), target.DeviceName()))
		}
	case SGD:
		c := t.cfg.SGD
		if c.WeightDecay != 0 {
			wd := target.Mul(c.WeightDecay)
			wd.AddInPlace(g)
			defer wd.Release()
			g = wd
		}
		if c.Momentum != 0 {
			if u.s1 == nil {
				u.s1 = t.slot(rk, &rk.s1Flat, tensor.Float32, l)
				u.s1.CopyFrom(g) // PyTorch's first step: buf = clone(grad)
			} else {
				u.s1.MulInPlace(c.Momentum).AddInPlace(g)
			}
			g = u.s1
		}
		upd := g.Mul(c.LR)
		target.SubInPlace(upd)
		upd.Release()
	}
	if t.mixed() {
		p.CopyFrom(target)
	}
}
