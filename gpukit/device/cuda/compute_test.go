//go:build cuda

package cuda

// These tests need a GPU: they run the compute kernels on small inputs and
// compare with the CPU kernels of gpukit/kernels that sim uses. Without a
// GPU they are only compiled (go test -tags cuda -c).

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/gpumem/course/gpukit/device/backend"
	"github.com/gpumem/course/gpukit/dtypes"
	"github.com/gpumem/course/gpukit/kernels"
	"github.com/gpumem/course/gpukit/ops"
)

func openGPU(t *testing.T) *Backend {
	t.Helper()
	b, err := Open(0)
	if err != nil {
		t.Skip(err)
	}
	return b
}

// upload copies v to a new device allocation, freed at the end of the test.
func upload(t *testing.T, b *Backend, v []float32) uint64 {
	t.Helper()
	return uploadBytes(t, b, unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(v))), len(v)*4))
}

// download reads n float32 values at addr.
func download(t *testing.T, b *Backend, addr uint64, n int) []float32 {
	t.Helper()
	return downloadOf[float32](t, b, addr, n)
}

// downloadOf reads n values of T at addr.
func downloadOf[T float32 | int64 | byte](t *testing.T, b *Backend, addr uint64, n int) []T {
	t.Helper()
	out := make([]T, n)
	if err := b.CopyDtoH(unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(out))), n*int(unsafe.Sizeof(*new(T)))), addr, false, 0, false); err != nil {
		t.Fatal(err)
	}
	return out
}

func randoms(r *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(r.NormFloat64())
	}
	return v
}

// close reports whether got is within a relative tolerance of want (NaNs
// must match).
func closeTo(got, want, tol float32) bool {
	if want != want || got != got {
		return want != want && got != got
	}
	return math.Abs(float64(got-want)) <= float64(tol)*max(1, math.Abs(float64(want)))
}

func compare(t *testing.T, what string, got, want []float32, tol float32) {
	t.Helper()
	for i := range want {
		if !closeTo(got[i], want[i], tol) {
			t.Fatalf("%s: element %d = %v, want %v", what, i, got[i], want[i])
		}
	}
}

func TestGemmMatchesCPU(t *testing.T) {
	b := openGPU(t)
	r := rand.New(rand.NewPCG(1, 2))
	for _, c := range []struct {
		ta, tb  bool
		m, n, k int
	}{{false, false, 7, 5, 3}, {true, false, 4, 9, 6}, {false, true, 8, 3, 5}, {true, true, 5, 6, 7}, {false, false, 33, 17, 65}} {
		lda, ldb := c.k+1, c.n+2 // padded rows: leading dimensions are honoured
		ar, br := c.m, c.k
		if c.ta {
			lda, ar = c.m+1, c.k
		}
		if c.tb {
			ldb, br = c.k+2, c.n
		}
		ldc := c.n + 3
		a, bb := randoms(r, ar*lda), randoms(r, br*ldb)
		cc := randoms(r, c.m*ldc)
		want := append([]float32(nil), cc...)
		kernels.Sgemm(c.ta, c.tb, c.m, c.n, c.k, 1.5, a, lda, bb, ldb, 0.5, want, ldc)
		da, db, dc := upload(t, b, a), upload(t, b, bb), upload(t, b, cc)
		if err := b.Gemm(0, dtypes.Float32, c.ta, c.tb, c.m, c.n, c.k, 1.5, da, lda, db, ldb, 0.5, dc, ldc); err != nil {
			t.Fatal(err)
		}
		compare(t, "gemm", download(t, b, dc, len(cc)), want, 1e-4)

		// The same product in float16 and bfloat16 (cublasGemmEx, float32
		// compute) against the CPU's float32 product of the rounded
		// inputs, within a unit in the last place of the 16-bit result
		// (relative to the largest element, for the cancellations).
		for _, dt := range []dtypes.Dtype{dtypes.Float16, dtypes.BFloat16} {
			half := func(v []float32) ([]byte, []float32) {
				h, w := make([]byte, 2*len(v)), make([]float32, len(v))
				for i, x := range v {
					dtypes.Store(dt, h, i, float64(x))
					w[i] = float32(dtypes.Load(dt, h, i))
				}
				return h, w
			}
			ha, wa := half(a)
			hb, wb := half(bb)
			hc, wc := half(cc)
			kernels.Sgemm(c.ta, c.tb, c.m, c.n, c.k, 1.5, wa, lda, wb, ldb, 0.5, wc, ldc)
			dc := uploadBytes(t, b, hc)
			if err := b.Gemm(0, dt, c.ta, c.tb, c.m, c.n, c.k, 1.5, uploadBytes(t, b, ha), lda, uploadBytes(t, b, hb), ldb, 0.5, dc, ldc); err != nil {
				t.Fatal(err)
			}
			got, scale := downloadOf[byte](t, b, dc, len(hc)), 0.0
			for _, w := range wc {
				scale = max(scale, math.Abs(float64(w)))
			}
			ulp := map[dtypes.Dtype]float64{dtypes.Float16: 0x1p-10, dtypes.BFloat16: 0x1p-7}[dt]
			for i, w := range wc {
				if g := dtypes.Load(dt, got, i); math.Abs(g-float64(w)) > ulp*scale {
					t.Errorf("%v gemm %+v: C[%d] = %v, want %v", dt, c, i, g, w)
				}
			}
		}
	}
}

