package nn_test

import (
	"math"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpumem/course/gpukit/device"
	"github.com/gpumem/course/gpukit/device/simtest"
	"github.com/gpumem/course/gpukit/nn"
	"github.com/gpumem/course/gpukit/nn/nntest"
	"github.com/gpumem/course/gpukit/tensor"
	"github.com/gpumem/course/gpukit/tensor/gradcheck"
)

func TestLinearMemoryExact(t *testing.T) {
	dev := simtest.Card(t)
	l := nn.NewLinear(1024, 1024, true, tensor.On(dev))
	assert.EqualValues(t, 4_194_304+4_096, dev.MemoryAllocated())
	assert.EqualValues(t, 4_194_304+4_096, nn.Nbytes(l))
	assert.EqualValues(t, 1024*1024+1024, nn.NumParams(l))
	nn.Release(l)
	assert.EqualValues(t, 0, dev.MemoryAllocated())
}

func TestBatchNormCountsBuffers(t *testing.T) {
	dev := simtest.Card(t)
	bn := nn.NewBatchNorm1d(10, tensor.On(dev))
	assert.EqualValues(t, 20, nn.NumParams(bn))
	assert.EqualValues(t, 21, nn.NumBuffers(bn))
	// weight, bias, running_mean, running_var: 4×10 float32; num_batches_tracked: one int64
	assert.EqualValues(t, 4*10*4+8, nn.Nbytes(bn))
	var names []string
	for _, b := range nn.NamedBuffers(bn) {
		names = append(names, b.Name)
	}
	assert.Equal(t, []string{"running_mean", "running_var", "num_batches_tracked"}, names)
}

func TestNamesFollowPyTorch(t *testing.T) {
	dev := simtest.Card(t)
	m := nn.NewSequential(nn.NewBlock(8, 2, tensor.On(dev)), nn.NewLayerNorm(8, tensor.On(dev)))
	var names []string
	for _, p := range nn.NamedParameters(m) {
		names = append(names, p.Name)
	}
	assert.Equal(t, []string{
		"0.ln_1.weight", "0.ln_1.bias",
		"0.attn.in_proj_weight", "0.attn.in_proj_bias", "0.attn.out_proj.weight", "0.attn.out_proj.bias",
		"0.ln_2.weight", "0.ln_2.bias",
		"0.mlp.0.weight", "0.mlp.0.bias", "0.mlp.2.weight", "0.mlp.2.bias",
		"1.weight", "1.bias",
	}, names)
	// 12·D² + 13·D for a block, 2·D for the final norm
	assert.EqualValues(t, 12*64+13*8+16, nn.NumParams(m))
}

func TestInitPyTorchBounds(t *testing.T) {
	dev := simtest.Card(t)
	l := nn.NewLinear(400, 300, true, nntest.F64(dev, 7)...)
	bound := 1 / math.Sqrt(400)
	for _, p := range []*tensor.Tensor{l.Weight, l.Bias} {
		vals := p.Float64s()
		lo, hi, sum := math.Inf(1), math.Inf(-1), 0.0
		for _, v := range vals {
			lo, hi, sum = math.Min(lo, v), math.Max(hi, v), sum+v
		}
		assert.GreaterOrEqual(t, lo, -bound)
		assert.Less(t, hi, bound)
		assert.Greater(t, hi, 0.9*bound, "the draws fill the interval")
		assert.Less(t, lo, -0.9*bound)
		if len(vals) > 1000 {
			assert.InDelta(t, 0, sum/float64(len(vals)), 0.01*bound)
		}
	}
	e := nn.NewEmbedding(1000, 100, nntest.F64(dev, 7)...)
	vals := e.Weight.Float64s()
	var s, s2 float64
	for _, v := range vals {
		s, s2 = s+v, s2+v*v
	}
	n := float64(len(vals))
	assert.InDelta(t, 0, s/n, 0.02)
	assert.InDelta(t, 1, s2/n-(s/n)*(s/n), 0.02)
}

