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

// The two backward kernels against their dense definitions.
func TestCSRBackwardKernels(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const rows, k, n = 70, 50, 33
	dense := make([]float64, rows*k)
	var vals []float64
	var cols []int64
	offs := []int64{0}
	for r := range rows {
		for c := range k {
			if rng.Float64() < 0.2 {
				v := rng.NormFloat64()
				dense[r*k+c] = v
				vals = append(vals, v)
				cols = append(cols, int64(c))
			}
		}
		offs = append(offs, int64(len(vals)))
	}
	g, b := make([]float64, rows*n), make([]float64, k*n)
	for i := range g {
		g[i] = rng.NormFloat64()
	}
	for i := range b {
		b[i] = rng.NormFloat64()
	}
	gb := make([]float64, k*n)
	CSRMatmulT(vals, cols, offs, g, n, gb)
	for c := range k {
		for j := range n {
			var want float64
			for r := range rows {
				want += dense[r*k+c] * g[r*n+j]
			}
			if d := gb[c*n+j] - want; d > 1e-9 || d < -1e-9 {
				t.Fatalf("aᵀ·g [%d,%d] = %v, want %v", c, j, gb[c*n+j], want)
			}
		}
	}
	gv := make([]float64, len(vals))
	CSRSampledDot(cols, offs, g, b, n, gv)
	for r := range rows {
		for e := offs[r]; e < offs[r+1]; e++ {
			var want float64
			for j := range n {
				want += g[r*n+j] * b[int(cols[e])*n+j]
			}
			if d := gv[e] - want; d > 1e-9 || d < -1e-9 {
				t.Fatalf("entry %d: %v, want %v", e, gv[e], want)
			}
		}
	}
}

// FuzzCSRMatmul: a pattern and values drawn from the input, the sparse
// product against the dense one.
func FuzzCSRMatmul(f *testing.F) {
	f.Add([]byte{3, 4, 2, 1, 0, 7, 0, 9, 200, 5})
	f.Add([]byte{1, 1, 1, 5})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 3 {
			return
		}
		rows, k, n := int(data[0])%9+1, int(data[1])%9+1, int(data[2])%9+1
		data = data[3:]
		dense := make([]float32, rows*k)
		var vals []float32
		var cols []int32
		offs := []int32{0}
		for r := range rows {
			for c := range k {
				i := r*k + c
				if i < len(data) && data[i]%3 == 0 {
					v := float32(int(data[i])%7 - 3)
					dense[i] = v
					vals = append(vals, v)
					cols = append(cols, int32(c))
				}
			}
			offs = append(offs, int32(len(vals)))
		}
		b := make([]float32, k*n)
		for i := range b {
			b[i] = float32(i%5) - 2
		}
		c := make([]float32, rows*n)
		CSRMatmul(vals, cols, offs, b, n, c)
		for r := range rows {
			for j := range n {
				var want float32
				for p := range k {
					want += dense[r*k+p] * b[p*n+j]
				}
				if c[r*n+j] != want { // small integers: exact
					t.Fatalf("c[%d,%d] = %v, want %v", r, j, c[r*n+j], want)
				}
			}
		}
	})
}
