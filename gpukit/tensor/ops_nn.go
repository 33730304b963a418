package tensor

import (
	"math"
	"slices"

	"github.com/gpumem/course/gpukit/ops"
)

// Neural-network ops: Softmax, LogSoftmax, Dropout and the losses. Each is
// one fused op with one node (as in PyTorch), its backward beside it.

// softmaxDim checks a float tensor and a dim for Softmax-like ops.
func softmaxDim(op string, t *Tensor, dim int) int {
	t.live(op)
	if !t.dtype.IsFloat() {
		panicf("%s: expected a floating-point tensor, got %s (convert with ToDtype)", op, t.dtype)
	}
	return normDim(dim, len(t.shape), op)
}

// Softmax returns exp(t) / Σ exp(t) along dim, computed stably (the
// maximum of each line is subtracted first). It saves its result.
func (t *Tensor) Softmax(dim int) *Tensor {
	if y, ok := autocast1(castFloat32, t, func(x *Tensor) *Tensor { return x.Softmax(dim) }); ok {
		return y
	}
	d := softmaxDim("Softmax", t, dim)
	out := empty(t.outMem(), t.shape, t.dtype)
	softmaxKernel(out, t, d, false)
	out.charge("Softmax", 5*int64(t.Numel()), t)
	return record(out, "SoftmaxBackward0", []*Tensor{t}, []*Tensor{out}, func(g *Tensor, saved []*Tensor, _ []bool) []*Tensor {
		// dx = y · (g - Σ g·y)
		y := saved[0]
		gy := g.Mul(y)
		s := gy.SumDims([]int{d}, true)
		gy.Release()
		c := g.Sub(s)
		s.Release()
		r := c.Mul(y)
		c.Release()
		return []*Tensor{r}
	})
}

// LogSoftmax returns t - log Σ exp(t) along dim, computed stably. It saves
// its result.
func (t *Tensor) LogSoftmax(dim int) *Tensor {
	if y, ok := autocast1(castFloat32, t, func(x *Tensor) *Tensor { return x.LogSoftmax(dim) }); ok {
		return y
	}
	d := softmaxDim("LogSoftmax", t, dim)
	out := empty(t.outMem(), t.shape, t.dtype)
	softmaxKernel(out, t, d, true)
	out.charge("LogSoftmax", 5*int64(t.Numel()), t)
	return record(out, "LogSoftmaxBackward0", []*Tensor{t}, []*Tensor{out}, func(g *Tensor, saved []*Tensor, _ []bool) []*Tensor {
		return []*Tensor{logSoftmaxGrad(g, saved[0], d)}
	})
}

// logSoftmaxGrad is g - exp(y) · Σ g along dim, for y = LogSoftmax(x).
func logSoftmaxGrad(g, y *Tensor, d int) *Tensor {
	s := g.SumDims([]int{d}, true)
	p := y.Exp()
	ps := p.Mul(s)
	p.Release()
	s.Release()
	r := g.Sub(ps)
	ps.Release()
	return r
}

// Dropout zeroes each element with probability p and scales the others by
// 1/(1-p) when train is true (draws come from gen, or the default
// generator when gen is nil). It saves the Bool keep-mask (one byte per
// element, in the memory statistics until backward). When train is false
// it returns t unchanged: a new reference to the same storage that
// allocates nothing (model.eval()).
func (t *Tensor) Dropout(p float64, train bool, gen *Generator) *Tensor {
	t.live("Dropout")
	if p < 0 || p > 1 || math.IsNaN(p) {
		panicf("Dropout: probability has to be between 0 and 1, but got %v", p)
	}
	if !train {
		return t.sameTensor()
	}
	if !t.dtype.IsFloat() {
		panicf("Dropout: expected a floating-point tensor, got %s", t.dtype)
	}
	if gen == nil {
		gen = defaultGen
	}
	scale := 0.0
	if p < 1 {
		scale = 1 / (1 - p)
	}
	mask := empty(t.outMem(), t.shape, Bool)
	defer mask.Release() // the graph keeps its own reference when it saves it
	bernoulliKernel(mask, p, gen)
	mask.charge("bernoulli", int64(t.Numel()))
	out := empty(t.outMem(), t.shape, t.dtype)
	maskScaleKernel(out, t, mask, scale)
	out.charge("Dropout", int64(t.Numel()), t, mask)
	return record(out, "NativeDropoutBackward0", []*Tensor{t}, []*Tensor{mask}, func(g *Tensor, saved []*Tensor, _ []bool) []*Tensor {
		r := empty(g.outMem(), g.shape, g.dtype)
		maskScaleKernel(r, g, saved[0], scale)
		r.charge("DropoutBackward", int64(g.Numel()), g, saved[0])
		return []*Tensor{r}
	})
}

