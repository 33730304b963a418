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
	if out.Numel() == 0 || noBytes(out, a) {
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

// halfStripe is how many half-precision elements are widened to float32
// at a time by the half fast paths.
const halfStripe = 1024

func isHalf(dt Dtype) bool { return dt == Float16 || dt == BFloat16 }

// decodeHalf widens len(dst) elements of src (dt, little-endian) to float32.
func decodeHalf(dt Dtype, dst []float32, src []byte) {
	src = src[:2*len(dst)]
	if dt == Float16 {
		for i := range dst {
			dst[i] = Float16ToFloat32(uint16(src[2*i]) | uint16(src[2*i+1])<<8)
		}
		return
	}
	for i := range dst {
		dst[i] = BFloat16ToFloat32(uint16(src[2*i]) | uint16(src[2*i+1])<<8)
	}
}

// encodeHalf rounds src to dt (to nearest even) into dst.
func encodeHalf(dt Dtype, dst []byte, src []float32) {
	dst = dst[:2*len(src)]
	for i, v := range src {
		var h uint16
		if dt == Float16 {
			h = Float32ToFloat16(v)
		} else {
			h = Float32ToBFloat16(v)
		}
		dst[2*i], dst[2*i+1] = byte(h), byte(h>>8)
	}
}

// halfBytes is the bytes of the n elements of contiguous half t.
func halfBytes(t *Tensor, n int) []byte { return t.st.data[2*t.offset : 2*(t.offset+n)] }

// halfUnary computes out = op(a) for contiguous float16 or bfloat16
// tensors of one dtype through the float32 kernel, a stripe at a time:
// the values the per-element loop gives (each is rounded from the float32
// result), with one kernel call per stripe instead of a dispatch per
// element.
func halfUnary(op kernels.UnaryOp, out, a *Tensor) bool {
	if !isHalf(out.dtype) || a.dtype != out.dtype || !out.IsContiguous() || !a.IsContiguous() {
		return false
	}
	n := out.Numel()
	src, dst := halfBytes(a, n), halfBytes(out, n)
	var buf [halfStripe]float32
	for p := 0; p < n; p += halfStripe {
		b := buf[:min(halfStripe, n-p)]
		decodeHalf(a.dtype, b, src[2*p:])
		kernels.Unary(op, b, b)
		encodeHalf(out.dtype, dst[2*p:], b)
	}
	return true
}

// halfBinary is halfUnary for out = op(a, b) with a and b contiguous
// tensors of out's shape and dtype.
func halfBinary(op kernels.BinaryOp, out, a, b *Tensor) bool {
	if !isHalf(out.dtype) || b == nil || !sameDtype(out.dtype, a, b) || !out.IsContiguous() || !a.IsContiguous() || !b.IsContiguous() {
		return false
	}
	n := out.Numel()
	sa, sb, dst := halfBytes(a, n), halfBytes(b, n), halfBytes(out, n)
	var ba, bb [halfStripe]float32
	for p := 0; p < n; p += halfStripe {
		m := min(halfStripe, n-p)
		x, y := ba[:m], bb[:m]
		decodeHalf(a.dtype, x, sa[2*p:])
		decodeHalf(b.dtype, y, sb[2*p:])
		kernels.Binary(op, x, x, y)
		encodeHalf(out.dtype, dst[2*p:], x)
	}
	return true
}
