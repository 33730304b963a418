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
		dense, vals, cols, offs := randomCSR[int32](rng, sz.rows, sz.k, 0.3)
		b := normals(rng, sz.k*sz.n)
		got := make([]float64, sz.rows*sz.n)
		for i := range got {
			got[i] = 99 // overwritten, not added to
		}
		CSRMatmul(vals, cols, offs, b, sz.n, got)
		for i, want := range denseMatmul(dense, sz.rows, sz.k, b, sz.n) {
			if d := got[i] - want; d > 1e-9 || d < -1e-9 {
				t.Fatalf("%v: c[%d,%d] = %v, want %v", sz, i/sz.n, i%sz.n, got[i], want)
			}
		}
	}
}

// The two backward kernels against their dense definitions.
func TestCSRBackwardKernels(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const rows, k, n = 70, 50, 33
	dense, vals, cols, offs := randomCSR[int64](rng, rows, k, 0.2)
	g := normals(rng, rows*n)
	b := normals(rng, k*n)
	gb := make([]float64, k*n)
	CSRMatmulT(vals, cols, offs, g, n, gb)
	for i, want := range denseMatmul(transpose(dense, rows, k), k, rows, g, n) {
		if d := gb[i] - want; d > 1e-9 || d < -1e-9 {
			t.Fatalf("aᵀ·g [%d,%d] = %v, want %v", i/n, i%n, gb[i], want)
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

// randomCSR draws a rows×k matrix whose entries are nonzero with
// probability p, both dense (row-major) and as CSR arrays.
func randomCSR[I int32 | int64](rng *rand.Rand, rows, k int, p float64) (dense, vals []float64, cols, offs []I) {
	dense = make([]float64, rows*k)
	offs = []I{0}
	for r := range rows {
		for c := range k {
			if rng.Float64() < p {
				v := rng.NormFloat64()
				dense[r*k+c] = v
				vals = append(vals, v)
				cols = append(cols, I(c))
			}
		}
		offs = append(offs, I(len(vals)))
	}
	return dense, vals, cols, offs
}

// normals draws n standard normal values.
func normals(rng *rand.Rand, n int) []float64 {
	s := make([]float64, n)
	for i := range s {
		s[i] = rng.NormFloat64()
	}
	return s
}

// denseMatmul returns the m×n product of a (m×k) and b (k×n), row-major,
// each entry summed in order of the inner index.
func denseMatmul[T float32 | float64](a []T, m, k int, b []T, n int) []T {
	c := make([]T, m*n)
	for r := range m {
		for j := range n {
			var s T
			for p := range k {
				s += a[r*k+p] * b[p*n+j]
			}
			c[r*n+j] = s
		}
	}
	return c
}

// transpose returns the k×m transpose of a (m×k), row-major.
func transpose(a []float64, m, k int) []float64 {
	t := make([]float64, k*m)
	for r := range m {
		for c := range k {
			t[c*m+r] = a[r*k+c]
		}
	}
	return t
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
		for i, want := range denseMatmul(dense, rows, k, b, n) {
			if c[i] != want { // small integers: exact
				t.Fatalf("c[%d,%d] = %v, want %v", i/n, i%n, c[i], want)
			}
		}
	})
}