func TestSameSeedBitwiseEqual(t *testing.T) {
	dev := simtest.Card(t)
	build := func(seed uint64) nn.Module {
		o := nntest.Seeded(dev, seed)
		return nn.NewSequential(nn.NewEmbedding(50, 16, o...), nn.NewBlock(16, 4, o...), nn.NewLinear(16, 50, true, o...))
	}
	a, b, c := nn.NamedParameters(build(3)), nn.NamedParameters(build(3)), nn.NamedParameters(build(4))
	require.Equal(t, len(a), len(b))
	differs := false
	for i := range a {
		assert.Equal(t, a[i].Tensor.Storage().Bytes(), b[i].Tensor.Storage().Bytes(), a[i].Name)
		if string(a[i].Tensor.Storage().Bytes()) != string(c[i].Tensor.Storage().Bytes()) {
			differs = true
		}
	}
	assert.True(t, differs, "another seed gives other weights")
}

func TestGradcheckLayers(t *testing.T) {
	dev := simtest.Card(t)
	o := nntest.F64(dev, 11)
	x2 := func() *tensor.Tensor { return tensor.Randn([]int{4, 5}, append(o, tensor.RequiresGrad())...) }
	x3 := func() *tensor.Tensor { return tensor.Randn([]int{2, 3, 8}, append(o, tensor.RequiresGrad())...) }
	bn := nn.NewBatchNorm1d(5, o...)
	bnEval := nn.NewBatchNorm1d(5, o...)
	tensor.NoGrad(func() {
		bnEval.RunningMean.CopyFrom(tensor.Randn([]int{5}, o...))
		bnEval.RunningVar.CopyFrom(tensor.Rand([]int{5}, o...).Add(0.5))
	})
	nn.Eval(bnEval)
	causal := nn.NewMultiheadAttention(8, 2, o...)
	causal.Causal = true
	tests := []struct {
		name string
		m    nn.Module
		x    *tensor.Tensor
	}{
		{"Linear", nn.NewLinear(5, 3, true, o...), x2()},
		{"LinearNoBias", nn.NewLinear(5, 3, false, o...), x3().Narrow(2, 0, 5)},
		{"LayerNorm", nn.NewLayerNorm(5, o...), x2()},
		{"BatchNorm1d", bn, x2()},
		{"BatchNorm1dEval", bnEval, x2()},
		{"ReLU", nn.NewReLU(), x2()},
		{"GELU", nn.NewGELU(), x2()},
		{"Sequential", nn.NewSequential(nn.NewLinear(5, 6, true, o...), nn.NewGELU(), nn.NewLinear(6, 2, true, o...)), x2()},
		{"MultiheadAttention", nn.NewMultiheadAttention(8, 2, o...), x3()},
		{"CausalAttention", causal, x3()},
		{"Block", nn.NewBlock(4, 2, o...), x3().Narrow(2, 0, 4)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			x := tc.x.Detach().SetRequiresGrad(true)
			params := nn.Parameters(tc.m)
			inputs := append([]*tensor.Tensor{x}, params...)
			gradcheck.Assert(t, func(in []*tensor.Tensor) *tensor.Tensor { return tc.m.Forward(in[0]) }, inputs...)
		})
	}
	t.Run("Embedding", func(t *testing.T) {
		e := nn.NewEmbedding(6, 3, o...)
		ids := tensor.FromSlice([]int64{1, 4, 1, 0, 5, 1}, []int{2, 3}, tensor.On(dev))
		gradcheck.Assert(t, func(in []*tensor.Tensor) *tensor.Tensor { return e.Forward(ids) }, e.Weight)
	})
}

