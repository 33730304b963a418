//go:build !(amd64 || arm64) || purego

package kernels

import (
	"math"
	"unsafe"
)

// The row helpers of rows.go where the build has no assembly for them:
// each is the Go loop its assembly (rows_amd64.s, rows_arm64.s) equals,
// under the same name, over n elements, n a multiple of 8. Lane sums keep
// element i in acc[i%8] (acc[i%32] for LayerNorm's statistics), as
// rows.go's loops do.

// maxVec is
//
//	m := -Inf; for i := range n { m = max(m, s[i]) }; return m
func maxVec(s *float32, n int) float32 {
	m := float32(math.Inf(-1))
	for _, v := range unsafe.Slice(s, n) {
		m = max(m, v)
	}
	return m
}

// expSubVec is
//
//	for i := range n { dst[i] = exp32(src[i] - m); acc[i%8] += float64(dst[i]) }
func expSubVec(dst, src *float32, n int, m float32, acc *[8]float64) {
	d, s := unsafe.Slice(dst, n), unsafe.Slice(src, n)
	for i := 0; i < n; i += 8 {
		d8, s8 := d[i:i+8:i+8], s[i:i+8:i+8]
		for j, v := range s8 {
			slow := false
			e := exp32Try(v-m, &slow)
			if slow {
				e = exp32(v - m)
			}
			d8[j] = e
			acc[j] += float64(e)
		}
	}
}

// scaleVec is
//
//	for i := range n { dst[i] *= c }
func scaleVec(dst *float32, n int, c float32) {
	d := unsafe.Slice(dst, n)
	for i := range d {
		d[i] *= c
	}
}

// subSubVec is
//
//	for i := range n { dst[i] = (src[i] - m) - c }
func subSubVec(dst, src *float32, n int, m, c float32) {
	d, s := unsafe.Slice(dst, n), unsafe.Slice(src, n)
	for i, v := range s {
		d[i] = (v - m) - c
	}
}

// sumVec is
//
//	for i := range n { acc[i%32] += float64(s[i]) }
func sumVec(s *float32, n int, acc *[32]float64) {
	a := *acc
	for i, v := range unsafe.Slice(s, n) {
		a[i%32] += float64(v)
	}
	*acc = a
}

// sqDevVec is
//
//	for i := range n { d := float64(s[i]) - mu; acc[i%32] += d * d }
func sqDevVec(s *float32, n int, mu float64, acc *[32]float64) {
	a := *acc
	// float64(d*d): the square is rounded before it is added, as the
	// assembly's separate multiply and add do.
	for i, v := range unsafe.Slice(s, n) {
		d := float64(v) - mu
		a[i%32] += float64(d * d)
	}
	*acc = a
}

// normAffineVec is
//
//	for i := range n { y[i] = fma32(((x[i] - hi) - lo) * rs, w[i], b[i]) }
func normAffineVec(y, x, w, b *float32, n int, hi, lo, rs float32) {
	ys, xs, ws, bs := unsafe.Slice(y, n), unsafe.Slice(x, n), unsafe.Slice(w, n), unsafe.Slice(b, n)
	for i, v := range xs {
		ys[i] = fma32(((v-hi)-lo)*rs, ws[i], bs[i])
	}
}

// lnBwdSumsVec is, with x̂ = (x-mu)·rs and ĝ = grad·w,
//
//	for i := range n {
//		sg[i%8] += float64(ĝ); sgx[i%8] += float64(ĝ·x̂)
//		pw[i] += float64(grad[i]·x̂); pb[i] += float64(grad[i])
//	}
func lnBwdSumsVec(grad, x, w *float32, n int, mu, rs float32, sg, sgx *[8]float64, pw, pb *float64) {
	gs, xs, ws := unsafe.Slice(grad, n), unsafe.Slice(x, n), unsafe.Slice(w, n)
	pws, pbs := unsafe.Slice(pw, n), unsafe.Slice(pb, n)
	for i := 0; i < n; i += 8 {
		g8, x8, w8 := gs[i:i+8:i+8], xs[i:i+8:i+8], ws[i:i+8:i+8]
		pw8, pb8 := pws[i:i+8:i+8], pbs[i:i+8:i+8]
		for j, g := range g8 {
			xh := (x8[j] - mu) * rs
			gw := g * w8[j]
			sg[j] += float64(gw)
			sgx[j] += float64(gw * xh)
			pw8[j] += float64(g * xh)
			pb8[j] += float64(g)
		}
	}
}

// lnBwdDxVec is, with x̂ and ĝ as in lnBwdSumsVec,
//
//	for i := range n { dx[i] = rs * ((ĝ - a) - x̂·b) }
func lnBwdDxVec(dx, grad, x, w *float32, n int, mu, rs, a, b float32) {
	ds, gs, xs, ws := unsafe.Slice(dx, n), unsafe.Slice(grad, n), unsafe.Slice(x, n), unsafe.Slice(w, n)
	for i, v := range xs {
		xh := float32((v - mu) * rs)
		gw := float32(gs[i] * ws[i])
		ds[i] = rs * ((gw - a) - float32(xh*b))
	}
}
