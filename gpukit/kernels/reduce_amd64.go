//go:build !purego

package kernels

// addToFloat64AVX is implemented in reduce_amd64.s.
//
//go:noescape
func addToFloat64AVX(acc *float64, row *float32, n int)
