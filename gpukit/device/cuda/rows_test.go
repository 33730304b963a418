//go:build nvrtc

package cuda

// The Go side of the row kernels without a GPU: argument checks, launch
// geometry, spans and the generated sources.

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpumem/course/gpukit/device/backend"
	"github.com/gpumem/course/gpukit/dtypes"
	"github.com/gpumem/course/gpukit/ops"
)

func vec1(addr uint64, dt dtypes.Dtype) backend.Strided {
	return backend.Strided{Addr: addr, Dtype: dt, Strides: []int{1}}
}

func TestPlansRejectBadArguments(t *testing.T) {
	const f32, f64 = dtypes.Float32, dtypes.Float64
	adam := ops.AdamScalars{LR: 1e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, Step: 1}
	bn := func(edit func(*backend.BatchNormArgs)) error {
		a := backend.BatchNormArgs{Dtype: f32, Y: 1, X: 2, Batch: 2, Channels: 3, Length: 4, StatDtype: f32, Training: true, SaveMean: 3, SaveInvstd: 4}
		edit(&a)
		_, err := planBatchNorm("cuda:0", a)
		return err
	}
	bnb := func(edit func(*backend.BatchNormBackwardArgs)) error {
		a := backend.BatchNormBackwardArgs{Dtype: f32, Grad: 1, X: 2, GradX: 3, Batch: 2, Channels: 3, Length: 4, Stat1: vec1(4, f32), Stat2: vec1(5, f32), Training: true}
		edit(&a)
		_, err := planBatchNormBackward("cuda:0", a)
		return err
	}
	st := func(addr uint64, dt dtypes.Dtype, strides ...int) backend.Strided {
		return backend.Strided{Addr: addr, Dtype: dt, Strides: strides}
	}
	gather := func(shape []int, dim int, dst, src, index backend.Strided) error {
		_, err := planGather("cuda:0", shape, dim, dst, src, index)
		return err
	}
	scatter := func(shape []int, dim int, dst, index, src backend.Strided) error {
		_, err := planScatterAdd("cuda:0", shape, dim, dst, index, src)
		return err
	}
	first := func(_ any, err error) error { return err }
	for _, c := range []struct {
		name string
		err  error
		want string
	}{
		{"softmax negative rows", first(planSoftmax("cuda:0", f32, 1, 2, -1, 4, false)), "negative size"},
		{"softmax no dst", first(planSoftmax("cuda:0", f32, 0, 2, 3, 4, false)), "dst has address 0"},
		{"softmax overflow", first(planSoftmax("cuda:0", f32, 1, 2, math.MaxInt/2, 4, false)), "overflow"},
		{"layer norm no rstd", first(planLayerNorm("cuda:0", f64, 1, 2, 0, 4, 0, 0, 3, 4, 1e-5)), "rstd has address 0"},
		{"layer norm backward no x", first(planLayerNormBackward("cuda:0", f32, 1, 0, 0, 2, 0, 3, 4, 0, 3, 4)), "x has address 0"},
		{"layer norm backward negative n", first(planLayerNormBackward("cuda:0", f32, 1, 0, 0, 2, 3, 4, 5, 0, 3, -4)), "negative size"},
		{"batch norm one value per channel", bn(func(a *backend.BatchNormArgs) { a.Batch, a.Length = 1, 1 }), "more than 1 value per channel"},
		{"batch norm eval without running stats", bn(func(a *backend.BatchNormArgs) { a.Training = false }), "running_mean and running_var"},
		{"batch norm weight of two strides", bn(func(a *backend.BatchNormArgs) { a.Weight = st(9, f32, 1, 1) }), "weight must be a vector"},
		{"batch norm negative channels", bn(func(a *backend.BatchNormArgs) { a.Channels = -1 }), "negative size"},
		{"batch norm no x", bn(func(a *backend.BatchNormArgs) { a.X = 0 }), "x has address 0"},
		{"batch norm backward without stats", bnb(func(a *backend.BatchNormBackwardArgs) { a.Stat2 = backend.Strided{} }), "statistics"},
		{"batch norm backward no grad", bnb(func(a *backend.BatchNormBackwardArgs) { a.Grad = 0 }), "grad has address 0"},
		{"nll float targets", first(planNLLLoss("cuda:0", f32, 1, 2, 3, f32, 4, 5)), "targets must be int64 or int32"},
		{"nll no out", first(planNLLLoss("cuda:0", f32, 0, 2, 3, dtypes.Int64, 4, 5)), "out has address 0"},
		{"nll no targets", first(planNLLLoss("cuda:0", f32, 1, 2, 0, dtypes.Int64, 4, 5)), "targets has address 0"},
		{"adam step 0", first(planAdam("cuda:0", f32, 1, 2, 3, 4, 10, ops.AdamScalars{Beta1: 0.9, Beta2: 0.99})), "step 0"},
		{"adam no exp_avg_sq", first(planAdam("cuda:0", f32, 1, 2, 3, 0, 10, adam)), "exp_avg_sq has address 0"},
		{"gather dim out of range", gather([]int{2, 3}, 2, st(1, f32, 3, 1), st(2, f32, 3, 1), st(3, dtypes.Int64, 3, 1)), "dim 2 out of range"},
		{"gather short strides", gather([]int{2, 3}, 1, st(1, f32, 3, 1), st(2, f32, 1), st(3, dtypes.Int64, 3, 1)), "src has 1 strides"},
		{"gather negative stride", gather([]int{2, 3}, 0, st(1, f32, 3, 1), st(2, f32, 3, -1), st(3, dtypes.Int64, 3, 1)), "negative stride"},
		{"gather dtypes differ", gather([]int{2, 3}, 1, st(1, f32, 3, 1), st(2, f64, 3, 1), st(3, dtypes.Int64, 3, 1)), "dtypes differ"},
		{"gather float index", gather([]int{2, 3}, 1, st(1, f32, 3, 1), st(2, f32, 3, 1), st(3, f32, 3, 1)), "index must be int64 or int32"},
		{"gather no src", gather([]int{2, 3}, 1, st(1, f32, 3, 1), st(0, f32, 3, 1), st(3, dtypes.Int32, 3, 1)), "src has address 0"},
		{"scatter-add 0-d", scatter([]int{}, 0, st(1, f32), st(2, dtypes.Int64), st(3, f32)), "dim 0 out of range"},
		{"scatter-add broadcast dst", scatter([]int{2, 3}, 1, st(1, f32, 0, 1), st(2, dtypes.Int64, 3, 1), st(3, f32, 3, 1)), "dst broadcasts along dimension 0"},
	} {
		t.Run(c.name, func(t *testing.T) {
			require.Error(t, c.err)
			assert.Contains(t, c.err.Error(), c.want)
			assert.True(t, strings.HasPrefix(c.err.Error(), "cuda: cuda:0: "), c.err.Error())
		})
	}
}

