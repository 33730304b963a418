package kernels

import (
	"math"
	"testing"
)

func TestDgemmAndBatched(t *testing.T) {
	// Dgemm: 2×3 · 3×2 with beta.
	c := []float64{1, 1, 1, 1}
	Dgemm(false, true, 2, 2, 3, 1, []float64{1, 2, 3, 4, 5, 6}, 3, []float64{7, 9, 11, 8, 10, 12}, 3, 2, c, 2)
	for i, w := range []float64{60, 66, 141, 156} {
		if c[i] != w {
			t.Fatalf("Dgemm c = %v", c)
		}
	}
	// SgemmBatched with a broadcast B (strideB = 0), small and large sizes.
	for _, s := range [][4]int{{3, 5, 7, 4}, {2, 130, 120, 110}} {
		batch, m, n, k := s[0], s[1], s[2], s[3]
		a := randSlice(newRand(1), batch*m*k)
		b := randSlice(newRand(2), k*n)
		got := make([]float32, batch*m*n)
		SgemmBatched(false, false, batch, m, n, k, 1, a, k, m*k, b, n, 0, 0, got, n, m*n)
		for i := 0; i < batch; i++ {
			want := make([]float32, m*n)
			refGemm(false, false, m, n, k, 1, a[i*m*k:], k, b, n, 0, want, n)
			for j := range want {
				if math.Abs(float64(want[j]-got[i*m*n+j])) > 1e-4 {
					t.Fatalf("batch %d [%d]: %v want %v", i, j, got[i*m*n+j], want[j])
				}
			}
		}
	}
}
