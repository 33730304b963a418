//go:build !purego

package kernels

// Row helpers of rows.go in AVX2+FMA (rows_amd64.s), eight values a
// step; the callers reach them only where useVecMath is set (the CPU has
// AVX2 and FMA). Each is the Go loop under the same name in rows_other.go,
// bit for bit: float64 lane sums keep element i in acc[i%8] (acc[i%32]
// for LayerNorm's statistics), and no product is fused into a sum that
// rows.go rounds apart. n is a multiple of 8, at least 8. maxVec, expSubVec, scaleVec and subSubVec
// first run sixteen values a step where useAVX512Math is set
// (vmath_amd64.go), and expSubPairVec two rows at once (pairRows).

// expSubPairVec is expSubVec on two rows of n values (n a multiple of 16):
// AVX-512 only (rows_amd64.s).
//
//go:noescape
func expSubPairVec(d1, s1, d2, s2 *float32, n int, m1, m2 float32, acc1, acc2 *[8]float64)

// pairRows reports whether softmax takes two rows at a time: where the
// CPU has expSubPairVec's AVX-512 loop (useAVX512Math) and the vector
// helpers are in use (useVecMath, which tests clear to compute the Go
// reference).
func pairRows() bool { return useVecMath && useAVX512Math }