func TestPlansReportUnsupportedDtypes(t *testing.T) {
	const f16 = dtypes.Float16
	st := func(dt dtypes.Dtype) backend.Strided { return backend.Strided{Addr: 1, Dtype: dt, Strides: []int{1}} }
	first := func(_ any, err error) error { return err }
	for _, c := range []struct {
		op  string
		dt  dtypes.Dtype
		err error
	}{
		{"Softmax", f16, first(planSoftmax("cuda:0", f16, 1, 2, 3, 4, true))},
		{"LayerNorm", dtypes.BFloat16, first(planLayerNorm("cuda:0", dtypes.BFloat16, 1, 2, 3, 4, 0, 0, 3, 4, 1e-5))},
		{"LayerNormBackward", dtypes.Int64, first(planLayerNormBackward("cuda:0", dtypes.Int64, 1, 0, 0, 2, 3, 4, 5, 0, 3, 4))},
		{"BatchNorm", f16, first(planBatchNorm("cuda:0", backend.BatchNormArgs{Dtype: f16}))},
		{"BatchNorm", f16, first(planBatchNorm("cuda:0", backend.BatchNormArgs{Dtype: dtypes.Float32, Batch: 2, Length: 2, Channels: 1, Training: true, Weight: st(f16), StatDtype: dtypes.Float32}))},
		{"BatchNorm", dtypes.Int32, first(planBatchNorm("cuda:0", backend.BatchNormArgs{Dtype: dtypes.Float32, Batch: 2, Length: 2, Channels: 1, Training: true, StatDtype: dtypes.Int32}))},
		{"BatchNormBackward", dtypes.Bool, first(planBatchNormBackward("cuda:0", backend.BatchNormBackwardArgs{Dtype: dtypes.Bool}))},
		{"NLLLoss", f16, first(planNLLLoss("cuda:0", f16, 1, 2, 3, dtypes.Int64, 4, 5))},
		{"Adam", f16, first(planAdam("cuda:0", f16, 1, 2, 3, 4, 5, ops.AdamScalars{Step: 1}))},
		{"Gather", dtypes.Dtype(42), first(planGather("cuda:0", []int{1}, 0, st(dtypes.Dtype(42)), st(dtypes.Dtype(42)), st(dtypes.Int64)))},
		{"ScatterAdd", dtypes.Int64, first(planScatterAdd("cuda:0", []int{1}, 0, st(dtypes.Int64), st(dtypes.Int64), st(dtypes.Int64)))},
	} {
		var ue *backend.UnsupportedError
		if !errors.As(c.err, &ue) {
			t.Errorf("%s of %v: %v, want an UnsupportedError", c.op, c.dt, c.err)
			continue
		}
		assert.Equal(t, backend.UnsupportedError{Backend: "cuda:0", Op: c.op, Dtype: c.dt}, *ue)
	}
}

