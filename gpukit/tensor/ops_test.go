package tensor_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpumem/course/gpukit/tensor"
	"github.com/gpumem/course/gpukit/tensor/gradcheck"
)

// TestGradcheck checks every differentiable op against finite differences.
func TestGradcheck(t *testing.T) {
	dev := newDev(t)
	g := tensor.NewGenerator(42)
	randn := func(shape ...int) *tensor.Tensor {
		return tensor.Randn(shape, tensor.On(dev), tensor.Float64, tensor.WithGenerator(g), tensor.RequiresGrad())
	}
	pos := func(shape ...int) *tensor.Tensor { // positive values, for Log and Div
		r := tensor.Rand(shape, tensor.On(dev), tensor.Float64, tensor.WithGenerator(g))
		defer r.Release()
		return r.Add(0.5).Detach().SetRequiresGrad(true)
	}
	i64 := func(data []int64, shape ...int) *tensor.Tensor { return tensor.FromSlice(data, shape, tensor.On(dev)) }
	rowIdx := i64([]int64{2, 0, 2}, 3)                 // repeated index: gradients accumulate
	gatherIdx := i64([]int64{1, 0, 2, 2, 0, 1}, 2, 3)  // into [3, 4] along dim 0
	scatterIdx := i64([]int64{0, 2, 0, 1, 1, 1}, 2, 3) // into [3, 4] along dim 0, src [2, 4]
	targets := i64([]int64{1, 0, 3}, 3)                // classes of a [3, 4] batch
	cond := tensor.FromSlice([]bool{true, false, false, true, true, false}, []int{2, 3}, tensor.On(dev))
	type fn = gradcheck.Func
	tests := []struct {
		name   string
		f      fn
		inputs func() []*tensor.Tensor
	}{
		{"Add", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Add(in[1]) }, func() []*tensor.Tensor { return []*tensor.Tensor{randn(2, 3), randn(2, 3)} }},
		{"Add broadcast", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Add(in[1]) }, func() []*tensor.Tensor { return []*tensor.Tensor{randn(2, 1, 3), randn(4, 1)} }},
		{"Add scalar", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Add(2.5) }, func() []*tensor.Tensor { return []*tensor.Tensor{randn(3)} }},
		{"Sub broadcast", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Sub(in[1]) }, func() []*tensor.Tensor { return []*tensor.Tensor{randn(3), randn(2, 3)} }},
		{"Mul broadcast", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Mul(in[1]) }, func() []*tensor.Tensor { return []*tensor.Tensor{randn(2, 3), randn(1, 3)} }},
		{"Mul self", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Mul(in[0]) }, func() []*tensor.Tensor { return []*tensor.Tensor{randn(4)} }},
		{"Mul scalar", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Mul(-3) }, func() []*tensor.Tensor { return []*tensor.Tensor{randn(4)} }},
		{"Div", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Div(in[1]) }, func() []*tensor.Tensor { return []*tensor.Tensor{randn(2, 3), pos(3)} }},
		{"Div scalar", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Div(4) }, func() []*tensor.Tensor { return []*tensor.Tensor{randn(3)} }},
		{"Neg", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Neg() }, func() []*tensor.Tensor { return []*tensor.Tensor{randn(3)} }},
		{"Pow 3", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Pow(3) }, func() []*tensor.Tensor { return []*tensor.Tensor{randn(2, 2)} }},
		{"Pow 0.5", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Pow(0.5) }, func() []*tensor.Tensor { return []*tensor.Tensor{pos(3)} }},
		{"Exp", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Exp() }, func() []*tensor.Tensor { return []*tensor.Tensor{randn(2, 3)} }},
		{"Log", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Log() }, func() []*tensor.Tensor { return []*tensor.Tensor{pos(2, 3)} }},
		{"Relu", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Relu() }, func() []*tensor.Tensor { return []*tensor.Tensor{randn(10)} }},
		{"Sum all", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Sum() }, func() []*tensor.Tensor { return []*tensor.Tensor{randn(2, 3)} }},
		{"Sum dim", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Sum(1) }, func() []*tensor.Tensor { return []*tensor.Tensor{randn(2, 3, 4)} }},
		{"Sum keepdim", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].SumDims([]int{0, 2}, true) }, func() []*tensor.Tensor { return []*tensor.Tensor{randn(2, 3, 4)} }},
		{"Mean", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Mean(-1) }, func() []*tensor.Tensor { return []*tensor.Tensor{randn(3, 4)} }},
		{"Mean keepdim", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].MeanDims(nil, true) }, func() []*tensor.Tensor { return []*tensor.Tensor{randn(3, 4)} }},
		{"Matmul 2d", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Matmul(in[1]) }, func() []*tensor.Tensor { return []*tensor.Tensor{randn(3, 4), randn(4, 2)} }},
		{"Matmul batched", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Matmul(in[1]) }, func() []*tensor.Tensor { return []*tensor.Tensor{randn(2, 3, 4), randn(2, 4, 5)} }},
		{"Matmul broadcast", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Matmul(in[1]) }, func() []*tensor.Tensor { return []*tensor.Tensor{randn(2, 1, 3, 4), randn(3, 4, 2)} }},
		{"Matmul transposed", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].T().Matmul(in[1].T()) }, func() []*tensor.Tensor { return []*tensor.Tensor{randn(4, 3), randn(2, 4)} }},
		{"View", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].View(3, 2).Mul(in[0].View(3, 2)) }, func() []*tensor.Tensor { return []*tensor.Tensor{randn(2, 3)} }},
		{"Reshape copy", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].T().Reshape(-1).Exp() }, func() []*tensor.Tensor { return []*tensor.Tensor{randn(2, 3)} }},
		{"Permute", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Permute(2, 0, 1).Pow(2) }, func() []*tensor.Tensor { return []*tensor.Tensor{randn(2, 3, 4)} }},
		{"Narrow", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Narrow(1, 1, 2).Exp() }, func() []*tensor.Tensor { return []*tensor.Tensor{randn(2, 4)} }},
		{"Slice step", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Slice(0, 1, 6, 2).Pow(2) }, func() []*tensor.Tensor { return []*tensor.Tensor{randn(6, 2)} }},
		{"Select", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Select(1, 2).Pow(2) }, func() []*tensor.Tensor { return []*tensor.Tensor{randn(2, 3)} }},
		{"Expand", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Expand(4, 2, 3).Pow(2) }, func() []*tensor.Tensor { return []*tensor.Tensor{randn(2, 1)} }},
		{"Squeeze", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Squeeze().Unsqueeze(0).Pow(2) }, func() []*tensor.Tensor { return []*tensor.Tensor{randn(2, 1, 3)} }},
		{"Flatten", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Flatten(0, 1).Exp() }, func() []*tensor.Tensor { return []*tensor.Tensor{randn(2, 3, 2)} }},
		{"Clone", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Clone().Pow(2) }, func() []*tensor.Tensor { return []*tensor.Tensor{randn(3)} }},
		{"Contiguous", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Contiguous().Pow(2) }, func() []*tensor.Tensor { return []*tensor.Tensor{randn(3)} }},
		{"To host", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].ToHost(false, false).Pow(2) }, func() []*tensor.Tensor { return []*tensor.Tensor{randn(3)} }},
		{"in-place non-leaf", func(in []*tensor.Tensor) *tensor.Tensor {
			y := in[0].Pow(2)
			y.AddInPlace(in[1])
			return y.MulInPlace(in[1])
		}, func() []*tensor.Tensor { return []*tensor.Tensor{randn(2, 3), randn(3)} }},
		// nn and index ops
		{"IndexSelect dim0", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].IndexSelect(0, rowIdx) }, func() []*tensor.Tensor { return []*tensor.Tensor{randn(3, 4)} }},
		{"IndexSelect dim1", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].T().IndexSelect(1, rowIdx) }, func() []*tensor.Tensor { return []*tensor.Tensor{randn(3, 2)} }},
		{"Dropout", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Dropout(0.4, true, tensor.NewGenerator(7)) }, func() []*tensor.Tensor { return []*tensor.Tensor{randn(4, 5)} }},
		{"MSELoss", func(in []*tensor.Tensor) *tensor.Tensor { return tensor.MSELoss(in[0], in[1]) }, func() []*tensor.Tensor { return []*tensor.Tensor{randn(2, 3), randn(2, 3)} }},
		{"CrossEntropy", func(in []*tensor.Tensor) *tensor.Tensor { return tensor.CrossEntropy(in[0], targets) }, func() []*tensor.Tensor { return []*tensor.Tensor{randn(3, 4)} }},
		{"CrossEntropy transposed", func(in []*tensor.Tensor) *tensor.Tensor { return tensor.CrossEntropy(in[0].T(), targets) }, func() []*tensor.Tensor { return []*tensor.Tensor{randn(4, 3)} }},
		{"Softmax", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Softmax(-1) }, func() []*tensor.Tensor { return []*tensor.Tensor{randn(3, 4)} }},
		{"Softmax dim0", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Softmax(0) }, func() []*tensor.Tensor { return []*tensor.Tensor{randn(3, 2, 2)} }},
		{"LogSoftmax", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].LogSoftmax(1) }, func() []*tensor.Tensor { return []*tensor.Tensor{randn(2, 5)} }},
		// unary and elementwise
		{"Sqrt", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Sqrt() }, func() []*tensor.Tensor { return []*tensor.Tensor{pos(2, 3)} }},
		{"Abs", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Abs() }, func() []*tensor.Tensor { return []*tensor.Tensor{randn(2, 3)} }},
		{"Sigmoid", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Sigmoid() }, func() []*tensor.Tensor { return []*tensor.Tensor{randn(2, 3)} }},
		{"Tanh", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Tanh() }, func() []*tensor.Tensor { return []*tensor.Tensor{randn(2, 3)} }},
		{"Gelu", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Gelu() }, func() []*tensor.Tensor { return []*tensor.Tensor{randn(2, 3)} }},
		{"Clamp", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Clamp(-0.5, 0.7) }, func() []*tensor.Tensor { return []*tensor.Tensor{randn(3, 4)} }},
		{"Maximum broadcast", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Maximum(in[1]) }, func() []*tensor.Tensor { return []*tensor.Tensor{randn(2, 3), randn(3)} }},
		{"Minimum", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Minimum(in[1]) }, func() []*tensor.Tensor { return []*tensor.Tensor{randn(2, 3), randn(2, 3)} }},
		{"Where", func(in []*tensor.Tensor) *tensor.Tensor { return tensor.Where(cond, in[0], in[1]) }, func() []*tensor.Tensor { return []*tensor.Tensor{randn(2, 3), randn(3)} }},
		// reductions
		{"Max dim", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Max(1, false) }, func() []*tensor.Tensor { return []*tensor.Tensor{randn(3, 4)} }},
		{"Max keepdim", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Max(0, true) }, func() []*tensor.Tensor { return []*tensor.Tensor{randn(3, 2, 2)} }},
		{"Min transposed", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].T().Min(-1, false) }, func() []*tensor.Tensor { return []*tensor.Tensor{randn(4, 3)} }},
		{"Var unbiased", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Var([]int{1}, false, true) }, func() []*tensor.Tensor { return []*tensor.Tensor{randn(3, 4)} }},
		{"Var all biased keepdim", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Var(nil, true, false) }, func() []*tensor.Tensor { return []*tensor.Tensor{randn(2, 3)} }},
		{"Sum middle dims fast path", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Sum(1, 2) }, func() []*tensor.Tensor { return []*tensor.Tensor{randn(2, 3, 2, 2)} }},
		{"Sum split dims", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Sum(0, 2) }, func() []*tensor.Tensor { return []*tensor.Tensor{randn(2, 3, 2)} }},
		// gather, scatter, join
		{"Gather", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Gather(0, gatherIdx) }, func() []*tensor.Tensor { return []*tensor.Tensor{randn(3, 4)} }},
		{"ScatterAdd", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].ScatterAdd(0, scatterIdx, in[1]) }, func() []*tensor.Tensor { return []*tensor.Tensor{randn(3, 4), randn(2, 4)} }},
		{"Cat", func(in []*tensor.Tensor) *tensor.Tensor { return tensor.Cat([]*tensor.Tensor{in[0], in[1], in[0]}, 1) }, func() []*tensor.Tensor { return []*tensor.Tensor{randn(2, 2), randn(2, 3)} }},
		{"Stack", func(in []*tensor.Tensor) *tensor.Tensor { return tensor.Stack([]*tensor.Tensor{in[0], in[1].T()}, -1) }, func() []*tensor.Tensor { return []*tensor.Tensor{randn(2, 3), randn(3, 2)} }},
		// normalisation (native_layer_norm, native_batch_norm)
		{"LayerNorm", func(in []*tensor.Tensor) *tensor.Tensor { return tensor.LayerNorm(in[0], []int{4}, in[1], in[2], 1e-5) }, func() []*tensor.Tensor { return []*tensor.Tensor{randn(3, 4), randn(4), randn(4)} }},
		{"LayerNorm 2-d shape transposed", func(in []*tensor.Tensor) *tensor.Tensor {
			return tensor.LayerNorm(in[0].Transpose(1, 2), []int{3, 2}, in[1], nil, 1e-5)
		}, func() []*tensor.Tensor { return []*tensor.Tensor{randn(2, 2, 3), randn(3, 2)} }},
		{"LayerNorm no affine", func(in []*tensor.Tensor) *tensor.Tensor { return tensor.LayerNorm(in[0], []int{5}, nil, nil, 1e-5) }, func() []*tensor.Tensor { return []*tensor.Tensor{randn(2, 5)} }},
		{"BatchNorm train", func(in []*tensor.Tensor) *tensor.Tensor {
			return tensor.BatchNorm(in[0], in[1], in[2], nil, nil, true, 0.1, 1e-5)
		}, func() []*tensor.Tensor { return []*tensor.Tensor{randn(4, 3), randn(3), randn(3)} }},
		{"BatchNorm train 3-d", func(in []*tensor.Tensor) *tensor.Tensor {
			return tensor.BatchNorm(in[0], in[1], in[2], nil, nil, true, 0.1, 1e-5)
		}, func() []*tensor.Tensor { return []*tensor.Tensor{randn(2, 3, 4), randn(3), randn(3)} }},
		{"BatchNorm eval", func(in []*tensor.Tensor) *tensor.Tensor {
			rm := tensor.FromSlice([]float64{0.5, -1, 0}, []int{3}, tensor.On(dev))
			rv := tensor.FromSlice([]float64{2, 0.5, 1}, []int{3}, tensor.On(dev))
			return tensor.BatchNorm(in[0], in[1], in[2], rm, rv, false, 0.1, 1e-5)
		}, func() []*tensor.Tensor { return []*tensor.Tensor{randn(4, 3), randn(3), randn(3)} }},
		// in place on non-leaves
		{"SubInPlace", func(in []*tensor.Tensor) *tensor.Tensor {
			y := in[0].Mul(2)
			return y.SubInPlace(in[1])
		}, func() []*tensor.Tensor { return []*tensor.Tensor{randn(2, 3), randn(3)} }},
		{"DivInPlace", func(in []*tensor.Tensor) *tensor.Tensor {
			y := in[0].Mul(2)
			return y.DivInPlace(in[1]).Mul(in[0])
		}, func() []*tensor.Tensor { return []*tensor.Tensor{randn(2, 3), pos(2, 3)} }},
		{"ReluInPlace", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Mul(1).ReluInPlace().Pow(2) }, func() []*tensor.Tensor { return []*tensor.Tensor{randn(10)} }},
		{"ClampInPlace", func(in []*tensor.Tensor) *tensor.Tensor { return in[0].Add(0).ClampInPlace(-0.5, 0.5).Mul(in[0]) }, func() []*tensor.Tensor { return []*tensor.Tensor{randn(3, 4)} }},
		{"mlp", func(in []*tensor.Tensor) *tensor.Tensor {
			h := in[0].Matmul(in[1]).Add(in[2]).Relu()
			return h.Matmul(in[3]).Exp().Mean()
		}, func() []*tensor.Tensor { return []*tensor.Tensor{randn(4, 3), randn(3, 5), randn(5), randn(5, 2)} }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			gradcheck.Assert(t, tc.f, tc.inputs()...)
		})
	}
}