func TestElementwiseMatchesCPU(t *testing.T) {
	b := openGPU(t)
	r := rand.New(rand.NewPCG(3, 4))
	shape := []int{3, 4, 5}
	x, y := randoms(r, 60), randoms(r, 5) // y broadcasts along the last dimension
	dx, dy := upload(t, b, x), upload(t, b, y)
	out := upload(t, b, make([]float32, 60))
	xs := backend.Strided{Addr: dx, Dtype: dtypes.Float32, Strides: []int{20, 5, 1}}
	ys := backend.Strided{Addr: dy, Dtype: dtypes.Float32, Strides: []int{0, 0, 1}}
	os := backend.Strided{Addr: out, Dtype: dtypes.Float32, Strides: []int{20, 5, 1}}
	cpu := func(st []int, d []float32) kernels.Strided[float32] {
		return kernels.Strided[float32]{Data: d, Strides: st}
	}
	for _, op := range []ops.Binary{ops.Add, ops.Sub, ops.Mul, ops.Div, ops.Max, ops.Pow, ops.Greater} {
		want := make([]float32, 60)
		kernels.BinaryStrided(op, shape, cpu([]int{20, 5, 1}, want), cpu([]int{20, 5, 1}, x), cpu([]int{0, 0, 1}, y))
		if err := b.Binary(0, op, shape, os, xs, ys); err != nil {
			t.Fatal(err)
		}
		compare(t, op.String(), download(t, b, out, 60), want, 1e-5)
	}
	for _, op := range []ops.Unary{ops.Neg, ops.Abs, ops.Exp, ops.Relu, ops.Sigmoid, ops.Tanh, ops.Gelu} {
		want := make([]float32, 60)
		kernels.Unary(op, want, x)
		if err := b.Unary(0, op, shape, os, xs); err != nil {
			t.Fatal(err)
		}
		compare(t, op.String(), download(t, b, out, 60), want, 1e-5)
	}
	// A transposed copy, a scalar op and a fill.
	ts := backend.Strided{Addr: dx, Dtype: dtypes.Float32, Strides: []int{1, 20}} // x viewed as [20, 3]ᵀ of [3, 20]
	if err := b.Copy(0, []int{20, 3}, backend.Strided{Addr: out, Dtype: dtypes.Float32, Strides: []int{3, 1}}, ts); err != nil {
		t.Fatal(err)
	}
	want := make([]float32, 60)
	kernels.Copy([]int{20, 3}, want, kernels.Strided[float32]{Data: x, Strides: []int{1, 20}})
	compare(t, "transposed copy", download(t, b, out, 60), want, 0)
	if err := b.BinaryScalar(0, ops.Sub, shape, os, xs, 2, true); err != nil {
		t.Fatal(err)
	}
	kernels.BinaryScalar(ops.Sub, want, x, 2) // x - 2; the GPU did 2 - x
	for i := range want {
		want[i] = -want[i]
	}
	compare(t, "2 - x", download(t, b, out, 60), want, 1e-6)
	if err := b.Fill(0, shape, os, 7); err != nil {
		t.Fatal(err)
	}
	for i := range want {
		want[i] = 7
	}
	compare(t, "fill", download(t, b, out, 60), want, 0)
}

