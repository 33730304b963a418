//go:build nvrtc

package cuda

// The row kernels, gather and scatter-add run in the CPU emulation
// (emu_test.go) against the CPU kernels sim uses (gpukit/kernels) or, for
// BatchNorm, NLL loss, gather and scatter-add, against references written
// as gpukit/tensor computes them. Tolerances: where the kernel sums in a
// different order than the CPU (a block's tree against eight lanes), a few
// units in the last place; where the order is the CPU's (NLL loss, Adam,
// scatter-add, the sparse products), bit for bit.

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gpumem/course/gpukit/device/backend"
	"github.com/gpumem/course/gpukit/dtypes"
	"github.com/gpumem/course/gpukit/kernels"
	"github.com/gpumem/course/gpukit/ops"
)

func dtypeOf[T kernels.Float]() dtypes.Dtype {
	var z T
	if any(z) == any(float32(0)) {
		return dtypes.Float32
	}
	return dtypes.Float64
}

// tolOf is the relative tolerance of a kernel whose sums run in another
// order than the CPU's: a few ulp of T.
func tolOf[T kernels.Float]() float64 {
	if dtypeOf[T]() == dtypes.Float32 {
		return 4e-6
	}
	return 1e-13
}

func randomsOf[T kernels.Float](r *rand.Rand, n int, scale, shift float64) []T {
	v := make([]T, n)
	for i := range v {
		v[i] = T(r.NormFloat64()*scale + shift)
	}
	return v
}

// near compares got and want elementwise within tol relative to
// max(1, |want|); NaNs must match.
func near[T kernels.Float](t *testing.T, what string, got, want []T, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range want {
		g, w := float64(got[i]), float64(want[i])
		if math.IsNaN(w) || math.IsNaN(g) {
			if !(math.IsNaN(w) && math.IsNaN(g)) {
				t.Fatalf("%s[%d] = %v, want %v", what, i, g, w)
			}
			continue
		}
		if g != w && math.Abs(g-w) > tol*max(1, math.Abs(w)) {
			t.Fatalf("%s[%d] = %v, want %v (tolerance %g)", what, i, g, w, tol)
		}
	}
}

// capGrid returns p with at most g blocks per launch, so that the
// kernels' loops over rows (channels, tiles, elements) beyond the grid run,
// as they do on a GPU past maxBlocks.
func capGrid[A kernelArgs](p plan[A], g int) plan[A] {
	p.steps = append([]step(nil), p.steps...)
	for i := range p.steps {
		p.steps[i].grid = min(p.steps[i].grid, g)
	}
	return p
}

// bothFloats runs the float32 and the float64 instance of a generic test
// as parallel subtests.
func bothFloats(t *testing.T, f32, f64 func(*testing.T)) {
	t.Parallel()
	t.Run("float32", f32)
	t.Run("float64", f64)
}

func TestEmulatedSoftmax(t *testing.T) {
	bothFloats(t, testEmulatedSoftmax[float32], testEmulatedSoftmax[float64])
}

func testEmulatedSoftmax[T kernels.Float](t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 1))
	for _, n := range []int{1000, 3} {
		rows := 5
		x := randomsOf[T](r, rows*n, 3, 0)
		x[0] = T(math.NaN()) // row 0 is NaN
		for j := range n {
			x[n+j] = T(math.Inf(-1)) // row 1 is all -Inf
		}
		x[2*n] = 80 // a large logit: the shift keeps e^x finite
		for _, log := range []bool{false, true} {
			p, err := planSoftmax("cuda:0", dtypeOf[T](), emuAddr(0), emuAddr(1), rows, n, log)
			if err != nil {
				t.Fatal(err)
			}
			out := emulate(t, p, make([]byte, len(x)*int(dtypeOf[T]().Size())), asBytes(x))
			want := make([]T, len(x))
			kernels.SoftmaxRows(want, x, rows, n, log)
			near(t, p.prog.String(), fromBytes[T](out[0]), want, tolOf[T]())
			// In place: dst == src.
			p, err = planSoftmax("cuda:0", dtypeOf[T](), emuAddr(1), emuAddr(1), rows, n, log)
			if err != nil {
				t.Fatal(err)
			}
			out = emulate(t, capGrid(p, 2), make([]byte, 8), asBytes(x)) // rows loop over fewer blocks
			near(t, p.prog.String()+" in place", fromBytes[T](out[1]), want, tolOf[T]())
		}
	}
}

