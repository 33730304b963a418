//go:build !amd64 || purego

package kernels

var useVecMath = false

func expAVX2(dst, src *float32, n int)          { panic("kernels: AVX2 exp not available") }
func logAVX2(dst, src *float32, n int)          { panic("kernels: AVX2 log not available") }
func sigmoidAVX2(dst, src *float32, n int)      { panic("kernels: AVX2 sigmoid not available") }
func tanhAVX2(dst, src *float32, n int)         { panic("kernels: AVX2 tanh not available") }
func erfAVX2(dst, src *float32, n int)          { panic("kernels: AVX2 erf not available") }
func geluAVX2(dst, src *float32, n int)         { panic("kernels: AVX2 gelu not available") }
func geluGradAVX2(dst, src *float32, n int)     { panic("kernels: AVX2 gelu not available") }
func geluTanhAVX2(dst, src *float32, n int)     { panic("kernels: AVX2 gelu not available") }
func geluTanhGradAVX2(dst, src *float32, n int) { panic("kernels: AVX2 gelu not available") }

func maxAVX2(s *float32, n int) float32 { panic("kernels: AVX2 not available") }
func expSubAVX2(dst, src *float32, n int, m float32, acc *[8]float64) {
	panic("kernels: AVX2 not available")
}
func scaleAVX2(dst *float32, n int, c float32)                 { panic("kernels: AVX2 not available") }
func subSubAVX2(dst, src *float32, n int, m, c float32)        { panic("kernels: AVX2 not available") }
func sumAVX2(s *float32, n int, acc *[8]float64)               { panic("kernels: AVX2 not available") }
func sqDevAVX2(s *float32, n int, mu float64, acc *[8]float64) { panic("kernels: AVX2 not available") }
func normAffineAVX2(y, x, w, b *float32, n int, hi, lo, rs float32) {
	panic("kernels: AVX2 not available")
}

func lnBwdSumsAVX2(grad, x, w *float32, n int, mu, rs float32, sg, sgx *[8]float64, pw, pb *float64) {
	panic("kernels: AVX2 not available")
}

func lnBwdDxAVX2(dx, grad, x, w *float32, n int, mu, rs, a, b float32) {
	panic("kernels: AVX2 not available")
}