func TestPlanGeometry(t *testing.T) {
	const f32 = dtypes.Float32
	p, err := planSoftmax("cuda:0", f32, 1<<40, 2<<40, 3, 1000, true)
	require.NoError(t, err)
	assert.Equal(t, []step{{"softmax", 3}}, p.steps)
	assert.Equal(t, program{fam: famSoftmax, op: 1, out: f32, in: f32}, p.prog)
	assert.Equal(t, []span{{"src", 2 << 40, 12000}, {"dst", 1 << 40, 12000}}, p.spans)

	p, err = planSoftmax("cuda:0", f32, 1, 2, 1<<20, 2, false)
	require.NoError(t, err)
	assert.Equal(t, []step{{"softmax", maxBlocks}}, p.steps, "at most maxBlocks blocks; the kernel loops over the rest")

	for _, empty := range [][2]int{{0, 5}, {5, 0}} {
		p, err := planSoftmax("cuda:0", f32, 0, 0, empty[0], empty[1], false)
		require.NoError(t, err)
		assert.Empty(t, p.steps, "softmax of %v launches nothing", empty)
	}

	// LayerNorm backward: dx row by row, dw and db over tiles of 32 columns.
	lb, err := planLayerNormBackward("cuda:0", f32, 1, 2, 3, 4, 5, 6, 7, 0, 10, 100)
	require.NoError(t, err)
	assert.Equal(t, []step{{"layer_norm_backward_rows", 10}, {"layer_norm_backward_cols", 4}}, lb.steps)
	lb, err = planLayerNormBackward("cuda:0", f32, 0, 2, 0, 4, 5, 6, 7, 0, 10, 100)
	require.NoError(t, err)
	assert.Equal(t, []step{{"layer_norm_backward_cols", 4}}, lb.steps, "no dx wanted")
	lb, err = planLayerNormBackward("cuda:0", f32, 1, 0, 0, 4, 5, 6, 7, 0, 10, 100)
	require.NoError(t, err)
	assert.Equal(t, []step{{"layer_norm_backward_rows", 10}}, lb.steps, "no dw or db wanted")
	lb, err = planLayerNormBackward("cuda:0", f32, 1, 2, 3, 0, 0, 0, 0, 0, 0, 100)
	require.NoError(t, err)
	assert.Equal(t, []step{{"layer_norm_backward_cols", 4}}, lb.steps, "no rows: dw and db are zeroed")

	bn, err := planBatchNorm("cuda:0", backend.BatchNormArgs{Dtype: f32, Y: 1, X: 2, Batch: 4, Channels: 70000, Length: 3, Training: true, StatDtype: f32})
	require.NoError(t, err)
	assert.Equal(t, []step{{"batch_norm", maxBlocks}}, bn.steps)
	bn, err = planBatchNorm("cuda:0", backend.BatchNormArgs{Dtype: f32, Batch: 4, Channels: 0, Length: 3, Training: true, StatDtype: f32})
	require.NoError(t, err)
	assert.Empty(t, bn.steps)

	nll, err := planNLLLoss("cuda:0", f32, 1, 0, 0, dtypes.Int32, 0, 10)
	require.NoError(t, err)
	assert.Equal(t, []step{{"nll_loss", 1}}, nll.steps, "no rows still writes the NaN mean")

	ad, err := planAdam("cuda:0", dtypes.Float64, 1, 2, 3, 4, 1000, ops.AdamScalars{Beta1: 0.9, Beta2: 0.999, LR: 0.1, Step: 2})
	require.NoError(t, err)
	assert.Equal(t, []step{{"adam", 4}}, ad.steps)
	assert.Equal(t, 0.1/(1-math.Pow(0.9, 2)), ad.args.stepSize) // as kernels.AdamUpdate
	assert.Equal(t, math.Sqrt(1-math.Pow(0.999, 2)), ad.args.bc2Sqrt)
	assert.Equal(t, int64(0), ad.args.l2+ad.args.adamW)

	// Gather: one thread per element; src's stride along dim leaves the
	// layout for src_step, and its span is its first slice along dim.
	g, err := planGather("cuda:0", []int{4, 3}, 1,
		backend.Strided{Addr: 1 << 40, Dtype: dtypes.Float16, Strides: []int{3, 1}},
		backend.Strided{Addr: 2 << 40, Dtype: dtypes.Float16, Strides: []int{10, 1}},
		backend.Strided{Addr: 3 << 40, Dtype: dtypes.Int64, Strides: []int{3, 1}})
	require.NoError(t, err)
	assert.Equal(t, "gather_float16_int64", g.prog.String())
	assert.Equal(t, []step{{"gather", 1}}, g.steps)
	assert.Equal(t, int64(12), g.args.n)
	assert.Equal(t, int64(1), g.args.srcStep)
	assert.Equal(t, span{"src", 2 << 40, (3*10 + 1) * 2}, g.spans[2])

	s, err := planScatterAdd("cuda:0", []int{5, 7, 3}, 1,
		backend.Strided{Addr: 1, Dtype: dtypes.Float64, Strides: []int{40, 4, 1}},
		backend.Strided{Addr: 2, Dtype: dtypes.Int32, Strides: []int{21, 3, 1}},
		backend.Strided{Addr: 3, Dtype: dtypes.Float64, Strides: []int{21, 3, 1}})
	require.NoError(t, err)
	assert.Equal(t, int64(15), s.args.n, "one thread per line along dim")
	assert.Equal(t, [4]int64{7, 4, 3, 3}, [4]int64{s.args.lineLen, s.args.dstStep, s.args.srcStep, s.args.indexStep})
	assert.Equal(t, span{"dst", 1, (4*40 + 2 + 1) * 8}, s.spans[2])
}