func TestEmulatedLayerNorm(t *testing.T) {
	bothFloats(t, testEmulatedLayerNorm[float32], testEmulatedLayerNorm[float64])
}

func testEmulatedLayerNorm[T kernels.Float](t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(2, 2))
	dt := dtypeOf[T]()
	size := int(dt.Size())
	rows, n := 4, 300
	x := randomsOf[T](r, rows*n, 2, 100) // a mean large against the spread
	w, b := randomsOf[T](r, n, 1, 1), randomsOf[T](r, n, 1, 0)
	for _, c := range []struct {
		name string
		w, b []T
	}{{"affine", w, b}, {"weight", w, nil}, {"bias", nil, b}, {"plain", nil, nil}} {
		wa, ba := uint64(0), uint64(0)
		if c.w != nil {
			wa = emuAddr(4)
		}
		if c.b != nil {
			ba = emuAddr(5)
		}
		p, err := planLayerNorm("cuda:0", dt, emuAddr(0), emuAddr(1), emuAddr(2), emuAddr(3), wa, ba, rows, n, 1e-5)
		if err != nil {
			t.Fatal(err)
		}
		out := emulate(t, capGrid(p, 3), make([]byte, rows*n*size), make([]byte, rows*size), make([]byte, rows*size), asBytes(x), asBytes(w), asBytes(b))
		y, mean, rstd := make([]T, rows*n), make([]T, rows), make([]T, rows)
		kernels.LayerNormRows(y, mean, rstd, x, c.w, c.b, rows, n, 1e-5)
		near(t, c.name+" y", fromBytes[T](out[0]), y, tolOf[T]())
		near(t, c.name+" mean", fromBytes[T](out[1]), mean, tolOf[T]())
		near(t, c.name+" rstd", fromBytes[T](out[2]), rstd, tolOf[T]())
	}
}

func TestEmulatedLayerNormBackward(t *testing.T) {
	bothFloats(t, testEmulatedLayerNormBackward[float32], testEmulatedLayerNormBackward[float64])
}

func testEmulatedLayerNormBackward[T kernels.Float](t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(3, 3))
	dt := dtypeOf[T]()
	size := int(dt.Size())
	// 70 rows: more than the 8 row groups; 40 columns: a full tile of 32
	// and a partial one.
	rows, n := 70, 40
	x, g := randomsOf[T](r, rows*n, 1, 0.5), randomsOf[T](r, rows*n, 1, 0)
	w := randomsOf[T](r, n, 0.5, 1)
	mean, rstd := make([]T, rows), make([]T, rows)
	kernels.LayerNormRows(make([]T, rows*n), mean, rstd, x, w, nil, rows, n, 1e-5)
	garbage := func(k int) []byte { return asBytes(randomsOf[T](r, k, 1, 0)) }
	for _, withW := range []bool{true, false} {
		var wv []T
		wa := uint64(0)
		if withW {
			wv, wa = w, emuAddr(7)
		}
		// dx, dw, db, g, x, mean, rstd, w
		p, err := planLayerNormBackward("cuda:0", dt, emuAddr(0), emuAddr(1), emuAddr(2), emuAddr(3), emuAddr(4), emuAddr(5), emuAddr(6), wa, rows, n)
		if err != nil {
			t.Fatal(err)
		}
		out := emulate(t, capGrid(p, 1), garbage(rows*n), garbage(n), garbage(n), asBytes(g), asBytes(x), asBytes(mean), asBytes(rstd), asBytes(w))
		dx, dw, db := make([]T, rows*n), make([]T, n), make([]T, n)
		kernels.LayerNormBackwardRows(dx, dw, db, g, x, mean, rstd, wv, rows, n)
		near(t, "dx", fromBytes[T](out[0]), dx, tolOf[T]())
		near(t, "dw", fromBytes[T](out[1]), dw, tolOf[T]())
		near(t, "db", fromBytes[T](out[2]), db, tolOf[T]())
	}
	// No rows: dw and db are zeros, as the CPU clears them.
	p, err := planLayerNormBackward("cuda:0", dt, 0, emuAddr(0), emuAddr(1), 0, 0, 0, 0, 0, 0, n)
	if err != nil {
		t.Fatal(err)
	}
	out := emulate(t, p, garbage(n), garbage(n))
	near(t, "dw of no rows", fromBytes[T](out[0]), make([]T, n), 0)
	near(t, "db of no rows", fromBytes[T](out[1]), make([]T, n), 0)
	_ = size
}