// MSELoss returns the mean of (pred - target)² over all elements, a 0-d
// tensor (torch.nn.functional.mse_loss with reduction="mean"). pred and
// target must have the same shape (Expand one explicitly to broadcast).
// It saves both.
func MSELoss(pred, target *Tensor) *Tensor {
	if y, ok := autocast2(castFloat32, pred, target, MSELoss); ok {
		return y
	}
	pred.live("MSELoss")
	target.live("MSELoss")
	checkPair("MSELoss", pred, target)
	if !slices.Equal(pred.shape, target.shape) {
		panicf("MSELoss: pred has shape %s but target has shape %s; they must match (Expand or Reshape one of them)", fmtShape(pred.shape), fmtShape(target.shape))
	}
	if !pred.dtype.IsFloat() {
		panicf("MSELoss: expected floating-point tensors, got %s", pred.dtype)
	}
	diff := empty(pred.outMem(), pred.shape, pred.dtype)
	binaryKernel(ops.Sub, diff, pred, target, 0, false)
	unaryKernel(ops.Square, diff, diff)
	out := empty(pred.outMem(), nil, pred.dtype)
	sumKernel(out.inner(0, onesShape(len(pred.shape)), contiguousStrides(onesShape(len(pred.shape)))), diff, true)
	diff.Release()
	out.charge("MSELoss", 3*int64(pred.Numel()), pred, target)
	n := float64(pred.Numel())
	return record(out, "MseLossBackward0", []*Tensor{pred, target}, []*Tensor{pred, target}, func(g *Tensor, saved []*Tensor, needs []bool) []*Tensor {
		// d/dpred = 2·(pred - target)·g/n; d/dtarget is its negative.
		d := saved[0].Sub(saved[1])
		s := g.Mul(2 / n)
		gp := d.Mul(s)
		d.Release()
		s.Release()
		var gt *Tensor
		if needs[1] {
			gt = gp.Neg()
		}
		if !needs[0] {
			gp.Release()
			gp = nil
		}
		return []*Tensor{gp, gt}
	})
}

// onesShape is [1, 1, ..., 1] of the given rank: the keepdim shape of a
// full reduction.
func onesShape(rank int) []int {
	s := make([]int, rank)
	for i := range s {
		s[i] = 1
	}
	return s
}

// CrossEntropy returns the mean over the batch of -log softmax(logits)[i,
// targets[i]] (torch.nn.functional.cross_entropy with class indices and
// reduction="mean"): logits is [N, C] float, targets is [N] Int64 or Int32
// with values in [0, C). The log-softmax is computed stably, once, and
// saved ([N, C], in the memory statistics until backward) together with
// targets. The gradient is (softmax - onehot(targets))/N.
func CrossEntropy(logits, targets *Tensor) *Tensor {
	if y, ok := autocast2(castFloat32, logits, targets, CrossEntropy); ok {
		return y
	}
	logits.live("CrossEntropy")
	if len(logits.shape) != 2 {
		panicf("CrossEntropy: logits must be [N, C], got shape %s (Reshape to [-1, C])", fmtShape(logits.shape))
	}
	if !logits.dtype.IsFloat() {
		panicf("CrossEntropy: logits must be floating point, got %s", logits.dtype)
	}
	checkIndexTensor("CrossEntropy", logits, targets)
	nb, nc := logits.shape[0], logits.shape[1]
	if len(targets.shape) != 1 || targets.shape[0] != nb {
		panicf("CrossEntropy: targets must be [N] = [%d] for logits of shape %s, got shape %s", nb, fmtShape(logits.shape), fmtShape(targets.shape))
	}
	checkIndexRange("CrossEntropy", targets, nc)
	ls := empty(logits.outMem(), logits.shape, logits.dtype)
	defer ls.Release() // saved by the graph when it needs it
	softmaxKernel(ls, logits, 1, true)
	out := empty(logits.outMem(), nil, logits.dtype)
	if !valueless(out) {
		tc, releaseT := contiguousOrSelf(targets)
		k, s := kern("CrossEntropy", out)
		done("CrossEntropy", k.NLLLoss(s, cdt(out), addr(out), addr(ls), addr(tc), cdt(tc), nb, nc), out, ls, tc)
		releaseT()
	}
	out.charge("CrossEntropy", 6*int64(logits.Numel()), logits, targets)
	// PyTorch's nll_loss_forward returns, besides the loss, total_weight:
	// a 0-dim tensor of the logits' dtype holding the number of targets
	// counted, which NllLossBackward0 saves with self and target
	// (tools/autograd/derivatives.yaml, nll_loss_forward). It is made only
	// when a node will keep it.
	var total *Tensor
	if needsGrad(logits) {
		total = Full(nil, float64(nb), like(logits))
		defer total.Release()
	}
	return record(out, "NllLossBackward0", []*Tensor{logits}, []*Tensor{ls, targets, total}, func(g *Tensor, saved []*Tensor, _ []bool) []*Tensor {
		// (softmax - onehot(targets)) · g / total_weight (N: every target
		// counts, there is no ignore_index)
		d := saved[0].Exp()
		minusOne := Full([]int{nb, 1}, -1, like(d))
		idx := saved[1].View(nb, 1)
		scatterAddKernel(d, 1, idx, minusOne) // d[i, targets[i]] -= 1
		d.charge("ScatterAdd", int64(nb), minusOne, idx)
		idx.Release()
		minusOne.Release()
		s := g.Div(float64(nb))
		r := d.Mul(s)
		d.Release()
		s.Release()
		return []*Tensor{r}
	})
}
