package tensor

import (
	"slices"

	"github.com/gpumem/course/gpukit/device/backend"
	"github.com/gpumem/course/gpukit/dtypes"
)

// Normalisation ops: LayerNorm and BatchNorm, each one fused node that
// saves what PyTorch's native_layer_norm and native_batch_norm save
// (derivatives.yaml), its backward beside its forward. Statistics are
// accumulated in float64; the saved statistics have PyTorch's
// accumulation dtype (float32 for float32 and the 16-bit types, float64
// for float64).

// statDtype is the dtype of the statistics of a norm over dt (CUDA's
// acc_type).
func statDtype(dt Dtype) Dtype {
	if dt == Float64 {
		return Float64
	}
	return Float32
}

// contiguousOrSelf returns t when it is contiguous and a contiguous copy
// (recorded nowhere) otherwise; release releases the copy only.
func contiguousOrSelf(t *Tensor) (c *Tensor, release func()) {
	if t == nil || t.IsContiguous() {
		return t, func() {}
	}
	NoGrad(func() { c = t.Contiguous() })
	return c, c.Release
}

// copies collects the releases of contiguous copies, for one deferred run.
type copies []func()

// contiguous is contiguousOrSelf(t), its release kept for run.
func (r *copies) contiguous(t *Tensor) *Tensor {
	c, release := contiguousOrSelf(t)
	*r = append(*r, release)
	return c
}

// run releases the copies, the last made first.
func (r *copies) run() {
	for i := len(*r) - 1; i >= 0; i-- {
		(*r)[i]()
	}
}

// checkNormParam checks an optional weight, bias or running statistic of
// a norm over x: on x's device, of shape, of x's dtype or (for 16-bit x)
// float32, as PyTorch's mixed-precision norms accept.
func checkNormParam(op, what string, p, x *Tensor, shape []int) {
	if p == nil {
		return
	}
	p.live(op)
	if !sameDevice(p, x) {
		panicf("%s: expected all tensors to be on the same device, but found %s (%s) and %s", op, p.DeviceName(), what, x.DeviceName())
	}
	if p.dtype != x.dtype && (p.dtype != Float32 || statDtype(x.dtype) != Float32) {
		panicf("%s: %s has dtype %s, the input %s (convert one with ToDtype)", op, what, p.dtype, x.dtype)
	}
	if !slices.Equal(p.shape, shape) {
		panicf("%s: %s has shape %s, expected %s", op, what, fmtShape(p.shape), fmtShape(shape))
	}
}

// LayerNorm normalises x over its last len(normalizedShape) dimensions
// (which must equal normalizedShape) and applies the optional elementwise
// weight and bias of that shape: torch.nn.functional.layer_norm, with the
// biased variance. It is PyTorch's native_layer_norm: one node,
// NativeLayerNormBackward0, that saves the input, the weight, the bias
// and the per-row mean and 1/σ (rstd), shaped x.shape with the normalised
// dimensions set to 1, in float32 (float64 for float64 input). Weight
// and bias are saved as references (they are parameters: no new memory),
// so the memory the node keeps is the input plus two statistics per row.
// Under autocast it runs in float32, as PyTorch's layer_norm does.
func LayerNorm(x *Tensor, normalizedShape []int, weight, bias *Tensor, eps float64) *Tensor {
	const op = "LayerNorm"
	if y, ok := autocastN(castFloat32, []*Tensor{x, weight, bias}, func(c []*Tensor) *Tensor {
		return LayerNorm(c[0], normalizedShape, c[1], c[2], eps)
	}); ok {
		return y
	}
	x.live(op)
	if !x.dtype.IsFloat() {
		panicf("%s: expected a floating-point input, got %s (convert with ToDtype)", op, x.dtype)
	}
	k := len(normalizedShape)
	axis := len(x.shape) - k
	if k == 0 || axis < 0 || !slices.Equal(x.shape[axis:], normalizedShape) {
		panicf("%s: input of shape %s does not end in the normalized shape %s", op, fmtShape(x.shape), fmtShape(normalizedShape))
	}
	checkNormParam(op, "weight", weight, x, normalizedShape)
	checkNormParam(op, "bias", bias, x, normalizedShape)
	m, n := numel(x.shape[:axis]), numel(normalizedShape)
	statShape := slices.Clone(x.shape)
	for i := axis; i < len(statShape); i++ {
		statShape[i] = 1
	}

	out := empty(x.outMem(), x.shape, x.dtype)
	mean := empty(x.outMem(), statShape, statDtype(x.dtype))
	defer mean.Release() // the node keeps its own references
	rstd := empty(x.outMem(), statShape, statDtype(x.dtype))
	defer rstd.Release()
	if out.Numel() > 0 {
		layerNormKernel(out, mean, rstd, x, weight, bias, m, n, eps)
	}
	out.charge(op, 8*int64(x.Numel()), x, weight, bias, mean, rstd)

	return record(out, "NativeLayerNormBackward0", []*Tensor{x, weight, bias}, []*Tensor{x, weight, bias, mean, rstd},
		func(g *Tensor, saved []*Tensor, needs []bool) []*Tensor {
			gx, gw, gb := layerNormBackward(g, saved[0], saved[1], saved[2], saved[3], saved[4], m, n, needs)
			return []*Tensor{gx, gw, gb}
		})
}