func TestBatchNormRunningStats(t *testing.T) {
	dev := simtest.Card(t)
	bn := nn.NewBatchNorm1d(2, tensor.On(dev), tensor.Float64)
	x := tensor.FromSlice([]float64{1, 10, 3, 20, 5, 30}, []int{3, 2}, tensor.On(dev))
	y := bn.Forward(x)
	// batch mean [3, 20], unbiased var [4, 100]
	assert.InDeltaSlice(t, []float64{0.3, 2}, bn.RunningMean.Float64s(), 1e-12)
	assert.InDeltaSlice(t, []float64{0.9 + 0.4, 0.9 + 10}, bn.RunningVar.Float64s(), 1e-12)
	assert.Equal(t, 1.0, bn.NumTracked.Item())
	// training normalises with the biased variance
	assert.InDelta(t, -2/math.Sqrt(8.0/3+1e-5), y.At(0, 0), 1e-9)
	nn.Eval(bn)
	ye := bn.Forward(x)
	assert.InDelta(t, (1-0.3)/math.Sqrt(1.3+1e-5), ye.At(0, 0), 1e-9)
	assert.Equal(t, 1.0, bn.NumTracked.Item(), "eval does not update the buffers")
}

func TestDropoutEvalAllocatesNothing(t *testing.T) {
	dev := simtest.Card(t)
	x := tensor.Randn([]int{64, 64}, tensor.On(dev))
	m := nn.NewSequential(nn.NewDropout(0.5))
	nn.Eval(m)
	before := dev.Stats()["allocation.all.allocated"]
	y := m.Forward(x)
	assert.Equal(t, before, dev.Stats()["allocation.all.allocated"])
	assert.Equal(t, x.Float64s(), y.Float64s())
	nn.Train(m)
	assert.True(t, m.Layers[0].Training())
	z := m.Forward(x)
	assert.Greater(t, dev.Stats()["allocation.all.allocated"], before)
	assert.NotEqual(t, x.Float64s(), z.Float64s())
}

func TestZeroGrad(t *testing.T) {
	dev := simtest.Card(t)
	l := nn.NewLinear(256, 256, true, tensor.On(dev))
	x := tensor.Randn([]int{8, 256}, tensor.On(dev))
	step := func() { nntest.SumBackward(l, x) }
	simtest.WarmBlas(t, dev) // the first product's cuBLAS workspace stays for good: not a gradient
	base := dev.MemoryAllocated()
	step()
	withGrads := dev.MemoryAllocated()
	assert.EqualValues(t, nn.Nbytes(l), withGrads-base, "gradients are the size of the parameters")
	nn.ZeroGrad(l, false)
	assert.EqualValues(t, withGrads, dev.MemoryAllocated(), "zeroing in place keeps the memory")
	for _, p := range nn.Parameters(l) {
		for _, v := range p.Grad().Float64s() {
			require.Zero(t, v)
		}
	}
	nn.ZeroGrad(l, true)
	assert.EqualValues(t, base, dev.MemoryAllocated(), "set to none gives it back")
	assert.Nil(t, l.Weight.Grad())
	runtime.KeepAlive(x)
}

func TestBadInput(t *testing.T) {
	dev := simtest.Card(t)
	tests := []struct {
		name string
		fn   func()
		msg  string
	}{
		{"linear sizes", func() { nn.NewLinear(0, 3, true) }, "sizes must be positive"},
		{"linear input", func() { nn.NewLinear(4, 3, true, tensor.On(dev)).Forward(tensor.Zeros([]int{2, 5}, tensor.On(dev))) }, "expected last dimension 4"},
		{"heads", func() { nn.NewMultiheadAttention(10, 3, tensor.On(dev)) }, "must be divisible by num_heads"},
		{"dropout p", func() { nn.NewDropout(1.5) }, "between 0 and 1"},
		{"batchnorm one row", func() { nn.NewBatchNorm1d(3, tensor.On(dev)).Forward(tensor.Zeros([]int{1, 3}, tensor.On(dev))) }, "more than 1 value per channel"},
	}
	for _, tc := range tests {
		msg := func() (msg string) {
			defer func() { msg = recoverMsg(recover()) }()
			tc.fn()
			return ""
		}()
		assert.Contains(t, msg, "nn: ", tc.name)
		assert.Contains(t, msg, tc.msg, tc.name)
	}
}

