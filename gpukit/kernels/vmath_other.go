//go:build !(amd64 || arm64) || purego

package kernels

import "unsafe"

// The vector forms of vmath.go's functions where the build has no
// assembly for them (another architecture, or the purego tag): each is
// the Go loop its assembly equals on amd64 and arm64, under the same
// name, over n elements (n a multiple of 8, as there). Each calls exp32
// and the others directly, not through vecFunc's f32, which saves an
// indirect call per element.

// useVecMath is true: the vector forms here are plain Go, so the callers
// may always hand them the bulk of a slice.
var useVecMath = true

// expVec is
//
//	for i := range n { dst[i] = exp32(src[i]) }
func expVec(dst, src *float32, n int) {
	d, s := unsafe.Slice(dst, n), unsafe.Slice(src, n)
	for i, x := range s {
		d[i] = exp32(x)
	}
}

// logVec is
//
//	for i := range n { dst[i] = log32(src[i]) }
func logVec(dst, src *float32, n int) {
	d, s := unsafe.Slice(dst, n), unsafe.Slice(src, n)
	for i, x := range s {
		d[i] = log32(x)
	}
}

// sigmoidVec is
//
//	for i := range n { dst[i] = sigmoid32(src[i]) }
func sigmoidVec(dst, src *float32, n int) {
	d, s := unsafe.Slice(dst, n), unsafe.Slice(src, n)
	for i, x := range s {
		d[i] = sigmoid32(x)
	}
}

// tanhVec is
//
//	for i := range n { dst[i] = tanh32(src[i]) }
func tanhVec(dst, src *float32, n int) {
	d, s := unsafe.Slice(dst, n), unsafe.Slice(src, n)
	for i, x := range s {
		d[i] = tanh32(x)
	}
}

// erfVec is
//
//	for i := range n { dst[i] = erf32(src[i]) }
func erfVec(dst, src *float32, n int) {
	d, s := unsafe.Slice(dst, n), unsafe.Slice(src, n)
	for i, x := range s {
		d[i] = erf32(x)
	}
}

// geluVec is
//
//	for i := range n { dst[i] = gelu32(src[i]) }
func geluVec(dst, src *float32, n int) {
	d, s := unsafe.Slice(dst, n), unsafe.Slice(src, n)
	for i, x := range s {
		d[i] = gelu32(x)
	}
}

// geluGradVec is
//
//	for i := range n { dst[i] = geluGrad32(src[i]) }
func geluGradVec(dst, src *float32, n int) {
	d, s := unsafe.Slice(dst, n), unsafe.Slice(src, n)
	for i, x := range s {
		d[i] = geluGrad32(x)
	}
}

// geluTanhVec is
//
//	for i := range n { dst[i] = geluTanh32(src[i]) }
func geluTanhVec(dst, src *float32, n int) {
	d, s := unsafe.Slice(dst, n), unsafe.Slice(src, n)
	for i, x := range s {
		d[i] = geluTanh32(x)
	}
}

// geluTanhGradVec is
//
//	for i := range n { dst[i] = geluTanhGrad32(src[i]) }
func geluTanhGradVec(dst, src *float32, n int) {
	d, s := unsafe.Slice(dst, n), unsafe.Slice(src, n)
	for i, x := range s {
		d[i] = geluTanhGrad32(x)
	}
}