// layerNormBackward is native_layer_norm_backward: with x̂ = (x-μ)·rstd
// and ĝ = g·w per row of n elements,
//
//	dx = rstd · (ĝ - mean(ĝ) - x̂ · mean(ĝ·x̂))
//	dw = Σ_rows g·x̂,  db = Σ_rows g
func layerNormBackward(g, x, weight, bias, mean, rstd *Tensor, m, n int, needs []bool) (gx, gw, gb *Tensor) {
	if needs[0] {
		gx = empty(g.outMem(), x.shape, x.dtype)
	}
	if needs[1] && weight != nil {
		gw = empty(g.outMem(), weight.shape, weight.dtype)
	}
	if needs[2] && bias != nil {
		gb = empty(g.outMem(), bias.shape, bias.dtype)
	}
	if g.Numel() > 0 {
		layerNormBackwardKernel(gx, gw, gb, g, x, weight, mean, rstd, m, n)
	}
	for _, t := range []*Tensor{gx, gw, gb} {
		if t != nil {
			t.charge("NativeLayerNormBackward", 8*int64(x.Numel()), g, x, mean, rstd)
		}
	}
	return gx, gw, gb
}

// BatchNorm normalises x of shape [N, C] or [N, C, L] per channel C:
// torch.nn.functional.batch_norm, PyTorch's native_batch_norm. In
// training it uses the batch's mean and biased variance over N (and L),
// and, when runningMean and runningVar are given, updates them in place
// as running = (1-momentum)·running + momentum·batch, with the unbiased
// variance for runningVar; its node saves the input, the weight and the
// per-channel save_mean and save_invstd (float32, float64 for float64
// input). In eval (training false) it normalises with the running
// statistics, which it then needs, and saves the input, the weight and
// them. Weight and bias are optional ([C]). The node is
// NativeBatchNormBackward0 and saves what PyTorch's does
// (tools/autograd/derivatives.yaml: native_batch_norm_backward(grad,
// input, weight, running_mean, running_var, result1, result2, ...)): in
// training the running statistics too, which its backward does not read.
// Weight and running statistics are saved as references, so the memory
// it keeps is the input plus, in training, two statistics per channel.
// A later update of the running statistics (a second forward before this
// backward, as in gradient accumulation) does not fail this node's
// backward: native_batch_norm's schema does not mark them as written
// (Tensor? running_mean, not Tensor(a!); aten/src/ATen/native/
// native_functions.yaml), so PyTorch's autograd does not version-check
// its own update of them either.
func BatchNorm(x, weight, bias, runningMean, runningVar *Tensor, training bool, momentum, eps float64) *Tensor {
	const op = "BatchNorm"
	x.live(op)
	if !x.dtype.IsFloat() {
		panicf("%s: expected a floating-point input, got %s (convert with ToDtype)", op, x.dtype)
	}
	if len(x.shape) != 2 && len(x.shape) != 3 {
		panicf("%s: expected a 2-d [N, C] or 3-d [N, C, L] input, got shape %s", op, fmtShape(x.shape))
	}
	nb, c := x.shape[0], x.shape[1]
	l := 1
	if len(x.shape) == 3 {
		l = x.shape[2]
	}
	cs := []int{c}
	checkNormParam(op, "weight", weight, x, cs)
	checkNormParam(op, "bias", bias, x, cs)
	checkNormParam(op, "running_mean", runningMean, x, cs)
	checkNormParam(op, "running_var", runningVar, x, cs)
	count := nb * l
	if training && count <= 1 {
		panicf("%s: expected more than 1 value per channel when training, got input of shape %s", op, fmtShape(x.shape))
	}
	if !training && (runningMean == nil || runningVar == nil) {
		panicf("%s: running_mean and running_var must be defined in evaluation mode", op)
	}
	if training {
		for _, r := range []*Tensor{runningMean, runningVar} {
			if r != nil {
				checkInPlace(op, r)
			}
		}
	}

	out := empty(x.outMem(), x.shape, x.dtype)
	var saveMean, saveInvstd *Tensor
	if training {
		saveMean = empty(x.outMem(), cs, statDtype(x.dtype))
		defer saveMean.Release()
		saveInvstd = empty(x.outMem(), cs, statDtype(x.dtype))
		defer saveInvstd.Release()
	}
	if out.Numel() > 0 && !valueless(out) {
		// The per-channel parameters are read contiguous (copied when
		// they are not, as before); the running statistics are updated
		// in place through their strides.
		var cp copies
		defer cp.run()
		xc, wc, bc := cp.contiguous(x), cp.contiguous(weight), cp.contiguous(bias)
		k, s := kern(op, out)
		done(op, k.BatchNorm(s, backend.BatchNormArgs{
			Dtype: cdt(x), Y: addr(out), X: addr(xc), Batch: nb, Channels: c, Length: l,
			Weight: optArg(wc), Bias: optArg(bc), RunningMean: optArg(runningMean), RunningVar: optArg(runningVar),
			SaveMean: optAddr(saveMean), SaveInvstd: optAddr(saveInvstd), StatDtype: dtypes.Dtype(statDtype(x.dtype)),
			Training: training, Momentum: momentum, Eps: eps,
		}), out, xc, wc, bc, runningMean, runningVar, saveMean, saveInvstd)
	}
	out.charge(op, 8*int64(x.Numel()), x, weight, bias, runningMean, runningVar)
	if training {
		for _, r := range []*Tensor{runningMean, runningVar} {
			if r != nil {
				r.bump()
			}
		}
	}

	save := []*Tensor{x, weight, runningMean, runningVar}
	stats := 2 // saved index of the statistics backward uses
	if training {
		save = append(save, saveMean, saveInvstd)
		stats = 4
	}
	biasDtype, hasBias := x.dtype, bias != nil
	if hasBias {
		biasDtype = bias.dtype
	}
	y := record(out, "NativeBatchNormBackward0", []*Tensor{x, weight, bias}, save,
		func(g *Tensor, saved []*Tensor, needs []bool) []*Tensor {
			return batchNormBackward(g, saved[0], saved[1], saved[stats], saved[stats+1], training, eps, needs[:2], needs[2] && hasBias, biasDtype)
		})
	if training && y.gradFn != nil {
		for _, s := range y.gradFn.saved[2:4] {
			if s != nil {
				s.unchecked = true
			}
		}
	}
	return y
}

