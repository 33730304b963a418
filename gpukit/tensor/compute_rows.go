package tensor

import "github.com/gpumem/course/gpukit/kernels"

// Fast paths of the row-wise nn kernels: contiguous float32 and float64
// rows go to the fused, parallel row kernels of gpukit/kernels (which
// give the same bits for any number of cores). Each returns false when
// the layout or dtypes need the general loops. They allocate no device
// memory and leave the modelled cost (charge) to their callers.

// span32 and span64 are the n elements of contiguous t from its offset.
func span32(t *Tensor, n int) []float32 { return f32s(t.st.data)[t.offset : t.offset+n] }
func span64(t *Tensor, n int) []float64 { return f64s(t.st.data)[t.offset : t.offset+n] }

// softmaxRows runs softmax or log-softmax along the last dimension of
// contiguous a into contiguous out.
func softmaxRows(out, a *Tensor, dim int, log bool) bool {
	if len(a.shape) == 0 || out.dtype != a.dtype || !a.IsContiguous() || !out.IsContiguous() {
		return false
	}
	for _, s := range a.shape[dim+1:] {
		if s != 1 {
			return false
		}
	}
	n := a.shape[dim]
	total := a.Numel()
	switch a.dtype {
	case Float32:
		kernels.SoftmaxRows(span32(out, total), span32(a, total), total/n, n, log)
	case Float64:
		kernels.SoftmaxRows(span64(out, total), span64(a, total), total/n, n, log)
	default:
		return false
	}
	return true
}

// sameFloat reports whether every non-nil tensor has dtype dt, float32 or
// float64.
func sameFloat(dt Dtype, ts ...*Tensor) bool {
	if dt != Float32 && dt != Float64 {
		return false
	}
	for _, t := range ts {
		if t != nil && t.dtype != dt {
			return false
		}
	}
	return true
}

// layerNormRows is LayerNorm's forward over m rows of n elements.
func layerNormRows(out, mean, rstd, x, weight, bias *Tensor, m, n int, eps float64) bool {
	if !sameFloat(x.dtype, out, mean, rstd, weight, bias) {
		return false
	}
	xc, release := contiguousOrSelf(x)
	defer release()
	wc, releaseW := contiguousOrSelf(weight)
	defer releaseW()
	bc, releaseB := contiguousOrSelf(bias)
	defer releaseB()
	if x.dtype == Float32 {
		var w, b []float32
		if wc != nil {
			w = span32(wc, n)
		}
		if bc != nil {
			b = span32(bc, n)
		}
		kernels.LayerNormRows(span32(out, m*n), span32(mean, m), span32(rstd, m), span32(xc, m*n), w, b, m, n, eps)
		return true
	}
	var w, b []float64
	if wc != nil {
		w = span64(wc, n)
	}
	if bc != nil {
		b = span64(bc, n)
	}
	kernels.LayerNormRows(span64(out, m*n), span64(mean, m), span64(rstd, m), span64(xc, m*n), w, b, m, n, eps)
	return true
}

// layerNormBackwardRows is LayerNorm's backward; gx, gw and gb may be nil.
func layerNormBackwardRows(gx, gw, gb, g, x, weight, mean, rstd *Tensor, m, n int) bool {
	if !sameFloat(x.dtype, gx, gw, gb, g, weight, mean, rstd) || !mean.IsContiguous() || !rstd.IsContiguous() {
		return false
	}
	gc, releaseG := contiguousOrSelf(g)
	defer releaseG()
	xc, releaseX := contiguousOrSelf(x)
	defer releaseX()
	wc, releaseW := contiguousOrSelf(weight)
	defer releaseW()
	if x.dtype == Float32 {
		var dx, dw, db, w []float32
		if gx != nil {
			dx = span32(gx, m*n)
		}
		if gw != nil {
			dw = span32(gw, n)
		}
		if gb != nil {
			db = span32(gb, n)
		}
		if wc != nil {
			w = span32(wc, n)
		}
		kernels.LayerNormBackwardRows(dx, dw, db, span32(gc, m*n), span32(xc, m*n), span32(mean, m), span32(rstd, m), w, m, n)
		return true
	}
	var dx, dw, db, w []float64
	if gx != nil {
		dx = span64(gx, m*n)
	}
	if gw != nil {
		dw = span64(gw, n)
	}
	if gb != nil {
		db = span64(gb, n)
	}
	if wc != nil {
		w = span64(wc, n)
	}
	kernels.LayerNormBackwardRows(dx, dw, db, span64(gc, m*n), span64(xc, m*n), span64(mean, m), span64(rstd, m), w, m, n)
	return true
}

// geluGradKernel writes d = Φ(x) + x·φ(x) (GELU's derivative) for x = a.
func geluGradKernel(d, a *Tensor) {
	if d.Numel() == 0 || noBytes(d, a) {
		return
	}
	n := d.Numel()
	switch {
	case d.IsContiguous() && a.IsContiguous() && sameDtype(Float32, d, a):
		kernels.GeluGrad(span32(d, n), span32(a, n))
	case d.IsContiguous() && a.IsContiguous() && sameDtype(Float64, d, a):
		kernels.GeluGrad(span64(d, n), span64(a, n))
	default:
		mapKernel(d, a, func(x float64) float64 {
			if computeIn(d.dtype) == Float32 {
				return float64(kernels.ApplyGeluGrad(float32(x)))
			}
			return kernels.ApplyGeluGrad(x)
		})
	}
}