func TestReductionsMatchCPU(t *testing.T) {
	b := openGPU(t)
	r := rand.New(rand.NewPCG(5, 6))
	for _, sz := range [][3]int{{3, 1000, 1}, {4, 7, 5}, {1, 1, 1}, {2, 0, 3}} {
		outer, n, inner := sz[0], sz[1], sz[2]
		x := randoms(r, outer*n*inner)
		if len(x) > 3 {
			x[3] = x[1] // a tie
		}
		dx := upload(t, b, x)
		dst := upload(t, b, make([]float32, outer*inner))
		for _, op := range []ops.Reduce{ops.ReduceSum, ops.ReduceMean, ops.ReduceMax, ops.ReduceMin} {
			want := make([]float32, outer*inner)
			kernels.Reduce(op, want, x, outer, n, inner)
			if err := b.Reduce(0, op, dtypes.Float32, dst, dx, outer, n, inner); err != nil {
				t.Fatal(err)
			}
			compare(t, op.String(), download(t, b, dst, len(want)), want, 1e-5)
		}
		idx := upload(t, b, make([]float32, 2*outer*inner)) // int64s
		for _, largest := range []bool{true, false} {
			wantIdx := make([]int, outer*inner)
			if largest {
				kernels.ArgMax(wantIdx, x, outer, n, inner)
			} else {
				kernels.ArgMin(wantIdx, x, outer, n, inner)
			}
			if err := b.ArgReduce(0, largest, dtypes.Float32, idx, dst, dx, outer, n, inner); err != nil {
				t.Fatal(err)
			}
			got := downloadOf[int64](t, b, idx, len(wantIdx))
			for i := range wantIdx {
				if got[i] != int64(wantIdx[i]) {
					t.Fatalf("ArgReduce(largest=%v) [%d,%d,%d]: line %d = %d, want %d", largest, outer, n, inner, i, got[i], wantIdx[i])
				}
			}
		}
	}
}

func TestComputeRefusesForeignAddresses(t *testing.T) {
	b := openGPU(t)
	err := b.Fill(0, []int{4}, backend.Strided{Addr: 0x1000, Dtype: dtypes.Float32, Strides: []int{1}}, 1)
	if err == nil {
		t.Fatal("Fill of an address outside every allocation was queued")
	}
}

func TestComputeReportsUnsupportedDtypes(t *testing.T) {
	b := &Backend{} // no device needed: the dtype is checked first
	st := backend.Strided{Addr: 1, Dtype: dtypes.Bool, Strides: []int{1}}
	for op, err := range map[string]error{
		"Exp":       b.Unary(0, ops.Exp, []int{1}, st, st),
		"Add":       b.Binary(0, ops.Add, []int{1}, st, st, st),
		"Reduce":    b.Reduce(0, ops.ReduceSum, dtypes.Int64, 1, 2, 1, 1, 1),
		"Gemm":      b.Gemm(0, dtypes.Int64, false, false, 1, 1, 1, 1, 1, 1, 2, 1, 0, 3, 1),
		"Softmax":   b.Softmax(0, dtypes.Float16, 1, 2, 1, 1, false),
		"LayerNorm": b.LayerNorm(0, dtypes.Int32, 1, 2, 3, 4, 0, 0, 1, 1, 1e-5),
	} {
		var ue *backend.UnsupportedError
		if !errors.As(err, &ue) || ue.Op != op {
			t.Errorf("%s: %v, want an UnsupportedError", op, err)
		}
	}
}