func TestRowProgramSources(t *testing.T) {
	n := map[family]int{}
	for _, p := range allPrograms() {
		if _, ok := rowFamilies[p.fam]; !ok {
			continue
		}
		n[p.fam]++
		src, entries, err := p.source()
		require.NoError(t, err, p.String())
		assert.Equal(t, rowFamilies[p.fam].entries, entries)
		name := strings.TrimSuffix(strings.SplitN(p.String(), "_float", 2)[0], "_")
		if p.fam == famGather {
			name = "gather"
		}
		assert.Contains(t, src, "#define KERNEL_"+strings.ToUpper(name)+" 1\n", p.String())
		assert.Contains(t, src, "#define GO_ARGS_LAYOUT GO_FIELD(Args, ", p.String())
		if p.fam.indexed() {
			assert.Contains(t, src, "#define TINDEX ", p.String())
		}
	}
	for f := range rowFamilies {
		assert.Positive(t, n[f], "family %s has no program in allPrograms", rowFamilies[f].name)
	}
	for _, c := range []struct {
		p    program
		want string
	}{
		{program{fam: famGather, out: dtypes.BFloat16, in: dtypes.Int32}, "#define T unsigned short\n#define BLOCK 256\n#define TINDEX int\n"},
		{program{fam: famNLLLoss, out: dtypes.Float64, in: dtypes.Int64}, "#define T double\n#define BLOCK 256\n#define TINDEX long long\n"},
		{program{fam: famLayerNormBackward, out: dtypes.Float32, in: dtypes.Float32}, "#define COLS 32\n"},
	} {
		src, _, err := c.p.source()
		require.NoError(t, err)
		assert.Contains(t, src, c.want, c.p.String())
	}
	for _, bad := range []program{
		{fam: famSoftmax, out: dtypes.Float32, in: dtypes.Float64},
		{fam: famNLLLoss, out: dtypes.Float32, in: dtypes.Float32},
		{fam: famScatterAdd, out: dtypes.Int64, in: dtypes.Int64},
		{fam: famGather, out: dtypes.Dtype(42), in: dtypes.Int64},
	} {
		_, _, err := bad.source()
		assert.Error(t, err, bad.String())
	}
	assert.Equal(t, "one_minus_beta1", snakeCase("oneMinusBeta1"))
	assert.Equal(t, "bc2_sqrt", snakeCase("bc2Sqrt"))
}

