//go:build (amd64 || arm64) && !purego

package kernels

// The assembly row helpers of rows.go, declared once for both
// architectures (rows_amd64.s, rows_arm64.s); each equals the Go loop of
// the same name in rows_other.go.

// maxVec is
//
//	m := -Inf; for i := range n { m = max(m, s[i]) }; return m
//
// up to, on amd64, which zero (-0 or +0) or whether a NaN comes back:
// VMAXPS gives its second operand when both are zeros or one is NaN
// (Intel SDM, MAXPS), and the AVX-512 loop compares in another order
// (rows_amd64.s says why softmax does not see it).
//
//go:noescape
func maxVec(s *float32, n int) float32

// expSubVec is
//
//	for i := range n { dst[i] = exp32(src[i] - m); acc[i%8] += float64(dst[i]) }
//
// for m at least every src[i] (softmax's row maximum), so that every
// src[i] - m is at most 0 or NaN: the AVX-512 loop leaves out exp32's
// overflow test (EXPFZNP, vmath_amd64.h).
//
//go:noescape
func expSubVec(dst, src *float32, n int, m float32, acc *[8]float64)

// scaleVec is
//
//	for i := range n { dst[i] *= c }
//
//go:noescape
func scaleVec(dst *float32, n int, c float32)

// subSubVec is
//
//	for i := range n { dst[i] = (src[i] - m) - c }
//
//go:noescape
func subSubVec(dst, src *float32, n int, m, c float32)

// sumVec is
//
//	for i := range n { acc[i%32] += float64(s[i]) }
//
//go:noescape
func sumVec(s *float32, n int, acc *[32]float64)

// sqDevVec is
//
//	for i := range n { d := float64(s[i]) - mu; acc[i%32] += float64(d * d) }
//
//go:noescape
func sqDevVec(s *float32, n int, mu float64, acc *[32]float64)

// normAffineVec is
//
//	for i := range n { y[i] = fma32(((x[i] - hi) - lo) * rs, w[i], b[i]) }
//
//go:noescape
func normAffineVec(y, x, w, b *float32, n int, hi, lo, rs float32)

// lnBwdSumsVec is, with x̂ = (x[i]-mu)·rs and ĝ = grad[i]·w[i],
//
//	for i := range n {
//		sg[i%8] += float64(ĝ); sgx[i%8] += float64(ĝ·x̂)
//		pw[i] += float64(grad[i]·x̂); pb[i] += float64(grad[i])
//	}
//
//go:noescape
func lnBwdSumsVec(grad, x, w *float32, n int, mu, rs float32, sg, sgx *[8]float64, pw, pb *float64)

// lnBwdDxVec is, with x̂ and ĝ as in lnBwdSumsVec,
//
//	for i := range n { dx[i] = rs * ((ĝ - a) - x̂·b) }
//
//go:noescape
func lnBwdDxVec(dx, grad, x, w *float32, n int, mu, rs, a, b float32)