// The ToDtype case goes through float32, so it needs a looser tolerance;
// check it separately with explicit options.
func TestGradcheckFloat32RoundTrip(t *testing.T) {
	dev := newDev(t)
	x := tensor.FromSlice([]float64{0.5, -1, 2}, []int{3}, tensor.On(dev), tensor.RequiresGrad())
	err := gradcheck.Check(func(in []*tensor.Tensor) *tensor.Tensor {
		return in[0].ToDtype(tensor.Float32).Mul(2).ToDtype(tensor.Float64)
	}, []*tensor.Tensor{x}, gradcheck.Options{Eps: 1e-3, Atol: 1e-3, Rtol: 1e-2})
	require.NoError(t, err)
}

func TestGradcheckCatchesWrongGradient(t *testing.T) {
	dev := newDev(t)
	x := tensor.Randn([]int{3}, tensor.On(dev), tensor.Float64, tensor.RequiresGrad())
	// d/dx (x·detach(x)) is detach(x), not 2x: the checker must notice.
	err := gradcheck.Check(func(in []*tensor.Tensor) *tensor.Tensor {
		return in[0].Mul(in[0].Detach())
	}, []*tensor.Tensor{x}, gradcheck.Options{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "analytical gradient")
}

func TestForwardValues(t *testing.T) {
	dev := newDev(t)
	a := f64(dev, []float64{1, 2, 3, 4, 5, 6}, 2, 3)
	b := f64(dev, []float64{10, 20, 30}, 3)
	tests := []struct {
		name string
		got  *tensor.Tensor
		want []float64
	}{
		{"add bcast", a.Add(b), []float64{11, 22, 33, 14, 25, 36}},
		{"sub", a.Sub(1), []float64{0, 1, 2, 3, 4, 5}},
		{"mul", a.Mul(b), []float64{10, 40, 90, 40, 100, 180}},
		{"div", b.Div(10), []float64{1, 2, 3}},
		{"neg", b.Neg(), []float64{-10, -20, -30}},
		{"pow", a.Pow(2), []float64{1, 4, 9, 16, 25, 36}},
		{"exp", f64(dev, []float64{0, 1}, 2).Exp(), []float64{1, math.E}},
		{"log", f64(dev, []float64{1, math.E}, 2).Log(), []float64{0, 1}},
		{"relu", f64(dev, []float64{-1, 0, 2}, 3).Relu(), []float64{0, 0, 2}},
		{"sum", a.Sum(), []float64{21}},
		{"sum 0", a.Sum(0), []float64{5, 7, 9}},
		{"sum 1 keep", a.SumDims([]int{1}, true), []float64{6, 15}},
		{"mean", a.Mean(1), []float64{2, 5}},
		{"matmul", a.Matmul(f64(dev, []float64{1, 0, 0, 1, 1, 1}, 3, 2)), []float64{4, 5, 10, 11}},
		{"matmul T", a.Matmul(a.T()), []float64{14, 32, 32, 77}},
		// nn and index ops
		{"index_select 0", a.IndexSelect(0, i64s(dev, 1, 1, 0)), []float64{4, 5, 6, 4, 5, 6, 1, 2, 3}},
		{"index_select 1", a.IndexSelect(1, i64s(dev, 2, 0)), []float64{3, 1, 6, 4}},
		{"index_select 1-d", b.IndexSelect(0, i64s(dev, 2)), []float64{30}},
		{"mse", tensor.MSELoss(a, a.Add(f64(dev, []float64{1, -2, 0}, 3))), []float64{(1 + 4 + 0) * 2 / 6.0}},
		{"softmax", f64(dev, []float64{0, math.Log(3), 1000, 1000}, 2, 2).Softmax(1), []float64{0.25, 0.75, 0.5, 0.5}},
		{"softmax 0-d", tensor.Scalar(5, tensor.On(dev), tensor.Float64).Softmax(0), []float64{1}},
		{"log_softmax", f64(dev, []float64{0, math.Log(3)}, 2).LogSoftmax(0), []float64{math.Log(0.25), math.Log(0.75)}},
		// CE row 0: logits [0, ln 3], class 1: -ln(3/4); row 1: [1000, 1000], class 0: ln 2.
		{"cross_entropy", tensor.CrossEntropy(f64(dev, []float64{0, math.Log(3), 1000, 1000}, 2, 2), i64s(dev, 1, 0)), []float64{(-math.Log(0.75) + math.Ln2) / 2}},
		// unary and elementwise
		{"sqrt", f64(dev, []float64{4, 9}, 2).Sqrt(), []float64{2, 3}},
		{"abs", f64(dev, []float64{-2, 0, 3}, 3).Abs(), []float64{2, 0, 3}},
		{"sigmoid", f64(dev, []float64{0, math.Log(3)}, 2).Sigmoid(), []float64{0.5, 0.75}},
		{"tanh", f64(dev, []float64{0, math.Log(2)}, 2).Tanh(), []float64{0, 0.6}},
		{"gelu", f64(dev, []float64{0, 1, -1}, 3).Gelu(), []float64{0, 0.8413447460685429, -0.15865525393145707}},
		{"clamp", f64(dev, []float64{-2, 0.5, 3}, 3).Clamp(-1, 1), []float64{-1, 0.5, 1}},
		{"clamp lo>hi", f64(dev, []float64{-2, 3}, 2).Clamp(2, 1), []float64{1, 1}},
		{"maximum", a.Maximum(f64(dev, []float64{2, 2, 5}, 3)), []float64{2, 2, 5, 4, 5, 6}},
		{"minimum", a.Minimum(f64(dev, []float64{2, 2, 5}, 3)), []float64{1, 2, 3, 2, 2, 5}},
		{"gt", a.Gt(3), []float64{0, 0, 0, 1, 1, 1}},
		{"lt bcast", a.Lt(f64(dev, []float64{2, 2, 7}, 3)), []float64{1, 0, 1, 0, 0, 1}},
		{"ge", a.Ge(3), []float64{0, 0, 1, 1, 1, 1}},
		{"le", a.Le(3), []float64{1, 1, 1, 0, 0, 0}},
		{"eq int64", a.Eq(i64s(dev, 1, 5, 3)), []float64{1, 0, 1, 0, 1, 0}},
		{"where", tensor.Where(a.Gt(3), a, b), []float64{10, 20, 30, 4, 5, 6}},
		// reductions
		{"max 1", a.Max(1, false), []float64{3, 6}},
		{"min 0", a.Min(0, true), []float64{1, 2, 3}},
		{"max NaN", f64(dev, []float64{1, math.NaN(), 3}, 3).Max(0, false), []float64{math.NaN()}},
		{"argmax", f64(dev, []float64{1, 7, 7, 9, 2, 0}, 2, 3).ArgMax(1, false), []float64{1, 0}},
		{"argmin T", a.T().ArgMin(0, true), []float64{0, 0}},
		{"argmax int", i64s(dev, 3, 9, 2).ArgMax(0, false), []float64{1}},
		{"max int", i64s(dev, 3, 9, 2).Max(0, false), []float64{9}},
		{"var", a.Var([]int{1}, false, true), []float64{1, 1}},
		{"var biased all", a.Var(nil, false, false), []float64{35.0 / 12}},
		{"mean fast", a.Mean(0), []float64{2.5, 3.5, 4.5}},
		{"sum T", a.T().Sum(0), []float64{6, 15}},
		// gather, scatter, join
		{"gather 1", a.Gather(1, i64s(dev, 2, 0, 1, 1).View(2, 2)), []float64{3, 1, 5, 5}},
		{"scatter_add 0", tensor.Zeros([]int{2, 3}, tensor.On(dev), tensor.Float64).ScatterAdd(0, i64s(dev, 1, 0, 1, 1).View(1, 4).Narrow(1, 0, 3), a.Narrow(0, 0, 1)), []float64{0, 2, 0, 1, 0, 3}},
		{"scatter_add repeat", b.ScatterAdd(0, i64s(dev, 2, 2), f64(dev, []float64{1, 2}, 2)), []float64{10, 20, 33}},
		{"cat 0", tensor.Cat([]*tensor.Tensor{a, b.View(1, 3)}, 0), []float64{1, 2, 3, 4, 5, 6, 10, 20, 30}},
		{"cat 1", tensor.Cat([]*tensor.Tensor{a, a.Narrow(1, 0, 1)}, -1), []float64{1, 2, 3, 1, 4, 5, 6, 4}},
		{"stack 0", tensor.Stack([]*tensor.Tensor{b, b}, 0), []float64{10, 20, 30, 10, 20, 30}},
		{"stack 1", tensor.Stack([]*tensor.Tensor{b, b.Mul(2)}, 1), []float64{10, 20, 20, 40, 30, 60}},
	}
	for _, tc := range tests {
		got := tc.got.Float64s()
		require.Len(t, got, len(tc.want), tc.name)
		for i := range got {
			if math.IsNaN(tc.want[i]) {
				assert.True(t, math.IsNaN(got[i]), "%s[%d]: want NaN, got %v", tc.name, i, got[i])
				continue
			}
			assert.InDelta(t, tc.want[i], got[i], 1e-12, "%s[%d]", tc.name, i)
		}
	}
	assert.Equal(t, []int{2, 1}, a.SumDims([]int{1}, true).Shape())
	assert.Equal(t, []int{}, a.Sum().Shape())
}

func TestDtypesCompute(t *testing.T) {
	dev := newDev(t)
	for _, dt := range []tensor.Dtype{tensor.Float32, tensor.Float64, tensor.Float16, tensor.BFloat16} {
		t.Run(dt.String(), func(t *testing.T) {
			a := tensor.FromSlice([]float32{1, 2, 3, 4}, []int{2, 2}, tensor.On(dev), dt)
			assert.Equal(t, []float64{2, 4, 6, 8}, a.Add(a).Float64s())
			assert.Equal(t, []float64{7, 10, 15, 22}, a.Matmul(a).Float64s())
			assert.Equal(t, 10.0, a.Sum().Item())
			assert.Equal(t, dt, a.Matmul(a).Dtype())
		})
	}
	// float16 rounds: 1 + 2^-11 is not representable
	h := tensor.Full([]int{1}, 1, tensor.On(dev), tensor.Float16)
	assert.Equal(t, 1.0, h.Add(1.0/2048).Item())
	assert.Equal(t, 1+1.0/1024, h.Add(1.0/1024).Item())
	// integers
	i := tensor.FromSlice([]int64{1, 2, 3}, []int{3}, tensor.On(dev))
	assert.Equal(t, []float64{2, 4, 6}, i.Mul(2).Float64s())
	assert.Equal(t, tensor.Int64, i.Sum().Dtype())
	bf := tensor.FromSlice([]bool{true, true, false}, []int{3}, tensor.On(dev))
	assert.Equal(t, 2.0, bf.Sum().Item())
}

func TestChargesKernelTime(t *testing.T) {
	dev := newDev(t)
	a := tensor.Ones([]int{256, 256}, tensor.On(dev))
	before := dev.StreamClock(dev.DefaultStream())
	c := a.Matmul(a)
	after := dev.StreamClock(dev.DefaultStream())
	assert.Greater(t, after, before, "Matmul must charge modelled time")
	assert.Equal(t, 256.0, c.At(0, 0))
}

func TestMetaDeviceComputesShapesOnly(t *testing.T) {
	meta := newMeta(t)
	// A 1B-parameter layer stack costs nothing to "run" on meta.
	w := tensor.Empty([]int{32768, 32768}, tensor.On(meta), tensor.RequiresGrad())
	x := tensor.Empty([]int{64, 32768}, tensor.On(meta))
	h := x.Matmul(w)
	y := h.Relu()
	assert.Equal(t, []int{64, 32768}, y.Shape())
	assert.True(t, y.IsMeta())
	assert.Equal(t, int64(32768*32768*4+3*64*32768*4), meta.MemoryAllocated(), "w, x, h, y")
	h.Release() // nothing saved h (Relu saves its output), so its block goes back
	assert.Equal(t, int64(32768*32768*4+2*64*32768*4), meta.MemoryAllocated(), "w, x, y")
	msg := panicMsg(func() { y.Item() })
	assert.Contains(t, msg, "cannot be converted")
	msg = panicMsg(func() { y.Sum().Item() })
	assert.Contains(t, msg, "no data")
	loss := y.Sum()
	loss.Backward()
	assert.Equal(t, []int{32768, 32768}, w.Grad().Shape())
}

// TestCompareWithNumberAsPyTorch: a number is rounded to the tensor's
// dtype before comparing. The rows are PyTorch 1.13.1's (Debian 12's
// python3-torch): torch.tensor([0.1], dtype=dt) compared with 0.1.
func TestCompareWithNumberAsPyTorch(t *testing.T) {
	dev := newDev(t)
	tests := []struct {
		dt                 tensor.Dtype
		gt, lt, eq, eqSelf float64 // eqSelf: the float64 tensor 0.1 == x.to(float64)
	}{
		{tensor.Float32, 0, 0, 1, 0},
		{tensor.Float16, 0, 0, 1, 0},
		{tensor.BFloat16, 0, 0, 1, 0},
		{tensor.Float64, 0, 0, 1, 1},
	}
	for _, tt := range tests {
		x := tensor.FromSlice([]float64{0.1}, []int{1}, tensor.On(dev)).ToDtype(tt.dt)
		x64 := x.ToDtype(tensor.Float64)
		assert.Equal(t, []float64{tt.gt}, x.Gt(0.1).Float64s(), "%s > 0.1", tt.dt)
		assert.Equal(t, []float64{tt.lt}, x.Lt(0.1).Float64s(), "%s < 0.1", tt.dt)
		assert.Equal(t, []float64{tt.eq}, x.Eq(0.1).Float64s(), "%s == 0.1", tt.dt)
		assert.Equal(t, []float64{tt.eqSelf}, x64.Eq(0.1).Float64s(), "%s widened == 0.1", tt.dt)
	}
}
