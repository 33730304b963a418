package kernels

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/gpumem/course/gpukit/ops"
)

// The memory-bound kernels of scripts/bench-torch.sh at its shapes, with
// SetBytes set to what each must move at least (every input read once,
// every output written once, float32): its MB/s against the machine's
// bandwidth (go run ./gpukit/cmd/benchtorch -stream) says how far each is
// from the memory's limit. Outputs are allocated and touched once before
// the timer starts, as the caching allocator's blocks are. Each also
// reports the process's CPU time per op ("cpu-ns/op", where the OS has
// getrusage): on a machine shared with other work, a thread that waits
// for memory still counts as running, one that waits for a core does not,
// so with GOMAXPROCS=1 that figure is the kernel's own speed.
//
//	go test -run '^$' -bench MemBound -cpuprofile cpu.out ./gpukit/kernels/

func randBench(n int) []float32 {
	r := rand.New(rand.NewPCG(1, 2))
	s := make([]float32, n)
	for i := range s {
		s[i] = float32(r.NormFloat64())
	}
	return s
}

// benchLoop runs op b.N times (b.Loop) and reports its CPU time (where
// the OS has getrusage: reportCPU).
func benchLoop(b *testing.B, bytes int64, op func()) {
	b.SetBytes(bytes)
	reportCPU(b, func() {
		for b.Loop() {
			op()
		}
	})
}

func BenchmarkMemBoundAdd(b *testing.B) {
	const n = 4096 * 4096
	x, y, d := randBench(n), randBench(n), randBench(n)
	benchLoop(b, 12*n, func() { Binary(ops.Add, d, x, y) })
}

// BenchmarkMemBoundAddStrided is BenchmarkMemBoundAdd through
// BinaryStrided, the path of the tensor package's ops.
func BenchmarkMemBoundAddStrided(b *testing.B) {
	const n = 4096 * 4096
	x, y, d := randBench(n), randBench(n), randBench(n)
	view := func(s []float32) Strided[float32] { return Strided[float32]{Data: s, Strides: []int{4096, 1}} }
	benchLoop(b, 12*n, func() { BinaryStrided(ops.Add, []int{4096, 4096}, view(d), view(x), view(y)) })
}

func BenchmarkMemBoundGelu(b *testing.B) {
	const n = 4096 * 4096
	x, d := randBench(n), randBench(n)
	benchLoop(b, 8*n, func() { Unary(ops.Gelu, d, x) })
}

// BenchmarkMemBoundGeluGrad is GELU's derivative, the elementwise half
// of its backward (vecGeluGrad), at BenchmarkMemBoundGelu's shape.
func BenchmarkMemBoundGeluGrad(b *testing.B) {
	const n = 4096 * 4096
	x, d := randBench(n), randBench(n)
	benchLoop(b, 8*n, func() { Unary(ops.GeluDeriv, d, x) })
}

// BenchmarkMemBoundGeluBackward is GELU's backward, dy·GELU'(x), one
// pass (backwardLoop): what autograd runs for a Gelu.
func BenchmarkMemBoundGeluBackward(b *testing.B) {
	const n = 4096 * 4096
	x, dy, d := randBench(n), randBench(n), randBench(n)
	benchLoop(b, 12*n, func() { Binary(ops.GeluBackward, d, dy, x) })
}

func BenchmarkMemBoundSoftmax(b *testing.B) {
	const rows, n = 4096, 4096
	x, d := randBench(rows*n), randBench(rows*n)
	benchLoop(b, 8*rows*n, func() { SoftmaxRows(d, x, rows, n, false) })
}

func BenchmarkMemBoundLayerNorm(b *testing.B) {
	const rows, n = 8192, 1024
	x, y, g, dx := randBench(rows*n), randBench(rows*n), randBench(rows*n), randBench(rows*n)
	w, bias, dw, db := randBench(n), randBench(n), randBench(n), randBench(n)
	mean, rstd := make([]float32, rows), make([]float32, rows)
	b.Run("forward", func(b *testing.B) {
		benchLoop(b, 8*rows*n, func() { LayerNormRows(y, mean, rstd, x, w, bias, rows, n, 1e-5) })
	})
	b.Run("backward", func(b *testing.B) {
		benchLoop(b, 12*rows*n, func() { LayerNormBackwardRows(dx, dw, db, g, x, mean, rstd, w, rows, n) })
	})
}

// BenchmarkMemBoundLayerNormShapes is BenchmarkMemBoundLayerNorm's 8 M
// values in rows of other lengths: the prefetches of LayerNorm's passes
// (rows_amd64.s) reach a row or two ahead, so their distance in bytes
// grows with the row, and a row of 16,384 is 64 KiB, more than a core's
// L1 cache holds.
func BenchmarkMemBoundLayerNormShapes(b *testing.B) {
	const size = 8192 * 1024
	x, y, g, dx := randBench(size), randBench(size), randBench(size), randBench(size)
	for _, n := range []int{256, 4096, 16384} {
		rows := size / n
		w, bias, dw, db := randBench(n), randBench(n), randBench(n), randBench(n)
		mean, rstd := make([]float32, rows), make([]float32, rows)
		b.Run(fmt.Sprintf("forward/n=%d", n), func(b *testing.B) {
			benchLoop(b, 8*size, func() { LayerNormRows(y, mean, rstd, x, w, bias, rows, n, 1e-5) })
		})
		b.Run(fmt.Sprintf("backward/n=%d", n), func(b *testing.B) {
			benchLoop(b, 12*size, func() { LayerNormBackwardRows(dx, dw, db, g, x, mean, rstd, w, rows, n) })
		})
	}
}

func BenchmarkMemBoundAdam(b *testing.B) {
	const n = 4096 * 4096
	p, g, m, v := randBench(n), randBench(n), randBench(n), randBench(n)
	for i := range v {
		v[i] *= v[i]
	}
	s := ops.AdamScalars{LR: 1e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, Step: 1}
	benchLoop(b, 28*n, func() { AdamUpdate(p, g, m, v, s) })
}