func TestEmulatedBatchNorm(t *testing.T) {
	bothFloats(t, testEmulatedBatchNorm[float32], testEmulatedBatchNorm[float64])
}

func testEmulatedBatchNorm[T kernels.Float](t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(4, 4))
	dt := dtypeOf[T]()
	nb, c, l := 3, 4, 50
	x := randomsOf[T](r, nb*c*l, 2, 1)
	w, b := randomsOf[T](r, c, 1, 1), randomsOf[T](r, c, 1, 0)
	rm, rv := randomsOf[T](r, c, 0.1, 0), randomsOf[T](r, c, 0.1, 1)
	// The running statistics are float64 vectors with stride 2, to check
	// that vectors keep their own dtype and stride.
	rm2, rv2 := make([]float64, 2*c), make([]float64, 2*c)
	for j := range c {
		rm2[2*j], rv2[2*j] = float64(rm[j]), float64(rv[j])
	}
	vec := func(k int, d dtypes.Dtype, stride int) backend.Strided {
		return backend.Strided{Addr: emuAddr(k), Dtype: d, Strides: []int{stride}}
	}
	for _, training := range []bool{true, false} {
		a := backend.BatchNormArgs{
			Dtype: dt, Y: emuAddr(0), X: emuAddr(1), Batch: nb, Channels: c, Length: l,
			Weight: vec(2, dt, 1), Bias: vec(3, dt, 1), RunningMean: vec(4, dtypes.Float64, 2), RunningVar: vec(5, dtypes.Float64, 2),
			SaveMean: emuAddr(6), SaveInvstd: emuAddr(7), StatDtype: dt, Training: training, Momentum: 0.1, Eps: 1e-5,
		}
		p, err := planBatchNorm("cuda:0", a)
		if err != nil {
			t.Fatal(err)
		}
		out := emulate(t, p, make([]byte, len(x)*int(dt.Size())), asBytes(x), asBytes(w), asBytes(b), asBytes(rm2), asBytes(rv2),
			make([]byte, c*int(dt.Size())), make([]byte, c*int(dt.Size())))
		wantRM, wantRV := toF64(rm), toF64(rv)
		y, mu, invstd := batchNormRef(toF64(x), toF64(w), toF64(b), wantRM, wantRV, nb, c, l, training, 0.1, 1e-5)
		near(t, "y", fromBytes[T](out[0]), fromF64[T](y), tolOf[T]())
		gotRM, gotRV := fromBytes[float64](out[4]), fromBytes[float64](out[5])
		for j := range c {
			if training {
				near(t, "running_mean", gotRM[2*j:2*j+1], wantRM[j:j+1], 1e-13)
				near(t, "running_var", gotRV[2*j:2*j+1], wantRV[j:j+1], 1e-13)
			} else if gotRM[2*j] != float64(rm[j]) || gotRV[2*j] != float64(rv[j]) {
				t.Fatalf("evaluation changed the running statistics")
			}
			if gotRM[2*j+1] != 0 || gotRV[2*j+1] != 0 {
				t.Fatalf("a running statistic was written outside its stride")
			}
		}
		if training {
			near(t, "save_mean", fromBytes[T](out[6]), fromF64[T](mu), tolOf[T]())
			near(t, "save_invstd", fromBytes[T](out[7]), fromF64[T](invstd), tolOf[T]())
		}
	}
}

func TestEmulatedBatchNormBackward(t *testing.T) {
	bothFloats(t, testEmulatedBatchNormBackward[float32], testEmulatedBatchNormBackward[float64])
}