// TestNVRTCChecksTheArgsLayout: a Go twin whose field changes size no
// longer compiles.
func TestNVRTCChecksTheArgsLayout(t *testing.T) {
	p := program{fam: famSoftmax, out: dtypes.Float32, in: dtypes.Float32}
	src, _, err := p.source()
	require.NoError(t, err)
	broken := strings.Replace(src, "GO_FIELD(Args, rows, 16, 8)", "GO_FIELD(Args, rows, 16, 4)", 1)
	require.NotEqual(t, src, broken)
	_, log, err := nvrtcCompile("broken.cu", broken, compileOptions(oldestArch))
	require.Error(t, err)
	assert.Contains(t, log, "Args.rows does not match its Go twin")
}

// TestPTXRoundsLikeGo: Adam's bit-for-bit claim rests on IEEE division and
// square root and on no contraction into fused multiply-adds; LayerNorm's
// affine step is the one explicit fma, as kernels.normRow32.
func TestPTXRoundsLikeGo(t *testing.T) {
	ptx := func(p program) string {
		src, _, err := p.source()
		require.NoError(t, err)
		out, log, err := nvrtcCompile(p.String()+".cu", src, compileOptions(oldestArch))
		require.NoError(t, err, log)
		return out
	}
	has := func(what, ptx, instr string, want bool) {
		t.Helper()
		if strings.Contains(ptx, instr) != want {
			t.Errorf("%s: PTX has %s: %v, want %v", what, instr, !want, want)
		}
	}
	adam := ptx(program{fam: famAdam, out: dtypes.Float32, in: dtypes.Float32})
	has("adam_float32", adam, "sqrt.rn.f32", true)
	has("adam_float32", adam, "div.rn.f32", true)
	for _, no := range []string{"fma.", ".approx", ".ftz"} {
		has("adam_float32", adam, no, false)
	}
	adam64 := ptx(program{fam: famAdam, out: dtypes.Float64, in: dtypes.Float64})
	has("adam_float64", adam64, "sqrt.rn.f64", true)
	has("adam_float64", adam64, "fma.", false)
	has("layer_norm_float32", ptx(program{fam: famLayerNorm, out: dtypes.Float32, in: dtypes.Float32}), "fma.rn.f32", true)
}

func TestExtentSaturates(t *testing.T) {
	assert.Equal(t, int64(13), extent([]int{2, 3}, []int{10, 1}))
	assert.Equal(t, int64(0), extent([]int{2, 0}, []int{1 << 62, 1}))
	assert.Equal(t, int64(maxElems), extent([]int{3, 1 << 20}, []int{1 << 61, 1 << 40}), "an overflowing span is one no allocation holds")
	g, err := planGather("cuda:0", []int{4, 3}, 0,
		backend.Strided{Addr: 1, Dtype: dtypes.Float64, Strides: []int{math.MaxInt / 2, 1}},
		backend.Strided{Addr: 2, Dtype: dtypes.Float64, Strides: []int{3, 1}},
		backend.Strided{Addr: 3, Dtype: dtypes.Int64, Strides: []int{3, 1}})
	require.NoError(t, err)
	assert.Equal(t, span{"dst", 1, maxElems * 8}, g.spans[0])
}

