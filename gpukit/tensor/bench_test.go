package tensor_test

import (
	"testing"
	"time"

	"github.com/gpumem/course/gpukit/kernels"
	"github.com/gpumem/course/gpukit/ops"
	"github.com/gpumem/course/gpukit/tensor"
)

// Tensor-level benchmarks: each tensor op runs against the raw kernel (or
// the built-in copy) it reduces to, in the same run, so the ratios show the
// tensor layer's overhead (shape checks, allocation from the caching
// allocator, charging the modelled cost, the strided dispatch). Run with
//
//	go test -run '^$' -bench . -benchtime 10x ./gpukit/tensor/
//
// Methodology as in gpukit/kernels/bench: round-robin, one warm-up call
// each, fastest single call of each side (this machine is shared).

// bestOf runs the functions round-robin b.N times after one warm-up call
// each and returns the fastest call of each.
func bestOf(b *testing.B, fs ...func()) []time.Duration {
	best := make([]time.Duration, len(fs))
	for i, f := range fs {
		f()
		best[i] = time.Duration(1<<63 - 1)
	}
	for range b.N {
		for i, f := range fs {
			start := time.Now()
			f()
			best[i] = min(best[i], time.Since(start))
		}
	}
	return best
}

// f32data copies t's values into a plain slice for the kernel side.
func f32data(t *tensor.Tensor) []float32 {
	out := make([]float32, t.Numel())
	for i, x := range t.Float64s() {
		out[i] = float32(x)
	}
	return out
}

// BenchmarkMatmul1024 compares Tensor.Matmul of two 1024² float32 tensors
// on sim (allocating and releasing the result each time) with
// kernels.Sgemm on plain slices.
func BenchmarkMatmul1024(b *testing.B) {
	const n = 1024
	dev := newDev(b)
	x := tensor.Randn([]int{n, n}, tensor.On(dev))
	y := tensor.Randn([]int{n, n}, tensor.On(dev))
	xs, ys, c := f32data(x), f32data(y), make([]float32, n*n)
	t := bestOf(b,
		func() { x.Matmul(y).Release() },
		func() { kernels.Sgemm(false, false, n, n, n, 1, xs, n, ys, n, 0, c, n) },
	)
	gflops := func(d time.Duration) float64 { return 2 * n * n * n / d.Seconds() / 1e9 }
	b.ReportMetric(gflops(t[0]), "tensor_GFLOP/s")
	b.ReportMetric(gflops(t[1]), "sgemm_GFLOP/s")
	b.ReportMetric(t[0].Seconds()/t[1].Seconds(), "tensor/sgemm")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkAdd64M compares Tensor.Add over 64 Mi float32 elements (a new
// 256 MiB result each time, from the caching allocator) with the built-in
// copy of 64 Mi float32 and with kernels.Binary(Add) on plain slices.
func BenchmarkAdd64M(b *testing.B) {
	const n = 64 << 20
	dev := newDev(b)
	x := tensor.Rand([]int{n}, tensor.On(dev))
	y := tensor.Rand([]int{n}, tensor.On(dev))
	xs, ys, z := make([]float32, n), make([]float32, n), make([]float32, n)
	t := bestOf(b,
		func() { x.Add(y).Release() },
		func() { copy(z, xs) },
		func() { kernels.Binary(ops.Add, z, xs, ys) },
	)
	gbps := func(bytes float64, d time.Duration) float64 { return bytes / d.Seconds() / 1e9 }
	b.ReportMetric(gbps(3*4*n, t[0]), "add_GB/s")
	b.ReportMetric(gbps(2*4*n, t[1]), "copy_GB/s")
	b.ReportMetric(t[0].Seconds()/t[1].Seconds(), "add/copy_time")
	b.ReportMetric(t[0].Seconds()/t[2].Seconds(), "tensor/kernel")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkContiguousT4096 compares Contiguous() of a transposed 4096²
// float32 tensor (a copy into a new tensor) with the built-in copy of the
// same 64 MiB and with kernels.Copy of the transposed view.
func BenchmarkContiguousT4096(b *testing.B) {
	const n = 4096
	dev := newDev(b)
	x := tensor.Rand([]int{n, n}, tensor.On(dev))
	xt := x.T()
	src, z := make([]float32, n*n), make([]float32, n*n)
	view := kernels.Strided[float32]{Data: src, Strides: []int{1, n}}
	t := bestOf(b,
		func() { xt.Contiguous().Release() },
		func() { copy(z, src) },
		func() { kernels.Copy([]int{n, n}, z, view) },
	)
	b.ReportMetric(t[0].Seconds()/t[1].Seconds(), "contiguous/copy_time")
	b.ReportMetric(t[0].Seconds()/t[2].Seconds(), "tensor/kernel")
	b.ReportMetric(float64(t[0].Microseconds()), "contiguous_µs")
	b.ReportMetric(float64(t[1].Microseconds()), "copy_µs")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkSumRows4096 compares Sum(1) of a contiguous 4096² float32
// tensor (the kernels.Reduce fast path) with kernels.Reduce on a plain
// slice, and with the generic strided loop (the same sum of a transposed
// view, which cannot take the fast path).
func BenchmarkSumRows4096(b *testing.B) {
	const n = 4096
	dev := newDev(b)
	x := tensor.Rand([]int{n, n}, tensor.On(dev))
	xt := x.T()
	src, dst := make([]float32, n*n), make([]float32, n)
	t := bestOf(b,
		func() { x.Sum(1).Release() },
		func() { kernels.Reduce(ops.ReduceSum, dst, src, n, n, 1) },
		func() { xt.Sum(0).Release() },
	)
	b.ReportMetric(t[0].Seconds()/t[1].Seconds(), "tensor/kernel")
	b.ReportMetric(t[2].Seconds()/t[0].Seconds(), "generic/fast")
	b.ReportMetric(float64(t[0].Microseconds()), "sum_µs")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkCreateRelease measures the fixed cost of one tensor handle:
// creating a small tensor on sim (a cached block from the allocator, the
// storage, the handle and its collector fallback) and releasing it.
func BenchmarkCreateRelease(b *testing.B) {
	dev := newDev(b)
	shape := []int{4, 4}
	b.ReportAllocs()
	for b.Loop() {
		tensor.Empty(shape, tensor.On(dev)).Release()
	}
}

// BenchmarkViewRelease measures a view of a live tensor: a handle and a
// reference, no allocation from the device.
func BenchmarkViewRelease(b *testing.B) {
	dev := newDev(b)
	x := tensor.Empty([]int{4, 4}, tensor.On(dev))
	b.ReportAllocs()
	for b.Loop() {
		x.T().Release()
	}
}
