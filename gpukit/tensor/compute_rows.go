package tensor

import (
	"github.com/gpumem/course/gpukit/device/cpucompute"
	"github.com/gpumem/course/gpukit/dtypes"
)

// The row-wise nn kernels through Compute: LayerNorm forward and backward
// (BatchNorm is in ops_norm.go). They leave the modelled cost (charge) to
// their callers.

// params reports whether the optional parameters ts all have dtype dt
// (LayerNorm of a 16-bit input may take float32 parameters, which Compute
// does not express).
func params(dt Dtype, ts ...*Tensor) bool {
	for _, t := range ts {
		if t != nil && t.dtype != dt {
			return false
		}
	}
	return true
}

// hostSpan is the bytes of t from its first element (nil for nil t).
func hostSpan(t *Tensor) []byte {
	if t == nil {
		return nil
	}
	return t.st.data[t.offset*t.dtype.Size():]
}

// paramDtype is the dtype of the first non-nil tensor, else dt.
func paramDtype(dt Dtype, ts ...*Tensor) Dtype {
	for _, t := range ts {
		if t != nil {
			return t.dtype
		}
	}
	return dt
}

// layerNormKernel is LayerNorm's forward over m rows of n elements of x
// into the fresh out, mean and rstd. Non-contiguous inputs are copied
// contiguous first (device memory, as PyTorch's x.contiguous()).
func layerNormKernel(out, mean, rstd, x, weight, bias *Tensor, m, n int, eps float64) {
	const op = "LayerNorm"
	if valueless(out) {
		return
	}
	var cp copies
	defer cp.run()
	xc, wc, bc := cp.contiguous(x), cp.contiguous(weight), cp.contiguous(bias)
	if !params(x.dtype, weight, bias) {
		// 16-bit input, float32 parameters: the float64 rows on the host.
		if hostOnly(op, out, xc) {
			cpucompute.LayerNormRows64(cdt(x), dtypes.Dtype(paramDtype(x.dtype, wc, bc)), cdt(mean),
				hostSpan(out), hostSpan(mean), hostSpan(rstd), hostSpan(xc), hostSpan(wc), hostSpan(bc), m, n, eps)
		}
		return
	}
	c, s := kern(op, out)
	done(op, c.LayerNorm(s, cdt(x), addr(out), addr(mean), addr(rstd), addr(xc), optAddr(wc), optAddr(bc), m, n, eps), out, mean, rstd, xc, wc, bc)
}

// layerNormBackwardKernel is LayerNorm's backward; gx, gw and gb may be
// nil (not wanted).
func layerNormBackwardKernel(gx, gw, gb, g, x, weight, mean, rstd *Tensor, m, n int) {
	const op = "LayerNormBackward"
	if valueless(g) {
		return
	}
	var cp copies
	defer cp.run()
	gc, xc, wc := cp.contiguous(g), cp.contiguous(x), cp.contiguous(weight)
	if !params(x.dtype, weight, gw, gb) || !mean.IsContiguous() || !rstd.IsContiguous() {
		if hostOnly(op, gc, xc, mean, rstd) {
			cpucompute.LayerNormBackwardRows64(cdt(x), dtypes.Dtype(paramDtype(x.dtype, wc, gw, gb)), cdt(mean),
				hostSpan(gx), hostSpan(gw), hostSpan(gb), hostSpan(gc), hostSpan(xc), hostSpan(mean), hostSpan(rstd), hostSpan(wc), m, n)
		}
		return
	}
	c, s := kern(op, gc)
	done(op, c.LayerNormBackward(s, cdt(x), optAddr(gx), optAddr(gw), optAddr(gb), addr(gc), addr(xc), addr(mean), addr(rstd), optAddr(wc), m, n), gc, gx, gw, gb, xc, mean, rstd, wc)
}
