//go:build nvrtc

package cuda

// The Go side of the elementwise kernels without a GPU: which calls are
// refused (and how), and what a plan launches over which spans.

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpumem/course/gpukit/device/backend"
	"github.com/gpumem/course/gpukit/dtypes"
	"github.com/gpumem/course/gpukit/ops"
)

func TestElementwisePlansRejectBadArguments(t *testing.T) {
	const f32, f64, f16, b8 = dtypes.Float32, dtypes.Float64, dtypes.Float16, dtypes.Bool
	st := func(addr uint64, dt dtypes.Dtype) backend.Strided {
		return backend.Strided{Addr: addr, Dtype: dt, Strides: []int{3, 1}}
	}
	shape := []int{2, 3}
	first := func(_ any, err error) error { return err }
	f32b := st(3, f32)
	for _, c := range []struct {
		name, want string
		err        error
	}{
		{"unary dtypes differ", "dtypes differ (float32 from float64); use Copy", first(planUnary("cuda:0", ops.Exp, shape, st(1, f32), st(2, f64)))},
		{"unknown unary op", "unknown UnaryOp(200)", first(planUnary("cuda:0", ops.Unary(200), shape, st(1, f32), st(2, f32)))},
		{"unknown binary op", "unknown BinaryOp(99)", first(planBinary("cuda:0", ops.Binary(99), shape, st(1, f32), st(2, f32), &f32b, 0, false))},
		{"binary operands differ", "dtypes differ (float16 op float32)", first(planBinary("cuda:0", ops.Add, shape, st(1, f16), st(2, f16), &f32b, 0, false))},
		{"arithmetic into bool", "dst is bool for float32 operands (only a comparison may write bool)", first(planBinary("cuda:0", ops.Add, shape, st(1, b8), st(2, f32), &f32b, 0, false))},
		{"comparison into float64", "dst is float64 for float32 operands", first(planBinary("cuda:0", ops.Less, shape, st(1, f64), st(2, f32), nil, 1, false))},
		{"where cond", "cond is float32, not bool", first(planWhere("cuda:0", shape, st(1, f32), st(2, f32), st(3, f32), st(4, f32)))},
		{"where dtypes", "dtypes differ (float32 = cond ? float32 : float16)", first(planWhere("cuda:0", shape, st(1, f32), st(2, b8), st(3, f32), st(4, f16)))},
		{"in range dst", "dst is float32, not bool", first(planInRange("cuda:0", shape, st(1, f32), st(2, f32), 0, 1))},
		{"unknown dtype", "unknown", first(planCopy("cuda:0", shape, st(1, f32), st(2, dtypes.Dtype(42))))},
		{"unknown fill dtype", "unknown", first(planFill("cuda:0", shape, st(1, dtypes.Dtype(42)), 1))},
		{"strides", "operand 1 has 1 strides for shape [2 3]", first(planCopy("cuda:0", shape, st(1, f32), backend.Strided{Addr: 2, Dtype: f32, Strides: []int{1}}))},
		{"negative stride", "negative stride", first(planFill("cuda:0", shape, backend.Strided{Addr: 1, Dtype: f32, Strides: []int{-3, 1}}, 0))},
	} {
		if assert.Error(t, c.err, c.name) {
			assert.Contains(t, c.err.Error(), c.want, c.name)
			assert.Contains(t, c.err.Error(), "cuda: cuda:0: ", c.name)
			var ue *backend.UnsupportedError
			assert.False(t, errors.As(c.err, &ue), "%s: a bad call is not an UnsupportedError", c.name)
		}
	}
}

func TestElementwisePlansReportUnsupportedDtypes(t *testing.T) {
	b8 := backend.Strided{Addr: 1, Dtype: dtypes.Bool, Strides: []int{1}}
	first := func(_ any, err error) error { return err }
	for _, c := range []struct {
		op  string
		err error
	}{
		{"Neg", first(planUnary("cuda:0", ops.Neg, []int{4}, b8, b8))},
		{"Equal", first(planBinary("cuda:0", ops.Equal, []int{4}, b8, b8, &b8, 0, false))},
		{"Add", first(planBinary("cuda:0", ops.Add, []int{4}, b8, b8, nil, 1, true))},
	} {
		var ue *backend.UnsupportedError
		if assert.True(t, errors.As(c.err, &ue), "%s on bool: %v", c.op, c.err) {
			assert.Equal(t, backend.UnsupportedError{Backend: "cuda:0", Op: c.op, Dtype: dtypes.Bool}, *ue)
		}
	}
}

