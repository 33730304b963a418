//go:build !amd64 || purego

package kernels

// expSubPair has no form where the build has no AVX-512 loop for it
// (rows_amd64.go has it): rows.go runs the rows one at a time.
func expSubPair(d1, s1, d2, s2 *float32, n int, m1, m2 float32, acc1, acc2 *[8]float64) bool {
	return false
}