// TestRowKernelsMatchCPU runs the fused row kernels on the GPU against the
// CPU kernels (the emulation tests of rows_emu_test.go check their logic
// without a GPU; this checks the device's math library, real scheduling and
// the launches).
func TestRowKernelsMatchCPU(t *testing.T) {
	b := openGPU(t)
	r := rand.New(rand.NewPCG(7, 8))
	const f32 = dtypes.Float32
	rows, n := 37, 1000
	x := randoms(r, rows*n)
	dx := upload(t, b, x)
	out := upload(t, b, make([]float32, rows*n))
	for _, log := range []bool{false, true} {
		want := make([]float32, rows*n)
		kernels.SoftmaxRows(want, x, rows, n, log)
		if err := b.Softmax(0, f32, out, dx, rows, n, log); err != nil {
			t.Fatal(err)
		}
		compare(t, "softmax", download(t, b, out, rows*n), want, 1e-5)
	}

	w, bias := randoms(r, n), randoms(r, n)
	dw, dbias := upload(t, b, w), upload(t, b, bias)
	mean, rstd := upload(t, b, make([]float32, rows)), upload(t, b, make([]float32, rows))
	y, wm, wr := make([]float32, rows*n), make([]float32, rows), make([]float32, rows)
	kernels.LayerNormRows(y, wm, wr, x, w, bias, rows, n, 1e-5)
	if err := b.LayerNorm(0, f32, out, mean, rstd, dx, dw, dbias, rows, n, 1e-5); err != nil {
		t.Fatal(err)
	}
	compare(t, "layer norm", download(t, b, out, rows*n), y, 1e-5)
	compare(t, "layer norm rstd", download(t, b, rstd, rows), wr, 1e-5)

	g := randoms(r, rows*n)
	dg := upload(t, b, g)
	gw, gb := upload(t, b, make([]float32, n)), upload(t, b, make([]float32, n))
	wantDx, wantDw, wantDb := make([]float32, rows*n), make([]float32, n), make([]float32, n)
	kernels.LayerNormBackwardRows(wantDx, wantDw, wantDb, g, x, wm, wr, w, rows, n)
	if err := b.LayerNormBackward(0, f32, out, gw, gb, dg, dx, mean, rstd, dw, rows, n); err != nil {
		t.Fatal(err)
	}
	compare(t, "layer norm dx", download(t, b, out, rows*n), wantDx, 1e-4)
	compare(t, "layer norm dw", download(t, b, gw, n), wantDw, 1e-4)
	compare(t, "layer norm db", download(t, b, gb, n), wantDb, 1e-4)

	// Adam, bit for bit.
	p, m, v := randoms(r, n), randoms(r, n), randoms(r, n)
	for i := range v {
		v[i] *= v[i]
	}
	dp, dm, dv := upload(t, b, p), upload(t, b, m), upload(t, b, v)
	sc := ops.AdamScalars{LR: 1e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 0.01, Decoupled: true, Step: 3}
	kernels.AdamUpdate(p, g[:n], m, v, sc)
	if err := b.Adam(0, f32, dp, dg, dm, dv, n, sc); err != nil {
		t.Fatal(err)
	}
	compare(t, "adam param", download(t, b, dp, n), p, 0)
	compare(t, "adam exp_avg_sq", download(t, b, dv, n), v, 0)

	// NLL loss over the log-softmax of x, int64 targets, bit for bit.
	ls := make([]float32, rows*n)
	kernels.SoftmaxRows(ls, x, rows, n, true)
	targets := make([]float32, 2*rows) // int64s
	ti := unsafe.Slice((*int64)(unsafe.Pointer(&targets[0])), rows)
	var sum float64
	for i := range ti {
		ti[i] = int64(r.IntN(n))
		sum -= float64(ls[i*n+int(ti[i])])
	}
	dls, dt, loss := upload(t, b, ls), upload(t, b, targets), upload(t, b, make([]float32, 1))
	if err := b.NLLLoss(0, f32, loss, dls, dt, dtypes.Int64, rows, n); err != nil {
		t.Fatal(err)
	}
	compare(t, "nll loss", download(t, b, loss, 1), []float32{float32(sum / float64(rows))}, 0)

	// Gather along dim 1 of [rows, n] with the targets as a [rows, 1]
	// index, then scatter-add it back into zeros.
	picked := upload(t, b, make([]float32, rows))
	col := func(addr uint64, dt dtypes.Dtype, rowStride int) backend.Strided {
		return backend.Strided{Addr: addr, Dtype: dt, Strides: []int{rowStride, 1}}
	}
	if err := b.Gather(0, []int{rows, 1}, 1, col(picked, f32, 1), col(dls, f32, n), col(dt, dtypes.Int64, 1)); err != nil {
		t.Fatal(err)
	}
	want := make([]float32, rows)
	for i := range want {
		want[i] = ls[i*n+int(ti[i])]
	}
	compare(t, "gather", download(t, b, picked, rows), want, 0)
	if err := b.Fill(0, []int{rows * n}, backend.Strided{Addr: out, Dtype: f32, Strides: []int{1}}, 0); err != nil {
		t.Fatal(err)
	}
	if err := b.ScatterAdd(0, []int{rows, 1}, 1, col(out, f32, n), col(dt, dtypes.Int64, 1), col(picked, f32, 1)); err != nil {
		t.Fatal(err)
	}
	got := download(t, b, out, rows*n)
	for i := range rows {
		if got[i*n+int(ti[i])] != want[i] {
			t.Fatalf("scatter-add row %d: %v, want %v", i, got[i*n+int(ti[i])], want[i])
		}
	}
}

