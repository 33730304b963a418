package bench

import (
	"testing"
	"time"

	"github.com/gpumem/course/gpukit/kernels"
	"github.com/gpumem/course/gpukit/ops"
)

// Bandwidth is counted as bytes the algorithm must move: every element read
// plus every element written (add: 3·4 B per element; copy and transpose:
// 2·4 B). The hardware moves more for a store that misses cache (it reads the
// line first), which both sides pay, except that Go's copy uses
// non-temporal stores for large moves.
func gbps(bytes float64, d time.Duration) float64 { return bytes / d.Seconds() / 1e9 }

// BenchmarkAdd64M compares kernels.Binary(Add) over 64 Mi float32 elements
// with the built-in copy of one 64 Mi-element slice, in the same run.
func BenchmarkAdd64M(b *testing.B) {
	const n = 64 << 20
	x, y := randF32(n, 1), randF32(n, 2)
	z := make([]float32, n)
	t := timeAll(b, func() { kernels.Binary(ops.Add, z, x, y) }, func() { copy(z, x) })
	add, cp := t[0], t[1]
	addBW, cpBW := gbps(3*4*n, add), gbps(2*4*n, cp)
	b.ReportMetric(addBW, "add_GB/s")
	b.ReportMetric(cpBW, "copy_GB/s")
	b.ReportMetric(addBW/cpBW, "add/copy")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkTranspose4096 compares kernels.Copy of a transposed 4096² float32
// view (strides [1, 4096]) into a contiguous array with copy of the same
// 64 MiB.
func BenchmarkTranspose4096(b *testing.B) {
	const n = 4096
	x := randF32(n*n, 3)
	z := make([]float32, n*n)
	view := kernels.Strided[float32]{Data: x, Strides: []int{1, n}}
	shape := []int{n, n}
	t := timeAll(b, func() { kernels.Copy(shape, z, view) }, func() { copy(z, x) })
	tr, cp := t[0], t[1]
	trBW, cpBW := gbps(2*4*n*n, tr), gbps(2*4*n*n, cp)
	b.ReportMetric(trBW, "transpose_GB/s")
	b.ReportMetric(cpBW, "copy_GB/s")
	b.ReportMetric(trBW/cpBW, "transpose/copy")
	b.ReportMetric(0, "ns/op")
}
