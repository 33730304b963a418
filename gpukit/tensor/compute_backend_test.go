package tensor_test

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/gpumem/course/gpukit/alloc"
	"github.com/gpumem/course/gpukit/device"
	"github.com/gpumem/course/gpukit/device/backend"
	"github.com/gpumem/course/gpukit/device/sim"
	"github.com/gpumem/course/gpukit/device/simtest"
	"github.com/gpumem/course/gpukit/dtypes"
	"github.com/gpumem/course/gpukit/ops"
	"github.com/gpumem/course/gpukit/tensor"
)

// computeBackend is a stand-in for the cuda backend: a sim device whose
// bytes the host cannot see (Bytes is nil, Kind is CUDA), which computes
// through its device.Compute, the CPU kernels on the sim device's own
// memory. Tensors on it take the one route of compute.go as on any device
// without host bytes, so that route is tested without a GPU. It counts the
// calls of the methods it wraps and, like a backend that lacks kernels,
// has no 16-bit Fill and (unless softmax) no Softmax.
type computeBackend struct {
	*sim.Backend
	calls   map[string]int
	softmax bool // has a Softmax kernel
}

var _ device.Compute = (*computeBackend)(nil)

func (b *computeBackend) Kind() device.Kind                 { return device.CUDA }
func (b *computeBackend) Name() string                      { return "fakecuda:0" }
func (b *computeBackend) Bytes(addr uint64, n int64) []byte { return nil }

func (b *computeBackend) Fill(s alloc.Stream, shape []int, dst device.Strided, v float64) error {
	b.calls["Fill"]++
	if dst.Dtype == dtypes.Float16 || dst.Dtype == dtypes.BFloat16 {
		return &backend.UnsupportedError{Backend: b.Name(), Op: "Fill", Dtype: dst.Dtype}
	}
	return b.Backend.Fill(s, shape, dst, v)
}

func (b *computeBackend) Copy(s alloc.Stream, shape []int, dst, src device.Strided) error {
	b.calls["Copy"]++
	return b.Backend.Copy(s, shape, dst, src)
}

func (b *computeBackend) Unary(s alloc.Stream, op ops.Unary, shape []int, dst, src device.Strided) error {
	b.calls["Unary"]++
	return b.Backend.Unary(s, op, shape, dst, src)
}

func (b *computeBackend) Binary(s alloc.Stream, op ops.Binary, shape []int, dst, x, y device.Strided) error {
	b.calls["Binary"]++
	return b.Backend.Binary(s, op, shape, dst, x, y)
}

func (b *computeBackend) BinaryScalar(s alloc.Stream, op ops.Binary, shape []int, dst, x device.Strided, scalar float64, scalarFirst bool) error {
	b.calls["BinaryScalar"]++
	return b.Backend.BinaryScalar(s, op, shape, dst, x, scalar, scalarFirst)
}

func (b *computeBackend) Reduce(s alloc.Stream, op ops.Reduce, dt device.Dtype, dst, src uint64, outer, n, inner int) error {
	b.calls["Reduce"]++
	return b.Backend.Reduce(s, op, dt, dst, src, outer, n, inner)
}

// ReduceStrided is missing, as on cuda: sums of other layouts take the
// contiguous copy.
func (b *computeBackend) ReduceStrided(s alloc.Stream, op ops.Reduce, shape []int, dst, src device.Strided) error {
	b.calls["ReduceStrided"]++
	return &backend.UnsupportedError{Backend: b.Name(), Op: "ReduceStrided", Dtype: src.Dtype}
}

func (b *computeBackend) ArgReduce(s alloc.Stream, largest bool, dt device.Dtype, index, value, src uint64, outer, n, inner int) error {
	b.calls["ArgReduce"]++
	return b.Backend.ArgReduce(s, largest, dt, index, value, src, outer, n, inner)
}

// ArgReduceStrided is missing, as on cuda: arg-reductions of other
// layouts read a contiguous copy.
func (b *computeBackend) ArgReduceStrided(s alloc.Stream, largest bool, shape []int, dim int, index, value, src device.Strided) error {
	b.calls["ArgReduceStrided"]++
	return &backend.UnsupportedError{Backend: b.Name(), Op: "ArgReduceStrided", Dtype: src.Dtype}
}

func (b *computeBackend) Gemm(s alloc.Stream, dt device.Dtype, transA, transB bool, m, n, k int, alpha float64, a uint64, lda int, bm uint64, ldb int, beta float64, c uint64, ldc int) error {
	b.calls["Gemm"]++
	return b.Backend.Gemm(s, dt, transA, transB, m, n, k, alpha, a, lda, bm, ldb, beta, c, ldc)
}

