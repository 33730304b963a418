//go:build !amd64 || purego

package kernels

func addToFloat64AVX(acc *float64, row *float32, n int) {
	panic("kernels: AVX column sum not available")
}
