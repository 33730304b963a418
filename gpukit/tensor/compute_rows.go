package tensor

import (
	"github.com/gpumem/course/gpukit/device/backend"
	"github.com/gpumem/course/gpukit/device/cpucompute"
	"github.com/gpumem/course/gpukit/kernels"
)

// The row-wise nn kernels through Compute: LayerNorm forward and backward
// (BatchNorm is in ops_norm.go). They leave the modelled cost (charge) to
// their callers.

// span32 and span64 are the n elements of contiguous t from its offset.
func span32(t *Tensor, n int) []float32 { return f32s(t.st.data)[t.offset : t.offset+n] }
func span64(t *Tensor, n int) []float64 { return f64s(t.st.data)[t.offset : t.offset+n] }

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
	xc, release := contiguousOrSelf(x)
	defer release()
	wc, releaseW := contiguousOrSelf(weight)
	defer releaseW()
	bc, releaseB := contiguousOrSelf(bias)
	defer releaseB()
	if !params(x.dtype, weight, bias) {
		// 16-bit input, float32 parameters: the float64 rows on the host.
		if hostOnly(op, out, xc) {
			cpucompute.LayerNormRows64(cdt(x), backend.Dtype(paramDtype(x.dtype, wc, bc)), cdt(mean),
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
	gc, releaseG := contiguousOrSelf(g)
	defer releaseG()
	xc, releaseX := contiguousOrSelf(x)
	defer releaseX()
	wc, releaseW := contiguousOrSelf(weight)
	defer releaseW()
	if !params(x.dtype, weight, gw, gb) || !mean.IsContiguous() || !rstd.IsContiguous() {
		if hostOnly(op, gc, xc, mean, rstd) {
			cpucompute.LayerNormBackwardRows64(cdt(x), backend.Dtype(paramDtype(x.dtype, wc, gw, gb)), cdt(mean),
				hostSpan(gx), hostSpan(gw), hostSpan(gb), hostSpan(gc), hostSpan(xc), hostSpan(mean), hostSpan(rstd), hostSpan(wc), m, n)
		}
		return
	}
	c, s := kern(op, gc)
	done(op, c.LayerNormBackward(s, cdt(x), optAddr(gx), optAddr(gw), optAddr(gb), addr(gc), addr(xc), addr(mean), addr(rstd), optAddr(wc), m, n), gc, gx, gw, gb, xc, mean, rstd, wc)
}

// vecOp is one of the kernels' vector functions without a UnaryOp: its
// slice forms for float32 and float64 and its scalar forms.
type vecOp struct {
	f32 func(dst, src []float32)
	f64 func(dst, src []float64)
	s32 func(float32) float32
	s64 func(float64) float64
}

var (
	geluGradOp     = vecOp{kernels.GeluGrad[float32], kernels.GeluGrad[float64], kernels.ApplyGeluGrad[float32], kernels.ApplyGeluGrad[float64]}
	geluTanhOp     = vecOp{kernels.GeluTanh[float32], kernels.GeluTanh[float64], kernels.ApplyGeluTanh[float32], kernels.ApplyGeluTanh[float64]}
	geluTanhGradOp = vecOp{kernels.GeluTanhGrad[float32], kernels.GeluTanhGrad[float64], kernels.ApplyGeluTanhGrad[float32], kernels.ApplyGeluTanhGrad[float64]}
)

// vecKernel writes out = f(a) elementwise (out and a of one shape):
// contiguous float32 and float64 through the vector kernel, other layouts
// and dtypes (computed in float32 for the 16-bit types) element by
// element.
func vecKernel(f *vecOp, out, a *Tensor) {
	if out.Numel() == 0 || !hostOnly("GELU backward", out, a) {
		return
	}
	n := out.Numel()
	switch {
	case out.IsContiguous() && a.IsContiguous() && sameDtype(Float32, out, a):
		f.f32(span32(out, n), span32(a, n))
	case out.IsContiguous() && a.IsContiguous() && sameDtype(Float64, out, a):
		f.f64(span64(out, n), span64(a, n))
	case computeIn(out.dtype) == Float32:
		mapKernel(out, a, func(x float64) float64 { return float64(f.s32(float32(x))) })
	default:
		mapKernel(out, a, f.s64)
	}
}