// GemmBatched is missing, as on cuda: batches take one Gemm each.
func (b *computeBackend) GemmBatched(alloc.Stream, device.Dtype, bool, bool, int, int, int, float64, []uint64, int, []uint64, int, float64, []uint64, int) error {
	return &backend.UnsupportedError{Backend: b.Name(), Op: "GemmBatched"}
}

func (b *computeBackend) Softmax(s alloc.Stream, dt device.Dtype, dst, src uint64, rows, n int, log bool) error {
	if b.softmax {
		return b.Backend.Softmax(s, dt, dst, src, rows, n, log)
	}
	return &backend.UnsupportedError{Backend: b.Name(), Op: "Softmax", Dtype: dt}
}

// SoftmaxStrided is missing, as on cuda.
func (b *computeBackend) SoftmaxStrided(s alloc.Stream, shape []int, dim int, dst, src device.Strided, log bool) error {
	return &backend.UnsupportedError{Backend: b.Name(), Op: "SoftmaxStrided", Dtype: src.Dtype}
}

func (b *computeBackend) Where(s alloc.Stream, shape []int, dst, cond, x, y device.Strided) error {
	b.calls["Where"]++
	return b.Backend.Where(s, shape, dst, cond, x, y)
}

func (b *computeBackend) InRange(s alloc.Stream, shape []int, dst, src device.Strided, lo, hi float64) error {
	b.calls["InRange"]++
	return b.Backend.InRange(s, shape, dst, src, lo, hi)
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
	for _, k := range []string{"Fill", "Copy", "Unary", "Binary", "BinaryScalar", "Reduce", "ReduceStrided", "ArgReduce", "ArgReduceStrided", "Gemm"} {
		if fake.calls[k] == 0 {
			t.Errorf("no %s call reached the device", k)
		}
	}
}

