package tensor_test

import (
	"math"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/gpumem/course/gpukit/alloc"
	"github.com/gpumem/course/gpukit/device"
	"github.com/gpumem/course/gpukit/device/sim"
	"github.com/gpumem/course/gpukit/kernels"
	"github.com/gpumem/course/gpukit/tensor"
)

// computeBackend is a stand-in for the cuda backend: a sim device whose
// bytes the host cannot see (Bytes is nil, Kind is CUDA), which computes
// through device.Compute with the CPU kernels. Tensors on it take the
// routes of compute_backend.go, so those are tested without a GPU.
type computeBackend struct {
	*sim.Backend
	calls map[string]int
}

var _ device.Compute = (*computeBackend)(nil)

func (b *computeBackend) Kind() device.Kind                 { return device.CUDA }
func (b *computeBackend) Name() string                      { return "fakecuda:0" }
func (b *computeBackend) Bytes(addr uint64, n int64) []byte { return nil }

// at returns the element i (of dtype dt) after addr as a float64 pointer
// accessor pair.
func (b *computeBackend) load(dt device.Dtype, addr uint64, i int) float64 {
	p := b.Backend.Bytes(addr+uint64(i*dt.Size()), int64(dt.Size()))
	if dt == device.Float32 {
		return float64(*(*float32)(unsafe.Pointer(&p[0])))
	}
	return *(*float64)(unsafe.Pointer(&p[0]))
}

func (b *computeBackend) store(dt device.Dtype, addr uint64, i int, v float64) {
	p := b.Backend.Bytes(addr+uint64(i*dt.Size()), int64(dt.Size()))
	if dt == device.Float32 {
		*(*float32)(unsafe.Pointer(&p[0])) = float32(v)
	} else {
		*(*float64)(unsafe.Pointer(&p[0])) = v
	}
}

// each calls fn with the element offsets of the operands at every index.
func each(shape []int, ops []device.Strided, fn func(offs []int)) {
	n := 1
	for _, s := range shape {
		n *= s
	}
	offs := make([]int, len(ops))
	for k := range n {
		r := k
		clear(offs)
		for d := len(shape) - 1; d >= 0; d-- {
			c := r % shape[d]
			r /= shape[d]
			for i, o := range ops {
				offs[i] += c * o.Strides[d]
			}
		}
		fn(offs)
	}
}

func (b *computeBackend) Fill(s alloc.Stream, shape []int, dst device.Strided, v float64) error {
	b.calls["Fill"]++
	each(shape, []device.Strided{dst}, func(o []int) { b.store(dst.Dtype, dst.Addr, o[0], v) })
	return nil
}

func (b *computeBackend) Copy(s alloc.Stream, shape []int, dst, src device.Strided) error {
	b.calls["Copy"]++
	each(shape, []device.Strided{dst, src}, func(o []int) {
		b.store(dst.Dtype, dst.Addr, o[0], b.load(src.Dtype, src.Addr, o[1]))
	})
	return nil
}

func (b *computeBackend) Unary(s alloc.Stream, op kernels.UnaryOp, shape []int, dst, src device.Strided) error {
	b.calls["Unary"]++
	each(shape, []device.Strided{dst, src}, func(o []int) {
		x := b.load(src.Dtype, src.Addr, o[1])
		v := kernels.ApplyUnary(op, x)
		if src.Dtype == device.Float32 {
			v = float64(kernels.ApplyUnary(op, float32(x)))
		}
		b.store(dst.Dtype, dst.Addr, o[0], v)
	})
	return nil
}

func (b *computeBackend) apply(op kernels.BinaryOp, dt device.Dtype, x, y float64) float64 {
	if dt == device.Float32 {
		return float64(kernels.Apply(op, float32(x), float32(y)))
	}
	return kernels.Apply(op, x, y)
}