func TestBatchNormMatchesCPU(t *testing.T) {
	b := openGPU(t)
	r := rand.New(rand.NewPCG(9, 10))
	const f32 = dtypes.Float32
	nb, c, l := 8, 5, 300
	x, g := randoms(r, nb*c*l), randoms(r, nb*c*l)
	w, bias := randoms(r, c), randoms(r, c)
	rm, rv := make([]float32, c), make([]float32, c)
	for j := range rv {
		rv[j] = 1
	}
	dx, dg, dw, dbias := upload(t, b, x), upload(t, b, g), upload(t, b, w), upload(t, b, bias)
	drm, drv := upload(t, b, rm), upload(t, b, rv)
	y, mean, invstd := upload(t, b, make([]float32, nb*c*l)), upload(t, b, make([]float32, c)), upload(t, b, make([]float32, c))
	vec := func(addr uint64) backend.Strided { return backend.Strided{Addr: addr, Dtype: f32, Strides: []int{1}} }
	if err := b.BatchNorm(0, backend.BatchNormArgs{
		Dtype: f32, Y: y, X: dx, Batch: nb, Channels: c, Length: l,
		Weight: vec(dw), Bias: vec(dbias), RunningMean: vec(drm), RunningVar: vec(drv),
		SaveMean: mean, SaveInvstd: invstd, StatDtype: f32, Training: true, Momentum: 0.1, Eps: 1e-5,
	}); err != nil {
		t.Fatal(err)
	}
	wantRM, wantRV := toF64(rm), toF64(rv)
	wy, wmu, winv := batchNormRef(toF64(x), toF64(w), toF64(bias), wantRM, wantRV, nb, c, l, true, 0.1, 1e-5)
	compare(t, "batch norm y", download(t, b, y, nb*c*l), fromF64[float32](wy), 1e-5)
	compare(t, "batch norm save_mean", download(t, b, mean, c), fromF64[float32](wmu), 1e-5)
	compare(t, "batch norm save_invstd", download(t, b, invstd, c), fromF64[float32](winv), 1e-5)
	compare(t, "batch norm running_var", download(t, b, drv, c), fromF64[float32](wantRV), 1e-5)

	gx, gw, gb := upload(t, b, make([]float32, nb*c*l)), upload(t, b, make([]float32, c)), upload(t, b, make([]float32, c))
	if err := b.BatchNormBackward(0, backend.BatchNormBackwardArgs{
		Dtype: f32, Grad: dg, X: dx, Batch: nb, Channels: c, Length: l,
		GradX: gx, GradWeight: vec(gw), GradBias: vec(gb), Weight: vec(dw), Stat1: vec(mean), Stat2: vec(invstd),
		Training: true, Eps: 1e-5,
	}); err != nil {
		t.Fatal(err)
	}
	wdx, wdw, wdb := batchNormBackwardRef(toF64(g), toF64(x), toF64(w), toF64(download(t, b, mean, c)), toF64(download(t, b, invstd, c)), nb, c, l, true, 1e-5)
	compare(t, "batch norm dx", download(t, b, gx, nb*c*l), fromF64[float32](wdx), 1e-5)
	compare(t, "batch norm dw", download(t, b, gw, c), fromF64[float32](wdw), 1e-4)
	compare(t, "batch norm db", download(t, b, gb, c), fromF64[float32](wdb), 1e-4)
}