func TestElementwisePlanGeometry(t *testing.T) {
	const f32, f16 = dtypes.Float32, dtypes.Float16
	// A transposed float16 source into a dense float32 destination.
	p, err := planCopy("cuda:0", []int{300, 2}, backend.Strided{Addr: 1 << 40, Dtype: f32, Strides: []int{2, 1}},
		backend.Strided{Addr: 2 << 40, Dtype: f16, Strides: []int{1, 300}})
	require.NoError(t, err)
	assert.Equal(t, program{fam: famConvert, out: f32, in: f32}, p.prog)
	assert.Equal(t, []step{{"copy_from_float16", 3}}, p.steps)
	assert.Equal(t, []span{{"operand 0", 1 << 40, 2400}, {"operand 1", 2 << 40, 1200}}, p.spans)
	assert.Equal(t, int64(2), p.args.l.ndim, "a transpose does not merge")

	// Comparisons into bool, with the scalar on either side.
	for _, c := range []struct {
		first bool
		mode  int64
	}{{false, 1}, {true, 2}} {
		p, err = planBinary("cuda:0", ops.GreaterEqual, []int{5}, backend.Strided{Addr: 1, Dtype: dtypes.Bool, Strides: []int{1}},
			backend.Strided{Addr: 2, Dtype: dtypes.Int32, Strides: []int{1}}, nil, 0.5, c.first)
		require.NoError(t, err)
		assert.Equal(t, program{fam: famBinary, out: dtypes.Bool, in: dtypes.Int32}, p.prog)
		assert.Equal(t, "binary_int32_bool", p.prog.String())
		assert.Equal(t, []step{{"binary_greaterequal", 1}}, p.steps)
		assert.Equal(t, c.mode, p.args.scalarMode)
		assert.Equal(t, 0.5, p.args.scalar)
		assert.Equal(t, []span{{"operand 0", 1, 5}, {"operand 1", 2, 20}}, p.spans)
	}

	// Where: four operands, cond and b broadcast.
	p, err = planWhere("cuda:0", []int{4, 3}, backend.Strided{Addr: 1, Dtype: f16, Strides: []int{3, 1}},
		backend.Strided{Addr: 2, Dtype: dtypes.Bool, Strides: []int{0, 1}},
		backend.Strided{Addr: 3, Dtype: f16, Strides: []int{3, 1}}, backend.Strided{Addr: 4, Dtype: f16, Strides: []int{0, 0}})
	require.NoError(t, err)
	assert.Equal(t, []step{{"where", 1}}, p.steps)
	assert.Equal(t, []span{{"operand 0", 1, 24}, {"operand 1", 2, 3}, {"operand 2", 3, 24}, {"operand 3", 4, 2}}, p.spans)
	assert.Equal(t, [4]uint64{1, 2, 3, 4}, [4]uint64{p.args.out, p.args.a, p.args.b, p.args.c})

	p, err = planInRange("cuda:0", []int{7}, backend.Strided{Addr: 1, Dtype: dtypes.Bool, Strides: []int{1}}, backend.Strided{Addr: 2, Dtype: f16, Strides: []int{1}}, -1, 2)
	require.NoError(t, err)
	assert.Equal(t, program{fam: famInRange, out: dtypes.Bool, in: f16}, p.prog)
	assert.Equal(t, [2]float64{-1, 2}, [2]float64{p.args.scalar, p.args.scalar2})

	p, err = planFill("cuda:0", []int{3, 0}, backend.Strided{Addr: 1, Dtype: dtypes.Int64, Strides: []int{0, 1}}, 7)
	require.NoError(t, err)
	assert.Empty(t, p.steps, "an empty fill launches nothing")
	assert.Empty(t, p.spans)

	p, err = planUnary("cuda:0", ops.Sign, []int{1 << 30}, backend.Strided{Addr: 1, Dtype: f16, Strides: []int{1}}, backend.Strided{Addr: 2, Dtype: f16, Strides: []int{1}})
	require.NoError(t, err)
	assert.Equal(t, []step{{"unary_sign", maxBlocks}}, p.steps, "at most maxBlocks blocks; the kernel loops over the rest")
}