func testEmulatedBatchNormBackward[T kernels.Float](t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(5, 5))
	dt := dtypeOf[T]()
	size := int(dt.Size())
	nb, c, l := 5, 3, 70
	x, g := randomsOf[T](r, nb*c*l, 2, 1), randomsOf[T](r, nb*c*l, 1, 0)
	w := randomsOf[T](r, c, 1, 1)
	s1, s2 := randomsOf[T](r, c, 0.1, 1), randomsOf[T](r, c, 0.1, 1)
	vec := func(k int) backend.Strided { return backend.Strided{Addr: emuAddr(k), Dtype: dt, Strides: []int{1}} }
	for _, training := range []bool{true, false} {
		a := backend.BatchNormBackwardArgs{
			Dtype: dt, Grad: emuAddr(0), X: emuAddr(1), Batch: nb, Channels: c, Length: l,
			GradX: emuAddr(2), GradWeight: vec(3), GradBias: vec(4), Weight: vec(5), Stat1: vec(6), Stat2: vec(7),
			Training: training, Eps: 1e-5,
		}
		p, err := planBatchNormBackward("cuda:0", a)
		if err != nil {
			t.Fatal(err)
		}
		out := emulate(t, capGrid(p, 2), asBytes(g), asBytes(x), make([]byte, len(x)*size), make([]byte, c*size), make([]byte, c*size), asBytes(w), asBytes(s1), asBytes(s2))
		dx, dw, db := batchNormBackwardRef(toF64(g), toF64(x), toF64(w), toF64(s1), toF64(s2), nb, c, l, training, 1e-5)
		near(t, "dx", fromBytes[T](out[2]), fromF64[T](dx), tolOf[T]())
		near(t, "dw", fromBytes[T](out[3]), fromF64[T](dw), tolOf[T]())
		near(t, "db", fromBytes[T](out[4]), fromF64[T](db), tolOf[T]())
	}
}

func TestEmulatedNLLLoss(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(6, 6))
	rows, n := 600, 10 // more rows than a block fetches at once
	lp := randomsOf[float32](r, rows*n, 3, -2)
	lp64 := randomsOf[float64](r, rows*n, 3, -2)
	t64, t32 := make([]int64, rows), make([]int32, rows)
	var sum, sum64 float64
	for i := range rows {
		t64[i] = int64(r.IntN(n))
		t32[i] = int32(t64[i])
		sum -= float64(lp[i*n+int(t64[i])])
		sum64 -= lp64[i*n+int(t64[i])]
	}
	// gpukit/tensor's CrossEntropy: row order, float64.
	want, want64 := float32(sum/float64(rows)), sum64/float64(rows)
	for _, c := range []struct {
		dt      dtypes.Dtype
		targets []byte
	}{{dtypes.Int64, asBytes(t64)}, {dtypes.Int32, asBytes(t32)}} {
		p, err := planNLLLoss("cuda:0", dtypes.Float32, emuAddr(0), emuAddr(1), emuAddr(2), c.dt, rows, n)
		if err != nil {
			t.Fatal(err)
		}
		out := emulate(t, p, make([]byte, 4), asBytes(lp), c.targets)
		if got := fromBytes[float32](out[0])[0]; got != want {
			t.Errorf("%s: loss %v, want %v bit for bit", p.prog, got, want)
		}
		p, err = planNLLLoss("cuda:0", dtypes.Float64, emuAddr(0), emuAddr(1), emuAddr(2), c.dt, rows, n)
		if err != nil {
			t.Fatal(err)
		}
		out = emulate(t, p, make([]byte, 8), asBytes(lp64), c.targets)
		if got := fromBytes[float64](out[0])[0]; got != want64 {
			t.Errorf("%s: loss %v, want %v bit for bit", p.prog, got, want64)
		}
	}
	// A target out of range makes the loss NaN; no rows too (0/0).
	bad := append([]int64(nil), t64...)
	bad[rows-1] = int64(n)
	p, _ := planNLLLoss("cuda:0", dtypes.Float32, emuAddr(0), emuAddr(1), emuAddr(2), dtypes.Int64, rows, n)
	out := emulate(t, p, make([]byte, 4), asBytes(lp), asBytes(bad))
	if got := fromBytes[float32](out[0])[0]; !math.IsNaN(float64(got)) {
		t.Errorf("a target out of range gave %v, want NaN", got)
	}
	p, _ = planNLLLoss("cuda:0", dtypes.Float32, emuAddr(0), 0, 0, dtypes.Int64, 0, n)
	out = emulate(t, p, make([]byte, 4))
	if got := fromBytes[float32](out[0])[0]; !math.IsNaN(float64(got)) {
		t.Errorf("no rows gave %v, want NaN", got)
	}
}

func TestEmulatedAdam(t *testing.T) {
	bothFloats(t, testEmulatedAdam[float32], testEmulatedAdam[float64])
}