func TestComputeBackendRefusesWhatItCannot(t *testing.T) {
	d, _ := newComputeDev(t)
	err := tensor.Try(func() { tensor.Zeros([]int{3}, tensor.On(d), tensor.Float16) })
	if err == nil || !strings.Contains(err.Error(), "fakecuda:0 has no Fill kernel for float16 tensors yet; move the tensors to sim") {
		t.Errorf("Zeros of float16 on a computing device: %v", err)
	}
	y := tensor.Zeros([]int{3}, tensor.On(d))
	err = tensor.Try(func() { y.Softmax(0) })
	if err == nil || !strings.Contains(err.Error(), "fakecuda:0 has no Softmax kernel for float32 tensors yet") {
		t.Errorf("Softmax on a computing device: %v", err)
	}
	y2 := tensor.Zeros([]int{2, 3}, tensor.On(d))
	err = tensor.Try(func() { y2.Softmax(0) })
	if err == nil || !strings.Contains(err.Error(), `Softmax: fakecuda:0 has no SoftmaxStrided kernel for float32 tensors yet; move the tensors to sim with To("sim:0")`) {
		t.Errorf("Softmax along dim 0 on a computing device without SoftmaxStrided: %v", err)
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

// Every device computes through its Compute, so the fused row kernels run
// where the backend has them: FusedAdam, LayerNorm, BatchNorm and
// CrossEntropy on a device without host bytes give sim's values (on main
// FusedAdam reported false there and the row kernels refused).
func TestRowKernelsRunOnAComputingDevice(t *testing.T) {
	d, fake := newComputeDev(t)
	fake.softmax = true
	g := tensor.NewGenerator(11)
	host := func(shape ...int) *tensor.Tensor {
		return tensor.Randn(shape, tensor.OnHost(false), tensor.WithGenerator(g))
	}
	x, w, b, y := host(4, 6), host(6), host(6), tensor.FromSlice([]int64{1, 0, 5, 2}, []int{4}, tensor.OnHost(false))
	run := func(on func(*tensor.Tensor) *tensor.Tensor) []float64 {
		var out []float64
		xs, ws, bs := on(x), on(w), on(b)
		out = append(out, values(tensor.LayerNorm(xs, []int{6}, ws, bs, 1e-5))...)
		out = append(out, values(tensor.BatchNorm(xs, ws, bs, nil, nil, true, 0.1, 1e-5))...)
		out = append(out, values(tensor.CrossEntropy(xs, on(y)))...)
		p, gr, m, v := on(x).Clone(), on(x).Mul(0.5), tensor.ZerosLike(xs), tensor.ZerosLike(xs)
		if !tensor.FusedAdam(p, gr, m, v, tensor.AdamScalars{LR: 0.1, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, Step: 1}) {
			t.Fatalf("FusedAdam on %s reported false", p.DeviceName())
		}
		return append(out, values(p)...)
	}
	want := run(func(t *tensor.Tensor) *tensor.Tensor { return t.To(device.Default(), false) })
	got := run(func(t *tensor.Tensor) *tensor.Tensor { return t.To(d, false) })
	if !slices.Equal(got, want) {
		t.Errorf("on %s: %v\nwant (sim) %v", d.Name(), got, want)
	}
	if fake.calls["Copy"] == 0 {
		t.Error("no call reached the fake device")
	}
}

// The strided kernels of the CPU Compute keep the temporaries of each op
// as they were: an arg-reduction or a sum of a transposed tensor and a
// product written into a transposed output allocate only their results.
func TestStridedKernelsAllocateNoTemporaries(t *testing.T) {
	dev := simtest.Card(t)
	on := tensor.On(dev)
	x := tensor.Randn([]int{5, 7}, on, tensor.WithGenerator(tensor.NewGenerator(2)))
	xt := x.T()
	a, b := tensor.Randn([]int{5, 3}, on), tensor.Randn([]int{3, 7}, on)
	outT := tensor.Zeros([]int{7, 5}, on).T() // column-major [5, 7]
	a.Matmul(b).Release()                     // the stream's cuBLAS workspace, once
	cases := []struct {
		name   string
		allocs int64
		f      func()
	}{
		{"ArgMax of a transpose", 2, func() { xt.ArgMax(1, false) }}, // values and indices
		{"Sum of a transpose", 1, func() { xt.Sum(1) }},
		{"MatmulOut into a transpose", 0, func() { tensor.MatmulOut(outT, a, b) }},
	}
	for _, c := range cases {
		before := dev.Stats()["allocation.all.allocated"]
		c.f()
		if n := dev.Stats()["allocation.all.allocated"] - before; n != c.allocs {
			t.Errorf("%s: %d allocations, want %d", c.name, n, c.allocs)
		}
	}
	want := a.Matmul(b).Float64s()
	got := outT.Contiguous().Float64s()
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1e-5 {
			t.Fatalf("MatmulOut into a transpose: element %d = %v, want %v", i, got[i], want[i])
		}
	}
	m := xt.ArgMax(1, false).Float64s()
	for i := range 7 {
		best := 0
		for j := range 5 {
			if x.At(j, i) > x.At(best, i) {
				best = j
			}
		}
		if int(m[i]) != best {
			t.Errorf("ArgMax of a transpose: row %d = %v, want %d", i, m[i], best)
		}
	}
}

// A meta device computes nothing, so its kernels make none of the
// contiguous copies that real values need: LayerNorm, BatchNorm and
// CrossEntropy of strided inputs allocate only their results there.
func TestMetaKernelsMakeNoCopies(t *testing.T) {
	dev := simtest.Card(t, simtest.Profile("h100-80gb"), simtest.Meta())
	on := tensor.On(dev)
	xt := tensor.Zeros([]int{6, 4}, on).T() // [4, 6], strided
	w, b := tensor.Ones([]int{6}, on), tensor.Zeros([]int{6}, on)
	targets := tensor.Zeros([]int{4, 2}, on, tensor.Int64).Select(1, 0) // strided
	cases := []struct {
		name   string
		allocs int64
		f      func()
	}{
		{"LayerNorm", 3, func() { tensor.LayerNorm(xt, []int{6}, w, b, 1e-5) }},            // y, mean, rstd
		{"BatchNorm", 3, func() { tensor.BatchNorm(xt, w, b, nil, nil, true, 0.1, 1e-5) }}, // y, save_mean, save_invstd
		{"CrossEntropy", 2, func() { tensor.CrossEntropy(xt, targets) }},                   // log-softmax, loss
	}
	for _, c := range cases {
		before := dev.Stats()["allocation.all.allocated"]
		tensor.NoGrad(c.f)
		if n := dev.Stats()["allocation.all.allocated"] - before; n != c.allocs {
			t.Errorf("%s on meta: %d allocations, want %d", c.name, n, c.allocs)
		}
	}
}

// A lesson's MLP, with GELU and ReLU, dropout, clamp (in place and not),
// the other activations and a comparison feeding Where, trains on a
// device whose memory the host cannot read through its Compute alone:
// forward values, the loss and every gradient are sim's, bit for bit,
// and the dropout mask comes from the same generator draws.
func TestActivationsDropoutAndMasksRunOnAComputingDevice(t *testing.T) {
	d, fake := newComputeDev(t)
	g := tensor.NewGenerator(13)
	host := func(shape ...int) *tensor.Tensor {
		return tensor.Randn(shape, tensor.OnHost(false), tensor.WithGenerator(g))
	}
	x, w1, b1, w2, w3 := host(8, 6), host(6, 16), host(16), host(16, 12), host(12, 4)
	run := func(dev *device.Device) []float64 {
		on := func(h *tensor.Tensor) *tensor.Tensor { return h.To(dev, false).SetRequiresGrad(true) }
		xs, w1s, b1s, w2s, w3s := on(x), on(w1), on(b1), on(w2), on(w3)
		h := xs.Matmul(w1s).Add(b1s).Gelu().Dropout(0.25, true, tensor.NewGenerator(3))
		h = h.Matmul(w2s).Relu()
		h = tensor.Where(h.Gt(0.5), h, h.Mul(-0.25)).Clamp(-0.1, 1.5)
		h = h.Mul(1.0).ClampInPlace(-0.05, 1.25).Add(h.GeluTanh()).Add(h.Sigmoid()).Add(h.Tanh()).Add(h.Abs())
		out := h.Matmul(w3s)
		loss := out.Mul(out).Mean()
		loss.Backward()
		var vals []float64
		vals = append(vals, values(out)...)
		vals = append(vals, values(h.Le(0.3))...)
		vals = append(vals, values(h.Lt(h.Mul(0.9)))...)
		vals = append(vals, values(h.Ge(1.0))...)
		vals = append(vals, values(h.Eq(0))...)
		for _, p := range []*tensor.Tensor{xs, w1s, b1s, w2s, w3s} {
			vals = append(vals, values(p.Grad())...)
		}
		return vals
	}
	want := run(device.Default())
	got := run(d)
	if len(got) != len(want) {
		t.Fatalf("%d values on %s, %d on sim", len(got), d.Name(), len(want))
	}
	for i := range want {
		if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
			t.Fatalf("value %d on %s = %v, sim gives %v", i, d.Name(), got[i], want[i])
		}
	}
	for _, k := range []string{"Unary", "Binary", "BinaryScalar", "Where", "InRange", "Copy"} {
		if fake.calls[k] == 0 {
			t.Errorf("no %s call reached the device", k)
		}
	}
}