// batchNormBackward is native_batch_norm_backward. With x̂ = (x-μ)·invstd
// per channel and ĝ = g·w, in training (μ, invstd of the batch)
//
//	dx = invstd · (ĝ - mean(ĝ) - x̂ · mean(ĝ·x̂))   (means over N and L)
//
// and in eval (running statistics, constants) dx = ĝ·invstd; in both
// dw = Σ g·x̂ and db = Σ g. stat1 and stat2 are save_mean and save_invstd
// in training, running_mean and running_var in eval.
func batchNormBackward(g, x, weight, stat1, stat2 *Tensor, training bool, eps float64, needs []bool, needBias bool, biasDtype Dtype) []*Tensor {
	nb, c := x.shape[0], x.shape[1]
	l := 1
	if len(x.shape) == 3 {
		l = x.shape[2]
	}
	var gx, gw, gb *Tensor
	if needs[0] {
		gx = empty(g.outMem(), x.shape, x.dtype)
	}
	if needs[1] && weight != nil {
		gw = empty(g.outMem(), weight.shape, weight.dtype)
	}
	if needBias {
		gb = empty(g.outMem(), []int{c}, biasDtype)
	}
	if g.Numel() > 0 && !valueless(g) {
		var cp copies
		defer cp.run()
		gc, xc, wc := cp.contiguous(g), cp.contiguous(x), cp.contiguous(weight)
		s1, s2 := cp.contiguous(stat1), cp.contiguous(stat2)
		const op = "BatchNormBackward"
		k, s := kern(op, gc)
		done(op, k.BatchNormBackward(s, backend.BatchNormBackwardArgs{
			Dtype: cdt(x), Grad: addr(gc), X: addr(xc), Batch: nb, Channels: c, Length: l,
			GradX: optAddr(gx), GradWeight: optArg(gw), GradBias: optArg(gb),
			Weight: optArg(wc), Stat1: optArg(s1), Stat2: optArg(s2),
			Training: training, Eps: eps,
		}), gc, xc, gx, gw, gb, wc, s1, s2)
	}
	for _, t := range []*Tensor{gx, gw, gb} {
		if t != nil {
			t.charge("NativeBatchNormBackward", 8*int64(x.Numel()), g, x, stat1, stat2)
		}
	}
	return []*Tensor{gx, gw, gb}
}
