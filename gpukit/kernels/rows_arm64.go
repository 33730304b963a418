//go:build !purego

package kernels

// Row helpers of rows.go in NEON (rows_arm64.s), eight values a
// iteration. Each is the Go loop under the same name in rows_other.go,
// bit for bit: float64 lane sums keep element i in acc[i%8], and no
// product is fused into a sum that rows.go rounds apart. n is a
// multiple of 8, at least 8.