func (b *computeBackend) CSRMatmul(s alloc.Stream, dt device.Dtype, a backend.CSR, x, out uint64, n int) error {
	b.calls["CSRMatmul"]++
	return b.Backend.CSRMatmul(s, dt, a, x, out, n)
}

func (b *computeBackend) CSRMatmulT(s alloc.Stream, dt device.Dtype, a backend.CSR, g, out uint64, n int) error {
	b.calls["CSRMatmulT"]++
	return b.Backend.CSRMatmulT(s, dt, a, g, out, n)
}

func (b *computeBackend) CSRSampledDot(s alloc.Stream, dt device.Dtype, a backend.CSR, g, x, out uint64, n int) error {
	b.calls["CSRSampledDot"]++
	return b.Backend.CSRSampledDot(s, dt, a, g, x, out, n)
}

// The sparse product and its backward run on a device the host cannot
// read, through Compute, with sim's values bit for bit; a bad index is
// still the package's error (the indices are read through a host copy).
func TestComputeBackendSparseCSRMatmul(t *testing.T) {
	d, fake := newComputeDev(t)
	for _, index := range []tensor.Dtype{tensor.Int64, tensor.Int32} {
		for _, dt := range []tensor.Dtype{tensor.Float32, tensor.Float64} {
			run := func(on tensor.Option) [3][]float64 {
				vals := tensor.FromSlice([]float64{2, -1.5, 3, 0.25}, []int{4}, on, dt, tensor.RequiresGrad())
				cols := tensor.FromSlice([]int64{1, 0, 2, 0}, []int{4}, on, index)
				offs := tensor.FromSlice([]int64{0, 1, 1, 3, 4}, []int{5}, on, index)
				b := tensor.FromSlice([]float64{1, 2.5, 3, -4, 5, 6.125}, []int{3, 2}, on, dt, tensor.RequiresGrad())
				y := tensor.SparseCSRMatmul(vals, cols, offs, 4, 3, b)
				y.Mul(y).Sum().Backward()
				return [3][]float64{values(y), values(vals.Grad()), values(b.Grad())}
			}
			want, got := run(tensor.OnHost(false)), run(tensor.On(d))
			for i, what := range []string{"product", "values' gradient", "b's gradient"} {
				if !slices.Equal(got[i], want[i]) {
					t.Errorf("%s/%s %s: %v, want %v", index, dt, what, got[i], want[i])
				}
			}
		}
	}
	for _, k := range []string{"CSRMatmul", "CSRMatmulT", "CSRSampledDot"} {
		if fake.calls[k] == 0 {
			t.Errorf("no %s call reached the device", k)
		}
	}
	on := tensor.On(d)
	err := tensor.Try(func() {
		tensor.SparseCSRMatmul(tensor.Ones([]int{1}, on), tensor.FromSlice([]int64{5}, []int{1}, on), tensor.FromSlice([]int64{0, 1}, []int{2}, on), 1, 3, tensor.Ones([]int{3, 2}, on))
	})
	if err == nil || !strings.Contains(err.Error(), "column index 5 of entry 0 is out of bounds for 3 columns") {
		t.Errorf("bad column on a computing device: %v", err)
	}
}
