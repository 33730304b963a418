package tensor

import (
	"math"
	"slices"
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

// readRow loads n elements of contiguous t from element off into buf.
func readRow(t *Tensor, off int, buf []float64) {
	switch t.dtype {
	case Float32:
		for i, v := range f32s(t.st.data)[off : off+len(buf)] {
			buf[i] = float64(v)
		}
	case Float64:
		copy(buf, f64s(t.st.data)[off:off+len(buf)])
	default:
		for i := range buf {
			buf[i] = load(t.dtype, t.st.data, off+i)
		}
	}
}

// writeRow stores buf into contiguous t from element off: for tensors an
// op made itself (a caller's tensor goes through writeStrided).
func writeRow(t *Tensor, off int, buf []float64) {
	switch t.dtype {
	case Float32:
		d := f32s(t.st.data)[off : off+len(buf)]
		for i, v := range buf {
			d[i] = float32(v)
		}
	case Float64:
		copy(f64s(t.st.data)[off:off+len(buf)], buf)
	default:
		for i, v := range buf {
			store(t.dtype, t.st.data, off+i, v)
		}
	}
}

// writeStrided stores buf, in row-major order, into t through t's strides:
// the way to write into a tensor the caller gave (running statistics),
// which may be a view of a larger one. writeRow would assume t dense
// from its offset and write into the elements between t's.
func writeStrided(t *Tensor, buf []float64) {
	if t.IsContiguous() {
		writeRow(t, t.offset, buf)
		return
	}
	forEachOffset(t.shape, []int{t.offset}, [][]int{t.strides}, func(k int, offs []int) {
		store(t.dtype, t.st.data, offs[0], buf[k])
	})
}

// values returns the n elements of an optional tensor in row-major
// order (fill when t is nil).
func values(t *Tensor, n int, fill float64) []float64 {
	buf := make([]float64, n)
	if t == nil {
		for i := range buf {
			buf[i] = fill
		}
		return buf
	}
	c, release := contiguousOrSelf(t)
	defer release()
	readRow(c, c.offset, buf)
	return buf
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
	if out.Numel() > 0 && !noBytes(out, x) && !layerNormRows(out, mean, rstd, x, weight, bias, m, n, eps) {
		xc, release := contiguousOrSelf(x)
		defer release()
		w, b := values(weight, n, 1), values(bias, n, 0)
		row := make([]float64, n)
		means, rstds := make([]float64, m), make([]float64, m)
		for r := range m {
			readRow(xc, xc.offset+r*n, row)
			mu, v := meanVar(row)
			rs := 1 / math.Sqrt(v+eps)
			for j, e := range row {
				row[j] = (e-mu)*rs*w[j] + b[j]
			}
			writeRow(out, r*n, row)
			means[r], rstds[r] = mu, rs
		}
		writeRow(mean, 0, means)
		writeRow(rstd, 0, rstds)
	}
	out.charge(op, 8*int64(x.Numel()), x, weight, bias, mean, rstd)

	return record(out, "NativeLayerNormBackward0", []*Tensor{x, weight, bias}, []*Tensor{x, weight, bias, mean, rstd},
		func(g *Tensor, saved []*Tensor, needs []bool) []*Tensor {
			gx, gw, gb := layerNormBackward(g, saved[0], saved[1], saved[2], saved[3], saved[4], m, n, needs)
			return []*Tensor{gx, gw, gb}
		})
}

// meanVar is the mean and biased variance of xs (two passes).
func meanVar(xs []float64) (mean, variance float64) {
	var s float64
	for _, v := range xs {
		s += v
	}
	mean = s / float64(len(xs))
	var q float64
	for _, v := range xs {
		d := v - mean
		q += d * d
	}
	return mean, q / float64(len(xs))
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
	if g.Numel() > 0 && !noBytes(g, x) && !layerNormBackwardRows(gx, gw, gb, g, x, weight, mean, rstd, m, n) {
		gc, releaseG := contiguousOrSelf(g)
		defer releaseG()
		xc, releaseX := contiguousOrSelf(x)
		defer releaseX()
		w := values(weight, n, 1)
		mus, rss := values(mean, m, 0), values(rstd, m, 0) // statistics: any shape, row-major
		gRow, xRow, dx := make([]float64, n), make([]float64, n), make([]float64, n)
		dw, db := make([]float64, n), make([]float64, n)
		for r := range m {
			readRow(gc, gc.offset+r*n, gRow)
			readRow(xc, xc.offset+r*n, xRow)
			var sg, sgx float64
			for j := range xRow {
				xRow[j] = (xRow[j] - mus[r]) * rss[r] // x̂
				gh := gRow[j] * w[j]
				sg += gh
				sgx += gh * xRow[j]
				dw[j] += gRow[j] * xRow[j]
				db[j] += gRow[j]
			}
			if gx != nil {
				sg, sgx = sg/float64(n), sgx/float64(n)
				for j := range dx {
					dx[j] = rss[r] * (gRow[j]*w[j] - sg - xRow[j]*sgx)
				}
				writeRow(gx, r*n, dx)
			}
		}
		if gw != nil {
			writeRow(gw, 0, dw)
		}
		if gb != nil {
			writeRow(gb, 0, db)
		}
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
	if out.Numel() > 0 && !noBytes(out, x) {
		xc, release := contiguousOrSelf(x)
		defer release()
		mu, invstd := make([]float64, c), make([]float64, c)
		if training {
			batchStats(xc, nb, c, l, mu, invstd) // invstd holds the biased variance for now
			if runningMean != nil && runningVar != nil {
				rm, rv := values(runningMean, c, 0), values(runningVar, c, 0)
				unbias := float64(count) / float64(count-1)
				for j := range rm {
					rm[j] = (1-momentum)*rm[j] + momentum*mu[j]
					rv[j] = (1-momentum)*rv[j] + momentum*invstd[j]*unbias
				}
				writeStrided(runningMean, rm)
				writeStrided(runningVar, rv)
			}
		} else {
			mu = values(runningMean, c, 0)
			invstd = values(runningVar, c, 0)
		}
		for j := range invstd {
			invstd[j] = 1 / math.Sqrt(invstd[j]+eps)
		}
		if training {
			writeRow(saveMean, 0, mu)
			writeRow(saveInvstd, 0, invstd)
		}
		w, b := values(weight, c, 1), values(bias, c, 0)
		row := make([]float64, l)
		for i := range nb {
			for j := range c {
				off := (i*c + j) * l
				readRow(xc, xc.offset+off, row)
				for k, v := range row {
					row[k] = (v-mu[j])*invstd[j]*w[j] + b[j]
				}
				writeRow(out, off, row)
			}
		}
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

// batchStats writes the per-channel mean and biased variance of a
// contiguous [nb, c, l] tensor.
func batchStats(x *Tensor, nb, c, l int, mean, variance []float64) {
	row := make([]float64, l)
	count := float64(nb * l)
	for i := range nb {
		for j := range c {
			readRow(x, x.offset+(i*c+j)*l, row)
			for _, v := range row {
				mean[j] += v
			}
		}
	}
	for j := range mean {
		mean[j] /= count
	}
	for i := range nb {
		for j := range c {
			readRow(x, x.offset+(i*c+j)*l, row)
			for _, v := range row {
				d := v - mean[j]
				variance[j] += d * d
			}
		}
	}
	for j := range variance {
		variance[j] /= count
	}
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
	if g.Numel() > 0 && !noBytes(g, x) {
		gc, releaseG := contiguousOrSelf(g)
		defer releaseG()
		xc, releaseX := contiguousOrSelf(x)
		defer releaseX()
		w := values(weight, c, 1)
		mu, invstd := values(stat1, c, 0), values(stat2, c, 0)
		if !training {
			for j := range invstd {
				invstd[j] = 1 / math.Sqrt(invstd[j]+eps)
			}
		}
		gRow, xRow := make([]float64, l), make([]float64, l)
		sg, sgx := make([]float64, c), make([]float64, c) // Σ g, Σ g·x̂ per channel
		for i := range nb {
			for j := range c {
				off := (i*c + j) * l
				readRow(gc, gc.offset+off, gRow)
				readRow(xc, xc.offset+off, xRow)
				for k := range gRow {
					sg[j] += gRow[k]
					sgx[j] += gRow[k] * (xRow[k] - mu[j]) * invstd[j]
				}
			}
		}
		if gx != nil {
			count := float64(nb * l)
			for i := range nb {
				for j := range c {
					off := (i*c + j) * l
					readRow(gc, gc.offset+off, gRow)
					readRow(xc, xc.offset+off, xRow)
					for k := range gRow {
						if training {
							xh := (xRow[k] - mu[j]) * invstd[j]
							gRow[k] = w[j] * invstd[j] * (gRow[k] - sg[j]/count - xh*sgx[j]/count)
						} else {
							gRow[k] = w[j] * invstd[j] * gRow[k]
						}
					}
					writeRow(gx, off, gRow)
				}
			}
		}
		if gw != nil {
			writeRow(gw, 0, sgx)
		}
		if gb != nil {
			writeRow(gb, 0, sg)
		}
	}
	for _, t := range []*Tensor{gx, gw, gb} {
		if t != nil {
			t.charge("NativeBatchNormBackward", 8*int64(x.Numel()), g, x, stat1, stat2)
		}
	}
	return []*Tensor{gx, gw, gb}
}