func testEmulatedAdam[T kernels.Float](t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(7, 7))
	n := 1000
	for _, sc := range []ops.AdamScalars{
		{LR: 1e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, Step: 1},
		{LR: 1e-2, Beta1: 0.8, Beta2: 0.99, Eps: 1e-6, WeightDecay: 0.1, Step: 7},                   // L2
		{LR: 3e-4, Beta1: 0.9, Beta2: 0.95, Eps: 1e-8, WeightDecay: 0.01, Decoupled: true, Step: 3}, // AdamW
	} {
		p, g := randomsOf[T](r, n, 1, 0), randomsOf[T](r, n, 0.1, 0)
		m, v := randomsOf[T](r, n, 0.01, 0), randomsOf[T](r, n, 0, 0)
		for i := range v {
			v[i] = T(r.Float64() * 1e-3)
		}
		pl, err := planAdam("cuda:0", dtypeOf[T](), emuAddr(0), emuAddr(1), emuAddr(2), emuAddr(3), n, sc)
		if err != nil {
			t.Fatal(err)
		}
		out := emulate(t, capGrid(pl, 2), asBytes(p), asBytes(g), asBytes(m), asBytes(v))
		kernels.AdamUpdate(p, g, m, v, sc)
		near(t, "param", fromBytes[T](out[0]), p, 0) // bit for bit
		near(t, "exp_avg", fromBytes[T](out[2]), m, 0)
		near(t, "exp_avg_sq", fromBytes[T](out[3]), v, 0)
	}
}

func TestEmulatedGather(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(8, 8))
	// src [2, 5, 4] contiguous; index [2, 3, 4] stored transposed in its
	// last two dimensions (strides 12, 1, 3); dst [2, 3, 4] contiguous.
	src := randomsOf[float64](r, 40, 1, 0)
	idx := make([]int32, 24)
	for i := range idx {
		idx[i] = int32(r.IntN(5))
	}
	shape := []int{2, 3, 4}
	p, err := planGather("cuda:0", shape, 1,
		backend.Strided{Addr: emuAddr(0), Dtype: dtypes.Float64, Strides: []int{12, 4, 1}},
		backend.Strided{Addr: emuAddr(1), Dtype: dtypes.Float64, Strides: []int{20, 4, 1}},
		backend.Strided{Addr: emuAddr(2), Dtype: dtypes.Int32, Strides: []int{12, 1, 3}})
	if err != nil {
		t.Fatal(err)
	}
	out := emulate(t, p, make([]byte, 24*8), asBytes(src), asBytes(idx))
	got := fromBytes[float64](out[0])
	for i := range 2 {
		for j := range 3 {
			for k := range 4 {
				want := src[i*20+int(idx[i*12+j+k*3])*4+k]
				if got[i*12+j*4+k] != want {
					t.Fatalf("dst[%d,%d,%d] = %v, want %v", i, j, k, got[i*12+j*4+k], want)
				}
			}
		}
	}
}

func TestEmulatedScatterAdd(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(9, 9))
	// dst [3, 4] += src [3, 6] along dim 1 with index [3, 6] in [0, 4):
	// indices collide, and each dst element gets its addends in order.
	dst := randomsOf[float32](r, 12, 1, 0)
	src := randomsOf[float32](r, 18, 1e3, 0)
	idx := make([]int64, 18)
	for i := range idx {
		idx[i] = int64(r.IntN(4))
	}
	p, err := planScatterAdd("cuda:0", []int{3, 6}, 1,
		backend.Strided{Addr: emuAddr(0), Dtype: dtypes.Float32, Strides: []int{4, 1}},
		backend.Strided{Addr: emuAddr(1), Dtype: dtypes.Int64, Strides: []int{6, 1}},
		backend.Strided{Addr: emuAddr(2), Dtype: dtypes.Float32, Strides: []int{6, 1}})
	if err != nil {
		t.Fatal(err)
	}
	if p.args.n != 3 || p.args.lineLen != 6 {
		t.Fatalf("%d lines of %d, want 3 of 6", p.args.n, p.args.lineLen)
	}
	out := emulate(t, p, asBytes(dst), asBytes(idx), asBytes(src))
	want := append([]float32(nil), dst...)
	for i := range 3 { // gpukit/tensor's scatterAddKernel: row-major over the index
		for j := range 6 {
			at := i*4 + int(idx[i*6+j])
			want[at] = float32(float64(want[at]) + float64(src[i*6+j]))
		}
	}
	near(t, "dst", fromBytes[float32](out[0]), want, 0)
}

