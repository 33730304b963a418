package kernels

import (
	"runtime"
	"testing"

	"github.com/gpumem/course/gpukit/ops"
)

// The arithmetic of the memory-bound kernels, on arrays that stay in the
// cache (16 Ki float32s, 64 KiB an array) and on one goroutine: what each
// costs a core when memory is not what it waits for. Against the time
// that 80 % of the machine's bandwidth allows for an op's bytes
// (BenchmarkMemBound*, scripts/bench-torch.sh's B), ns/elem says whether
// an op can reach it on this many cores with its present arithmetic:
// floor = ns/elem · elements / cores.
//
//	go test -run '^$' -bench InCache ./gpukit/kernels/

const inCache = 16 << 10

// benchInCache runs op b.N times on one goroutine, after one untimed
// call (b.Loop starts the timer), and reports ns per element of elems.
func benchInCache(b *testing.B, elems int, op func()) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	op()
	for b.Loop() {
		op()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(elems), "ns/elem")
}

func BenchmarkInCache(b *testing.B) {
	x, y, g, d := randBench(inCache), randBench(inCache), randBench(inCache), randBench(inCache)
	b.Run("add", func(b *testing.B) { benchInCache(b, inCache, func() { Binary(ops.Add, d, x, y) }) })
	b.Run("exp", func(b *testing.B) { benchInCache(b, inCache, func() { Unary(ops.Exp, d, x) }) })
	b.Run("gelu", func(b *testing.B) { benchInCache(b, inCache, func() { Unary(ops.Gelu, d, x) }) })
	b.Run("gelu_backward", func(b *testing.B) { benchInCache(b, inCache, func() { Binary(ops.GeluBackward, d, g, x) }) })
	b.Run("softmax_4096", func(b *testing.B) {
		benchInCache(b, inCache, func() { SoftmaxRows(d, x, inCache/4096, 4096, false) })
	})
	b.Run("log_softmax_1000", func(b *testing.B) {
		benchInCache(b, 16000, func() { SoftmaxRows(d, x, 16, 1000, true) })
	})
	w, bias, dw, db := randBench(1024), randBench(1024), randBench(1024), randBench(1024)
	mean, rstd := make([]float32, 16), make([]float32, 16)
	b.Run("layernorm_1024", func(b *testing.B) {
		benchInCache(b, inCache, func() { LayerNormRows(d, mean, rstd, x, w, bias, 16, 1024, 1e-5) })
	})
	LayerNormRows(d, mean, rstd, x, w, bias, 16, 1024, 1e-5)
	b.Run("layernorm_backward_1024", func(b *testing.B) {
		benchInCache(b, inCache, func() { LayerNormBackwardRows(d, dw, db, g, x, mean, rstd, w, 16, 1024) })
	})
	b.Run("mul_scalar", func(b *testing.B) { benchInCache(b, inCache, func() { BinaryScalar(ops.Mul, d, x, 0.5) }) })
}
