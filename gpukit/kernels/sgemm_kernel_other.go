//go:build !amd64 || purego

package kernels

var useAVX2 = false

var useAVX512 = false

func sgemmKernel12x32AVX512(k int, a, b, c *float32, ldc int, alpha float32, accumulate int) {
	panic("kernels: AVX-512 kernel not available")
}

func sgemmKernel6x16AVX2(k int, a, b, c *float32, ldc int, alpha float32, accumulate int) {
	panic("kernels: AVX2 kernel not available")
}

func transpose16x16AVX(dst *float32, ldd int, src *float32, lds int) {
	panic("kernels: AVX transpose not available")
}

func packTranspose4AVX(dst *float32, ldd int, src *float32, lds int, n int) {
	panic("kernels: AVX packing not available")
}

func packRowsAVX512(dst *float32, ldd int, src *float32, lds int, n int, masks *[4]uint16) {
	panic("kernels: AVX-512 packing not available")
}

func addToFloat64AVX(acc *float64, row *float32, n int) {
	panic("kernels: AVX column sum not available")
}

var useAVX = false

func adamAVX(p, grad, m, v *float32, n int, c *[8]float32) {
	panic("kernels: AVX Adam update not available")
}
