//go:build !purego

package kernels

import "testing"

// BenchmarkLnBwdAVX2 times LayerNorm backward's two row helpers alone,
// over bench-torch's 8192×1024 rows, with the column sums of each block of
// lnBlock rows in arrays allocated once (LayerNormBackwardRows allocates
// them per call): sums is lnBwdSumsVec, the pass that reads g and x
// from memory; dx is lnBwdDxVec, which reads them again, from the cache,
// and writes dx. Bytes: 8 per element for sums, 12 for both.
func BenchmarkLnBwdAVX2(b *testing.B) {
	if !useVecMath {
		b.Skip("no AVX2+FMA")
	}
	const rows, n = 8192, 1024
	g, x, dx, w := randBench(rows*n), randBench(rows*n), randBench(rows*n), randBench(n)
	pw, pb := make([]float64, n), make([]float64, n)
	run := func(withDx bool) {
		for r := range rows {
			if r%lnBlock == 0 {
				clear(pw)
				clear(pb)
			}
			var sg, sgx [8]float64
			gr, xr := g[r*n:(r+1)*n], x[r*n:(r+1)*n]
			lnBwdSumsVec(&gr[0], &xr[0], &w[0], n, 0.01, 1.2, &sg, &sgx, &pw[0], &pb[0])
			if withDx {
				lnBwdDxVec(&dx[r*n], &gr[0], &xr[0], &w[0], n, 0.01, 1.2, float32(sg[0]), float32(sgx[0]))
			}
		}
	}
	b.Run("sums", func(b *testing.B) { benchLoop(b, 8*rows*n, func() { run(false) }) })
	b.Run("sums+dx", func(b *testing.B) { benchLoop(b, 12*rows*n, func() { run(true) }) })
}
