//go:build !amd64 || purego

package kernels

// pairRows is false where the build has no AVX-512 loop for two rows
// (rows_amd64.go has it): rows.go runs the rows one at a time.
func pairRows() bool { return false }

// expSubPairVec is expSubVec on each row in turn (rows.go does not call
// it here: pairRows is false).
func expSubPairVec(d1, s1, d2, s2 *float32, n int, m1, m2 float32, acc1, acc2 *[8]float64) {
	expSubVec(d1, s1, n, m1, acc1)
	expSubVec(d2, s2, n, m2, acc2)
}