func (b *computeBackend) Binary(s alloc.Stream, op kernels.BinaryOp, shape []int, dst, x, y device.Strided) error {
	b.calls["Binary"]++
	each(shape, []device.Strided{dst, x, y}, func(o []int) {
		b.store(dst.Dtype, dst.Addr, o[0], b.apply(op, dst.Dtype, b.load(x.Dtype, x.Addr, o[1]), b.load(y.Dtype, y.Addr, o[2])))
	})
	return nil
}

func (b *computeBackend) BinaryScalar(s alloc.Stream, op kernels.BinaryOp, shape []int, dst, x device.Strided, scalar float64, scalarFirst bool) error {
	b.calls["BinaryScalar"]++
	each(shape, []device.Strided{dst, x}, func(o []int) {
		v, w := b.load(x.Dtype, x.Addr, o[1]), scalar
		if scalarFirst {
			v, w = w, v
		}
		b.store(dst.Dtype, dst.Addr, o[0], b.apply(op, dst.Dtype, v, w))
	})
	return nil
}

func f32at(b *computeBackend, addr uint64, n int) []float32 {
	if n == 0 {
		return nil
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(&b.Backend.Bytes(addr, int64(n*4))[0])), n)
}

func f64at(b *computeBackend, addr uint64, n int) []float64 {
	if n == 0 {
		return nil
	}
	return unsafe.Slice((*float64)(unsafe.Pointer(&b.Backend.Bytes(addr, int64(n*8))[0])), n)
}

func (b *computeBackend) Reduce(s alloc.Stream, op kernels.ReduceOp, dt device.Dtype, dst, src uint64, outer, n, inner int) error {
	b.calls["Reduce"]++
	if dt == device.Float32 {
		kernels.Reduce(op, f32at(b, dst, outer*inner), f32at(b, src, outer*n*inner), outer, n, inner)
	} else {
		kernels.Reduce(op, f64at(b, dst, outer*inner), f64at(b, src, outer*n*inner), outer, n, inner)
	}
	return nil
}

func (b *computeBackend) ArgReduce(s alloc.Stream, largest bool, dt device.Dtype, index, value, src uint64, outer, n, inner int) error {
	b.calls["ArgReduce"]++
	idx := make([]int, outer*inner)
	f := kernels.ArgMin[float64]
	if largest {
		f = kernels.ArgMax[float64]
	}
	x := make([]float64, outer*n*inner)
	for i := range x {
		x[i] = b.load(dt, src, i)
	}
	f(idx, x, outer, n, inner)
	ix := unsafe.Slice((*int64)(unsafe.Pointer(&b.Backend.Bytes(index, int64(8*len(idx)))[0])), len(idx))
	for t, p := range idx {
		ix[t] = int64(p)
		o, j := t/inner, t%inner
		b.store(dt, value, t, x[o*n*inner+p*inner+j])
	}
	return nil
}

func (b *computeBackend) Gemm(s alloc.Stream, dt device.Dtype, transA, transB bool, m, n, k int, alpha float64, a uint64, lda int, bm uint64, ldb int, beta float64, c uint64, ldc int) error {
	b.calls["Gemm"]++
	ar, br := m, k
	if transA {
		ar = k
	}
	if transB {
		br = n
	}
	span := func(rows, ld, cols int) int { return (rows-1)*ld + cols }
	ac, bc := k, n
	if transA {
		ac = m
	}
	if transB {
		bc = k
	}
	if dt == device.Float32 {
		kernels.Sgemm(transA, transB, m, n, k, float32(alpha), f32at(b, a, span(ar, lda, ac)), lda, f32at(b, bm, span(br, ldb, bc)), ldb, float32(beta), f32at(b, c, span(m, ldc, n)), ldc)
	} else {
		kernels.Dgemm(transA, transB, m, n, k, alpha, f64at(b, a, span(ar, lda, ac)), lda, f64at(b, bm, span(br, ldb, bc)), ldb, beta, f64at(b, c, span(m, ldc, n)), ldc)
	}
	return nil
}

