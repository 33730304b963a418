package kernels

import (
	"math/rand/v2"
	"testing"
)

// CSRMatmul against the dense product of the same matrix, over sizes that
// do and do not split among goroutines.
func TestCSRMatmulEqualsDense(t *testing.T) {
	for _, sz := range []struct{ rows, k, n int }{{1, 1, 1}, {5, 7, 3}, {300, 200, 40}} {
		rng := rand.New(rand.NewPCG(1, 2))
		dense := make([]float64, sz.rows*sz.k)
		var vals []float64
		var cols []int32
		offs := []int32{0}
		for r := range sz.rows {
			for c := range sz.k {
				if rng.Float64() < 0.3 {
					v := rng.NormFloat64()
					dense[r*sz.k+c] = v
					vals = append(vals, v)
					cols = append(cols, int32(c))
				}
			}
			offs = append(offs, int32(len(vals)))
		}
		b := make([]float64, sz.k*sz.n)
		for i := range b {
			b[i] = rng.NormFloat64()
		}
		got := make([]float64, sz.rows*sz.n)
		for i := range got {
			got[i] = 99 // overwritten, not added to
		}
		CSRMatmul(vals, cols, offs, b, sz.n, got)
		for r := range sz.rows {
			for j := range sz.n {
				var want float64
				for c := range sz.k {
					want += dense[r*sz.k+c] * b[c*sz.n+j]
				}
				if d := got[r*sz.n+j] - want; d > 1e-9 || d < -1e-9 {
					t.Fatalf("%v: c[%d,%d] = %v, want %v", sz, r, j, got[r*sz.n+j], want)
				}
			}
		}
	}
}