// uploadBytes copies v to a new device allocation, freed at the end of
// the test (downloadOf[byte] copies bytes back).
func uploadBytes(t *testing.T, b *Backend, v []byte) uint64 {
	t.Helper()
	addr, err := b.Malloc(int64(max(len(v), 1)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Free(addr) })
	if len(v) > 0 {
		if err := b.CopyHtoD(addr, v, false, 0, false); err != nil {
			t.Fatal(err)
		}
	}
	return addr
}

// TestDtypesMatchCPU runs, on the emulation tests' inputs, every
// conversion between two dtypes, every unary and binary op on every dtype
// that computes (the comparisons also into bool), InRange, Where and the
// float16 reductions on the GPU against gpukit's CPU: the emulation ran the
// same sources with the host's math library and conversions, this runs
// the device's.
func TestDtypesMatchCPU(t *testing.T) {
	b := openGPU(t)
	const n = 300
	vec := func(addr uint64, dt dtypes.Dtype) backend.Strided {
		return backend.Strided{Addr: addr, Dtype: dt, Strides: []int{1}}
	}
	for _, in := range allDtypes {
		src := inputs(in, rand.New(rand.NewPCG(11, uint64(in))), n)
		other := inputs(in, rand.New(rand.NewPCG(12, uint64(in))), n)
		dsrc, dother := uploadBytes(t, b, src), uploadBytes(t, b, other)
		for _, out := range allDtypes {
			dst := uploadBytes(t, b, make([]byte, n*out.Size()))
			if err := b.Copy(0, []int{n}, vec(dst, out), vec(dsrc, in)); err != nil {
				t.Fatal(err)
			}
			got, want := downloadOf[byte](t, b, dst, n*out.Size()), make([]byte, n*out.Size())
			for k := range n {
				v := dtypes.Load(in, src, k)
				if in == out {
					copy(want[k*out.Size():], src[k*in.Size():(k+1)*in.Size()])
				} else {
					dtypes.Store(out, want, k, v)
				}
				if in == out && string(got[k*out.Size():(k+1)*out.Size()]) != string(want[k*out.Size():(k+1)*out.Size()]) || !sameElement(out, got, want, k) {
					t.Errorf("copy %v → %v of %v = %v, want %v", in, out, v, dtypes.Load(out, got, k), dtypes.Load(out, want, k))
				}
			}
		}
		mask := uploadBytes(t, b, make([]byte, n))
		if err := b.InRange(0, []int{n}, vec(mask, dtypes.Bool), vec(dsrc, in), -1, 0.5); err != nil {
			t.Fatal(err)
		}
		for k, m := range downloadOf[byte](t, b, mask, n) {
			v := dtypes.Load(in, src, k)
			if (m == 1) != (v >= -1 && v <= 0.5) || m > 1 {
				t.Errorf("%v: InRange(%v, -1, 0.5) = %d", in, v, m)
			}
		}
		if !arithmetic(in) {
			continue
		}
		dst := uploadBytes(t, b, make([]byte, n*in.Size()))
		for op := range ops.Unary(len(unaryExpr)) {
			if err := b.Unary(0, op, []int{n}, vec(dst, in), vec(dsrc, in)); err != nil {
				t.Fatal(err)
			}
			got, want := downloadOf[byte](t, b, dst, n*in.Size()), unaryRef(op, in, src, n)
			for k := range n {
				if x := dtypes.Load(in, src, k); !unaryMatches(op, in, got, want, k, x) {
					t.Errorf("%v %v(%v) = %v, want %v", in, op, x, dtypes.Load(in, got, k), dtypes.Load(in, want, k))
				}
			}
		}
		for op := range ops.Binary(len(binaryExpr)) {
			for _, out := range []dtypes.Dtype{in, dtypes.Bool} {
				if out == dtypes.Bool && !op.Comparison() {
					continue
				}
				d := uploadBytes(t, b, make([]byte, n*out.Size()))
				if err := b.Binary(0, op, []int{n}, vec(d, out), vec(dsrc, in), vec(dother, in)); err != nil {
					t.Fatal(err)
				}
				got := downloadOf[byte](t, b, d, n*out.Size())
				for k := range n {
					x, y := dtypes.Load(in, src, k), dtypes.Load(in, other, k)
					if ok, want := binaryMatches(op, in, out, got, k, x, y); !ok {
						t.Errorf("%v→%v %v(%v, %v) = %v, want %v", in, out, op, x, y, dtypes.Load(out, got, k), want)
					}
				}
				if err := b.BinaryScalar(0, op, []int{n}, vec(d, out), vec(dsrc, in), 0.1, true); err != nil {
					t.Fatal(err)
				}
				got = downloadOf[byte](t, b, d, n*out.Size())
				for k := range n {
					x := dtypes.Load(in, src, k)
					if ok, want := binaryMatches(op, in, out, got, k, 0.1, x); !ok {
						t.Errorf("%v→%v %v(0.1, %v) = %v, want %v", in, out, op, x, dtypes.Load(out, got, k), want)
					}
				}
			}
		}
	}

	// Where over float16, cond from the bool inputs (bytes 0, 1, 2).
	cond := inputs(dtypes.Bool, rand.New(rand.NewPCG(13, 0)), n)
	x, y := inputs(dtypes.Float16, rand.New(rand.NewPCG(14, 0)), n), inputs(dtypes.Float16, rand.New(rand.NewPCG(15, 0)), n)
	dst := uploadBytes(t, b, make([]byte, 2*n))
	if err := b.Where(0, []int{n}, vec(dst, dtypes.Float16), vec(uploadBytes(t, b, cond), dtypes.Bool),
		vec(uploadBytes(t, b, x), dtypes.Float16), vec(uploadBytes(t, b, y), dtypes.Float16)); err != nil {
		t.Fatal(err)
	}
	got := downloadOf[byte](t, b, dst, 2*n)
	for k := range n {
		want := y[2*k : 2*k+2]
		if cond[k] != 0 {
			want = x[2*k : 2*k+2]
		}
		if string(got[2*k:2*k+2]) != string(want) {
			t.Errorf("Where[%d] (cond %d) = %x, want %x", k, cond[k], got[2*k:2*k+2], want)
		}
	}

	// A float16 sum and arg-max over rows of random halves: their sums
	// are exact in double, so the device gives the CPU's bits.
	const rows = 4
	h := make([]byte, 2*rows*n)
	r := rand.New(rand.NewPCG(16, 0))
	for k := range rows * n {
		dtypes.Store(dtypes.Float16, h, k, r.NormFloat64()*100)
	}
	dh, sum := uploadBytes(t, b, h), uploadBytes(t, b, make([]byte, 2*rows))
	idx, val := uploadBytes(t, b, make([]byte, 8*rows)), uploadBytes(t, b, make([]byte, 2*rows))
	if err := b.Reduce(0, ops.ReduceSum, dtypes.Float16, sum, dh, rows, n, 1); err != nil {
		t.Fatal(err)
	}
	if err := b.ArgReduce(0, true, dtypes.Float16, idx, val, dh, rows, n, 1); err != nil {
		t.Fatal(err)
	}
	sums, vals, idxs := downloadOf[byte](t, b, sum, 2*rows), downloadOf[byte](t, b, val, 2*rows), downloadOf[int64](t, b, idx, rows)
	for i := range rows {
		s, best, bi := 0.0, math.Inf(-1), -1
		for p := range n {
			v := dtypes.Load(dtypes.Float16, h, i*n+p)
			s += v
			if v > best {
				best, bi = v, p
			}
		}
		want := make([]byte, 2)
		dtypes.Store(dtypes.Float16, want, 0, s)
		if string(sums[2*i:2*i+2]) != string(want) || idxs[i] != int64(bi) || dtypes.Load(dtypes.Float16, vals, i) != best {
			t.Errorf("row %d: sum %x (want %x), argmax %d = %v (want %d = %v)", i, sums[2*i:2*i+2], want, idxs[i], dtypes.Load(dtypes.Float16, vals, i), bi, best)
		}
	}
}