func newComputeDev(t *testing.T) (*device.Device, *computeBackend) {
	t.Helper()
	p, err := device.LookupProfile("classroom")
	if err != nil {
		t.Fatal(err)
	}
	b := &computeBackend{Backend: sim.New(5, p), calls: map[string]int{}}
	d, err := device.New(b)
	if err != nil {
		t.Fatal(err)
	}
	return d, b
}

func values(t *tensor.Tensor) []float64 {
	if t.IsHost() {
		return t.Float64s()
	}
	h := t.ToHost(false, false)
	defer h.Release()
	return h.Float64s()
}

func TestComputeBackendMatchesSim(t *testing.T) {
	d, fake := newComputeDev(t)
	g := tensor.NewGenerator(7)
	for _, dt := range []tensor.Dtype{tensor.Float32, tensor.Float64} {
		x := tensor.Randn([]int{3, 4, 5}, tensor.OnHost(false), dt, tensor.WithGenerator(g))
		y := tensor.Randn([]int{4, 1}, tensor.OnHost(false), dt, tensor.WithGenerator(g))
		w := tensor.Randn([]int{2, 5, 6}, tensor.OnHost(false), dt, tensor.WithGenerator(g))
		xd, yd, wd := x.To(d, false), y.To(d, false), w.To(d, false)
		cases := []struct {
			name string
			f    func(x, y, w *tensor.Tensor) *tensor.Tensor
		}{
			{"Exp", func(x, y, w *tensor.Tensor) *tensor.Tensor { return x.Exp() }},
			{"Add broadcast", func(x, y, w *tensor.Tensor) *tensor.Tensor { return x.Add(y) }},
			{"Full and Sub", func(x, y, w *tensor.Tensor) *tensor.Tensor {
				return tensor.Full([]int{1}, 2, like(x), x.Dtype()).Sub(x)
			}},
			{"Mul scalar", func(x, y, w *tensor.Tensor) *tensor.Tensor { return x.Mul(3.0) }},
			{"Pow", func(x, y, w *tensor.Tensor) *tensor.Tensor { return x.Pow(2) }},
			{"Contiguous of transpose", func(x, y, w *tensor.Tensor) *tensor.Tensor { return x.Transpose(0, 2).Contiguous() }},
			{"Sum all", func(x, y, w *tensor.Tensor) *tensor.Tensor { return x.Sum() }},
			{"Sum run", func(x, y, w *tensor.Tensor) *tensor.Tensor { return x.Sum(1, 2) }},
			{"Sum split dims", func(x, y, w *tensor.Tensor) *tensor.Tensor { return x.Sum(0, 2) }},
			{"Mean of transpose", func(x, y, w *tensor.Tensor) *tensor.Tensor { return x.Transpose(0, 1).Mean(0) }},
			{"Max", func(x, y, w *tensor.Tensor) *tensor.Tensor { return x.Max(1, false) }},
			{"Min of transpose", func(x, y, w *tensor.Tensor) *tensor.Tensor { return x.Transpose(1, 2).Min(2, true) }},
			{"ArgMax", func(x, y, w *tensor.Tensor) *tensor.Tensor { return x.ArgMax(2, false) }},
			{"Matmul batch broadcast", func(x, y, w *tensor.Tensor) *tensor.Tensor {
				return x.Narrow(0, 0, 1).Matmul(w) // [1,4,5] @ [2,5,6]
			}},
			{"Matmul transposed", func(x, y, w *tensor.Tensor) *tensor.Tensor {
				return w.Transpose(1, 2).Matmul(w) // [2,6,5] @ [2,5,6]
			}},
			{"Matmul strided", func(x, y, w *tensor.Tensor) *tensor.Tensor {
				return x.Select(0, 1).Narrow(1, 1, 3).Matmul(w.Select(1, 0).Narrow(1, 0, 5).Transpose(0, 1).Narrow(0, 0, 3)) // [4,3] @ [3,2]
			}},
			{"ToDtype", func(x, y, w *tensor.Tensor) *tensor.Tensor {
				if x.Dtype() == tensor.Float32 {
					return x.ToDtype(tensor.Float64)
				}
				return x.ToDtype(tensor.Float32)
			}},
		}
		for _, c := range cases {
			want := c.f(x, y, w)
			got := c.f(xd, yd, wd)
			if got.DeviceName() != "fakecuda:0" || !slices.Equal(got.Shape(), want.Shape()) {
				t.Fatalf("%s %s: got %s %v, want %v", dt, c.name, got.DeviceName(), got.Shape(), want.Shape())
			}
			gv, wv := values(got), values(want)
			for i := range wv {
				if math.Abs(gv[i]-wv[i]) > 1e-5*max(1, math.Abs(wv[i])) {
					t.Fatalf("%s %s: element %d = %v, want %v", dt, c.name, i, gv[i], wv[i])
				}
			}
		}
	}
	for _, k := range []string{"Fill", "Copy", "Unary", "Binary", "BinaryScalar", "Reduce", "ArgReduce", "Gemm"} {
		if fake.calls[k] == 0 {
			t.Errorf("no %s call reached the device", k)
		}
	}
}