func recoverMsg(r any) string {
	switch v := r.(type) {
	case nil:
		return ""
	case string:
		return v
	case error:
		return v.Error()
	}
	return "unexpected panic"
}

// LayerNorm and BatchNorm1d keep what PyTorch's native_layer_norm and
// native_batch_norm save: the input (already allocated), weight and bias
// (parameters), and two float32 statistics per row (LayerNorm: mean and
// rstd, [64, 1] = 256 bytes, one 512-byte block each) or per feature
// (BatchNorm in training: save_mean and save_invstd, [1024] = 4096 bytes
// each). In eval BatchNorm normalises with its buffers and keeps nothing
// new. Backward frees the statistics.
func TestNormSavesWhatPyTorchSaves(t *testing.T) {
	const rows, dim = 64, 1024
	bn := func(dev *device.Device) nn.Module { return nn.NewBatchNorm1d(dim, tensor.On(dev)) }
	tests := []struct {
		name  string
		build func(*device.Device) nn.Module
		eval  bool
		saved int64
		node  string
	}{
		{"LayerNorm", func(dev *device.Device) nn.Module { return nn.NewLayerNorm(dim, tensor.On(dev)) }, false, 2 * 512, "NativeLayerNormBackward0"},
		{"BatchNorm1d", bn, false, 2 * dim * 4, "NativeBatchNormBackward0"},
		{"BatchNorm1dEval", bn, true, 0, "NativeBatchNormBackward0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dev := simtest.Card(t)
			m := tc.build(dev)
			if tc.eval {
				nn.Eval(m)
			}
			x := tensor.Randn([]int{rows, dim}, tensor.On(dev), tensor.RequiresGrad())
			base := dev.MemoryAllocated()
			y := m.Forward(x)
			assert.Equal(t, tc.node, y.GradFn())
			assert.EqualValues(t, rows*dim*4+tc.saved, dev.MemoryAllocated()-base, "output and saved statistics")
			loss := y.Sum()
			y.Release()
			assert.EqualValues(t, 512+tc.saved, dev.MemoryAllocated()-base, "the 0-d loss and the saved statistics")
			loss.Backward()
			loss.Release()
			grads := int64(rows*dim*4 + 2*dim*4) // x, weight and bias
			assert.EqualValues(t, grads, dev.MemoryAllocated()-base, "backward freed the statistics")
			// The module holds the weight and bias whose gradients are
			// counted: were it collected before the count, its cleanup
			// would release them (a CI run under load saw 8704 B missing).
			runtime.KeepAlive(m)
			runtime.KeepAlive(x)
		})
	}
}

// Linear's weight gradient is computed as (gᵀ x)ᵀ, in the weight's own
// layout (PyTorch's mm_mat2_backward for W.t()), so it becomes .grad
// as it is: backward never holds a second, transposed copy of it.
func TestLinearWeightGradNeedsNoCopy(t *testing.T) {
	dev := simtest.Card(t)
	l := nn.NewLinear(256, 256, true, tensor.On(dev))
	x := tensor.Randn([]int{32, 256}, tensor.On(dev))
	y := l.Forward(x)
	loss := y.Sum()
	y.Release()
	base := dev.MemoryAllocated()
	dev.ResetPeakStats()
	loss.Backward()
	const weightGrad = 256 * 256 * 4
	assert.True(t, l.Weight.Grad().IsContiguous())
	assert.Less(t, dev.MaxMemoryAllocated()-base, int64(2*weightGrad), "one weight gradient at a time")
	assert.GreaterOrEqual(t, dev.MaxMemoryAllocated()-base, int64(weightGrad))
	runtime.KeepAlive(x)
}
