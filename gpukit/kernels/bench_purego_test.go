package kernels

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// Benchmarks of the row kernels and the matrix multiply, run with and
// without the purego tag for the table in README.md ("arm64 and
// purego"). Run them with -cpu 1: the kernels split rows and tiles
// across goroutines, and one core measures the kernel, not the machine.
// Each reports its CPU time per call (reportCPU) beside the wall time.

func BenchmarkRows(b *testing.B) {
	const rows, n = 64, 1024
	r := rand.New(rand.NewPCG(3, 4))
	x, g := randRows(r, rows, n, 3), randRows(r, rows, n, 1)
	w, bias := randRows(r, 1, n, 1), randRows(r, 1, n, 1)
	y, dx := make([]float32, rows*n), make([]float32, rows*n)
	mu, rs := make([]float32, rows), make([]float32, rows)
	dw, db := make([]float32, n), make([]float32, n)
	LayerNormRows(y, mu, rs, x, w, bias, rows, n, 1e-5)
	bench := func(name string, f func()) {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(8 * rows * n))
			reportCPU(b, func() {
				for b.Loop() {
					f()
				}
			})
		})
	}
	bench("softmax", func() { SoftmaxRows(y, x, rows, n, false) })
	bench("log_softmax", func() { SoftmaxRows(y, x, rows, n, true) })
	bench("layernorm", func() { LayerNormRows(y, mu, rs, x, w, bias, rows, n, 1e-5) })
	bench("layernorm_backward", func() { LayerNormBackwardRows(dx, dw, db, g, x, mu, rs, w, rows, n) })
}

func BenchmarkSgemm(b *testing.B) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, s := range [][3]int{{256, 256, 256}, {512, 512, 512}, {128, 768, 3072}} {
		m, n, k := s[0], s[1], s[2]
		a, bm, c := randSlice(r, m*k), randSlice(r, k*n), make([]float32, m*n)
		b.Run(fmt.Sprintf("%dx%dx%d", m, n, k), func(b *testing.B) {
			reportCPU(b, func() {
				for b.Loop() {
					Sgemm(false, true, m, n, k, 1, a, k, bm, k, 0, c, n)
				}
			})
			b.ReportMetric(2*float64(m*n*k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}
