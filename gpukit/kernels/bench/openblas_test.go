//go:build openblas

package bench

import (
	"math"
	"testing"

	"github.com/gpumem/course/gpukit/kernels"
)

// TestSgemmMatchesOpenBLAS cross-checks the benchmarked configuration itself.
func TestSgemmMatchesOpenBLAS(t *testing.T) {
	for _, n := range []int{1, 37, 1024} {
		x, y := randF32(n*n, 5), randF32(n*n, 6)
		got, want := make([]float32, n*n), make([]float32, n*n)
		kernels.Sgemm(false, false, n, n, n, 1, x, n, y, n, 0, got, n)
		openblasSgemm(false, false, n, n, n, x, y, want)
		for i := range got {
			if math.Abs(float64(got[i]-want[i])) > 1e-5*float64(n) {
				t.Fatalf("n=%d [%d]: %v, OpenBLAS %v", n, i, got[i], want[i])
			}
		}
	}
	t.Logf("OpenBLAS: %s", openblasInfo())
}