func TestPlanCSR(t *testing.T) {
	f32 := dtypes.Float32
	a := backend.CSR{Values: 1, ColIndices: 2, RowOffsets: 3, Index: dtypes.Int32, Rows: 4, Cols: 5, NNZ: 6}
	with := func(f func(*backend.CSR)) backend.CSR {
		c := a
		f(&c)
		return c
	}
	first := func(_ any, err error) error { return err }
	for _, c := range []struct {
		name string
		err  error
		want string
	}{
		{"float indices", first(planCSR("cuda:0", "CSRMatmul", f32, with(func(c *backend.CSR) { c.Index = f32 }), 7, 0, 8, 2)), "indices must be int64 or int32"},
		{"negative rows", first(planCSR("cuda:0", "CSRMatmul", f32, with(func(c *backend.CSR) { c.Rows = -1 }), 7, 0, 8, 2)), "negative size"},
		{"negative n", first(planCSR("cuda:0", "CSRMatmulT", f32, a, 7, 0, 8, -2)), "negative size"},
		{"overflow", first(planCSR("cuda:0", "CSRMatmul", f32, with(func(c *backend.CSR) { c.Rows = math.MaxInt / 2 }), 7, 0, 8, 4)), "overflow"},
		{"no values", first(planCSR("cuda:0", "CSRMatmul", f32, with(func(c *backend.CSR) { c.Values = 0 }), 7, 0, 8, 2)), "values has address 0"},
		{"no offsets", first(planCSR("cuda:0", "CSRMatmulT", f32, with(func(c *backend.CSR) { c.RowOffsets = 0 }), 7, 0, 8, 2)), "row_offsets has address 0"},
		{"no columns", first(planCSR("cuda:0", "CSRSampledDot", f32, with(func(c *backend.CSR) { c.ColIndices = 0 }), 7, 9, 8, 2)), "col_indices has address 0"},
		{"sampled dot no b", first(planCSR("cuda:0", "CSRSampledDot", f32, a, 7, 0, 8, 2)), "b has address 0"},
		{"matmul no out", first(planCSR("cuda:0", "CSRMatmul", f32, a, 7, 0, 0, 2)), "out has address 0"},
		{"not a product", first(planCSR("cuda:0", "Gemm", f32, a, 7, 0, 8, 2)), "not a sparse product"},
	} {
		if c.err == nil || !strings.Contains(c.err.Error(), c.want) || !strings.HasPrefix(c.err.Error(), "cuda: cuda:0: ") {
			t.Errorf("%s: %v, want an error with %q", c.name, c.err, c.want)
		}
	}
	var ue *backend.UnsupportedError
	if err := first(planCSR("cuda:0", "CSRMatmul", dtypes.Float16, a, 7, 0, 8, 2)); !errors.As(err, &ue) || ue.Op != "CSRMatmul" {
		t.Errorf("float16: %v, want an UnsupportedError", err)
	}

	// One block per row of a (per column for the transposed product);
	// spans cover what each kernel reads and writes; nothing to write is
	// nothing to launch, and no entries needs no values or columns.
	p, err := planCSR("cuda:0", "CSRMatmul", f32, a, 7, 0, 8, 2)
	require.NoError(t, err)
	assert.Equal(t, []step{{"csr_matmul", 4}}, p.steps)
	assert.Equal(t, program{fam: famCSR, out: f32, in: dtypes.Int32}, p.prog)
	assert.ElementsMatch(t, []span{{"row_offsets", 3, 5 * 4}, {"col_indices", 2, 6 * 4}, {"out", 8, 4 * 2 * 4}, {"b", 7, 5 * 2 * 4}, {"values", 1, 6 * 4}}, p.spans)
	p, err = planCSR("cuda:0", "CSRMatmulT", dtypes.Float64, with(func(c *backend.CSR) { c.Cols = 70000 }), 7, 0, 8, 2)
	require.NoError(t, err)
	assert.Equal(t, []step{{"csr_matmul_t", maxBlocks}}, p.steps)
	p, err = planCSR("cuda:0", "CSRSampledDot", f32, with(func(c *backend.CSR) { c.Values = 0 }), 7, 9, 8, 2)
	require.NoError(t, err)
	assert.Equal(t, []step{{"csr_sampled_dot", 4}}, p.steps)
	assert.ElementsMatch(t, []span{{"row_offsets", 3, 5 * 4}, {"col_indices", 2, 6 * 4}, {"out", 8, 6 * 4}, {"g", 7, 4 * 2 * 4}, {"b", 9, 5 * 2 * 4}}, p.spans)
	p, err = planCSR("cuda:0", "CSRSampledDot", f32, backend.CSR{RowOffsets: 3, Index: dtypes.Int64, Rows: 4, Cols: 5}, 7, 9, 0, 2)
	require.NoError(t, err)
	assert.Empty(t, p.steps, "no entries: nothing to write")
	p, err = planCSR("cuda:0", "CSRMatmul", f32, backend.CSR{RowOffsets: 3, Index: dtypes.Int64, Rows: 4, Cols: 5}, 7, 0, 8, 2)
	require.NoError(t, err)
	assert.Equal(t, []step{{"csr_matmul", 4}}, p.steps, "no entries: out is zeroed")
	assert.ElementsMatch(t, []span{{"row_offsets", 3, 5 * 8}, {"out", 8, 4 * 2 * 4}, {"b", 7, 5 * 2 * 4}}, p.spans)
}
