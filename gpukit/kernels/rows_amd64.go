//go:build !purego

package kernels

// Row helpers of rows.go in AVX2+FMA (rows_amd64.s), eight values a
// step; the callers reach them only where useVecMath is set (the CPU has
// AVX2 and FMA). Each is the Go loop under the same name in rows_other.go,
// bit for bit: float64 lane sums keep element i in acc[i%8], and no
// product is fused into a sum that rows.go rounds apart. n is a
// multiple of 8, at least 8. expSubVec, scaleVec and subSubVec first run
// sixteen values a step where useAVX512Math is set (vmath_amd64.go).