func TestComputeBackendRefusesWhatItCannot(t *testing.T) {
	d, _ := newComputeDev(t)
	err := tensor.Try(func() { tensor.Zeros([]int{3}, tensor.On(d), tensor.Float16) })
	if err == nil || !strings.Contains(err.Error(), "float16 tensors do not compute on fakecuda:0") {
		t.Errorf("Zeros of float16 on a computing device: %v", err)
	}
	y := tensor.Zeros([]int{3}, tensor.On(d))
	err = tensor.Try(func() { y.Softmax(0) })
	if err == nil || !strings.Contains(err.Error(), "no kernel on fakecuda:0") {
		t.Errorf("Softmax on a computing device: %v", err)
	}
}

func like(t *tensor.Tensor) tensor.Option {
	if t.IsHost() {
		return tensor.OnHost(false)
	}
	return tensor.On(t.Device())
}

// Values made or read on a device whose memory the host cannot reach
// travel through host buffers and copies.
func TestDeviceOnlyTensorsStageValuesThroughTheHost(t *testing.T) {
	d, _ := newComputeDev(t)
	x := tensor.FromSlice([]float32{1, 2, 3, 4, 5, 6}, []int{2, 3}, tensor.On(d))
	if got := x.Float64s(); !slices.Equal(got, []float64{1, 2, 3, 4, 5, 6}) {
		t.Errorf("FromSlice then Float64s on %s = %v", d.Name(), got)
	}
	if got := x.At(1, 2); got != 6 {
		t.Errorf("At(1, 2) = %v, want 6", got)
	}
	if got := x.Sum().Item(); got != 21 {
		t.Errorf("Sum().Item() = %v, want 21", got)
	}
	if got := tensor.Arange(0, 4, 1, tensor.On(d), tensor.Float32).Float64s(); !slices.Equal(got, []float64{0, 1, 2, 3}) {
		t.Errorf("Arange on %s = %v", d.Name(), got)
	}
	onDevice := tensor.Randn([]int{5}, tensor.On(d), tensor.WithGenerator(tensor.NewGenerator(3))).Float64s()
	onHost := tensor.Randn([]int{5}, tensor.OnHost(false), tensor.WithGenerator(tensor.NewGenerator(3))).Float64s()
	if !slices.Equal(onDevice, onHost) {
		t.Errorf("Randn with the same seed: %v on %s, %v on the host", onDevice, d.Name(), onHost)
	}
	err := tensor.Try(func() { x.SetAt(0, 0, 0) })
	if err == nil || !strings.Contains(err.Error(), "build it on the host and use To") {
		t.Errorf("SetAt on %s: %v", d.Name(), err)
	}
}
