//go:build !purego

package kernels

// The arch-neutral names vmath.go and rows.go call, bound to the AVX2+FMA
// assembly of vmath_amd64.s and rows_amd64.s (declared in vmath_amd64.go).
// Each is the Go loop of the same name in vmath_other.go or rows_other.go,
// bit for bit; the callers reach them only where useVecMath is set (the
// CPU has AVX2 and FMA).

func expVec(dst, src *float32, n int)          { expAVX2(dst, src, n) }
func logVec(dst, src *float32, n int)          { logAVX2(dst, src, n) }
func sigmoidVec(dst, src *float32, n int)      { sigmoidAVX2(dst, src, n) }
func tanhVec(dst, src *float32, n int)         { tanhAVX2(dst, src, n) }
func erfVec(dst, src *float32, n int)          { erfAVX2(dst, src, n) }
func geluVec(dst, src *float32, n int)         { geluAVX2(dst, src, n) }
func geluGradVec(dst, src *float32, n int)     { geluGradAVX2(dst, src, n) }
func geluTanhVec(dst, src *float32, n int)     { geluTanhAVX2(dst, src, n) }
func geluTanhGradVec(dst, src *float32, n int) { geluTanhGradAVX2(dst, src, n) }

func maxVec(s *float32, n int) float32 { return maxAVX2(s, n) }

func expSubVec(dst, src *float32, n int, m float32, acc *[8]float64) {
	expSubAVX2(dst, src, n, m, acc)
}

func scaleVec(dst *float32, n int, c float32)                 { scaleAVX2(dst, n, c) }
func subSubVec(dst, src *float32, n int, m, c float32)        { subSubAVX2(dst, src, n, m, c) }
func sumVec(s *float32, n int, acc *[8]float64)               { sumAVX2(s, n, acc) }
func sqDevVec(s *float32, n int, mu float64, acc *[8]float64) { sqDevAVX2(s, n, mu, acc) }

func normAffineVec(y, x, w, b *float32, n int, hi, lo, rs float32) {
	normAffineAVX2(y, x, w, b, n, hi, lo, rs)
}

func lnBwdSumsVec(grad, x, w *float32, n int, mu, rs float32, sg, sgx *[8]float64, pw, pb *float64) {
	lnBwdSumsAVX2(grad, x, w, n, mu, rs, sg, sgx, pw, pb)
}

func lnBwdDxVec(dx, grad, x, w *float32, n int, mu, rs, a, b float32) {
	lnBwdDxAVX2(dx, grad, x, w, n, mu, rs, a, b)
}