func TestEmulatedCSR(t *testing.T) { bothFloats(t, testEmulatedCSR[float32], testEmulatedCSR[float64]) }

// testEmulatedCSR runs the three sparse products against gpukit/kernels,
// bit for bit: rows beyond a capped grid, n beyond a block (the column
// loop), a row of more entries than a block (CSRSampledDot's entry
// loop, with repeated columns), empty rows, both index dtypes.
func testEmulatedCSR[T float32 | float64](t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	const rows, k, n = 9, 7, blockSize + 5
	offs := []int64{0}
	var cols []int64
	for row := range rows {
		m := r.IntN(4)
		switch row {
		case 0, 4:
			m = 0
		case 6:
			m = blockSize + 20
		}
		for range m {
			cols = append(cols, int64(r.IntN(k)))
		}
		offs = append(offs, int64(len(cols)))
	}
	nnz := len(cols)
	vals := randomsOf[T](r, nnz, 2, -1)
	b, g := randomsOf[T](r, k*n, 2, -1), randomsOf[T](r, rows*n, 2, -1)
	mm, mt, sd := make([]T, rows*n), make([]T, k*n), make([]T, nnz)
	kernels.CSRMatmul(vals, cols, offs, b, n, mm)
	kernels.CSRMatmulT(vals, cols, offs, g, n, mt)
	kernels.CSRSampledDot(cols, offs, g, b, n, sd)
	cols32, offs32 := make([]int32, nnz), make([]int32, rows+1)
	for i, c := range cols {
		cols32[i] = int32(c)
	}
	for i, o := range offs {
		offs32[i] = int32(o)
	}
	dt := dtypeOf[T]()
	garbage := func(m int) []byte { return asBytes(randomsOf[T](r, m, 2, -1)) }
	for _, ix := range []struct {
		dt         dtypes.Dtype
		cols, offs []byte
	}{{dtypes.Int64, asBytes(cols), asBytes(offs)}, {dtypes.Int32, asBytes(cols32), asBytes(offs32)}} {
		// Buffers: 0 out, 1 values, 2 columns, 3 offsets, 4 x, 5 y.
		a := backend.CSR{Values: emuAddr(1), ColIndices: emuAddr(2), RowOffsets: emuAddr(3), Index: ix.dt, Rows: rows, Cols: k, NNZ: nnz}
		for _, c := range []struct {
			op   string
			x, y []T
			want []T
		}{{"CSRMatmul", b, nil, mm}, {"CSRMatmulT", g, nil, mt}, {"CSRSampledDot", g, b, sd}} {
			y := uint64(0)
			if c.y != nil {
				y = emuAddr(5)
			}
			a := a
			if c.op == "CSRSampledDot" {
				a.Values = 0
			}
			p, err := planCSR("cuda:0", c.op, dt, a, emuAddr(4), y, emuAddr(0), n)
			if err != nil {
				t.Fatal(err)
			}
			out := emulate(t, capGrid(p, 2), garbage(len(c.want)), asBytes(vals), ix.cols, ix.offs, asBytes(c.x), asBytes(c.y))
			got := fromBytes[T](out[0])
			for i := range c.want {
				if math.Float64bits(float64(got[i])) != math.Float64bits(float64(c.want[i])) {
					t.Fatalf("%s index %v: element %d = %v, want %v bit for bit", c.op, ix.dt, i, got[i], c.want[i])
				}
			}
		}
	}
	// A column out of range is skipped, not read: row 1 as its only
	// entry gives a zero row.
	bad := []int64{int64(k)}
	p, err := planCSR("cuda:0", "CSRMatmul", dt, backend.CSR{Values: emuAddr(1), ColIndices: emuAddr(2), RowOffsets: emuAddr(3), Index: dtypes.Int64, Rows: 1, Cols: k, NNZ: 1}, emuAddr(4), 0, emuAddr(0), n)
	if err != nil {
		t.Fatal(err)
	}
	out := emulate(t, p, garbage(n), asBytes(vals[:1]), asBytes(bad), asBytes([]int64{0, 1}), asBytes(b))
	for j, v := range fromBytes[T](out[0]) {
		if v != 0 {
			t.Fatalf("a column out of range: out[%d] = %v, want 0", j, v)
		}
	}
}
