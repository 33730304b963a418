package amp_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpumem/course/gpukit/amp"
	"github.com/gpumem/course/gpukit/device/simtest"
	"github.com/gpumem/course/gpukit/nn"
	"github.com/gpumem/course/gpukit/optim"
	"github.com/gpumem/course/gpukit/tensor"
)

func TestOpLists(t *testing.T) {
	dev := simtest.Card(t)
	x := tensor.Randn([]int{4, 8}, tensor.On(dev))
	w := tensor.Randn([]int{8, 8}, tensor.On(dev))
	h := tensor.Randn([]int{4, 8}, tensor.On(dev), tensor.Float16)
	d := tensor.Randn([]int{4, 8}, tensor.On(dev), tensor.Float64)
	ids := tensor.FromSlice([]int64{1, 0, 3, 2}, []int{4}, tensor.On(dev))
	for _, dt := range []tensor.Dtype{tensor.Float16, tensor.BFloat16} {
		got := map[string]tensor.Dtype{}
		require.NoError(t, amp.Autocast(dt, func() {
			got["matmul"] = x.Matmul(w).Dtype()
			got["matmul float64"] = d.Matmul(d.T()).Dtype()
			got["softmax"] = h.Softmax(-1).Dtype()
			got["log_softmax"] = h.LogSoftmax(-1).Dtype()
			got["exp"] = h.Exp().Dtype()
			got["sum"] = h.Sum().Dtype()
			got["mse"] = tensor.MSELoss(h, x).Dtype()
			got["cross_entropy"] = tensor.CrossEntropy(h, ids).Dtype()
			got["add mixed"] = h.Add(x).Dtype()
			got["mul low"] = h.Mul(h).Dtype()
			got["relu"] = h.Relu().Dtype()
			got["layer_norm"] = nn.NewLayerNorm(8, tensor.On(dev)).Forward(h).Dtype()
			got["linear"] = nn.NewLinear(8, 3, true, tensor.On(dev)).Forward(x).Dtype()
			got["cat"] = tensor.Cat([]*tensor.Tensor{h, x}, 0).Dtype()
			got["cat low"] = tensor.Cat([]*tensor.Tensor{h, h}, 0).Dtype()
			got["stack"] = tensor.Stack([]*tensor.Tensor{x, h}, 0).Dtype()
			got["stack float64"] = tensor.Stack([]*tensor.Tensor{h, d}, 1).Dtype()
			got["scatter_add"] = h.ScatterAdd(0, ids.View(4, 1).Expand(4, 8), x).Dtype()
			amp.Disabled(func() { got["matmul disabled"] = x.Matmul(w).Dtype() })
		}))
		assert.Equal(t, map[string]tensor.Dtype{
			"matmul": dt, "matmul float64": tensor.Float64, "softmax": tensor.Float32, "log_softmax": tensor.Float32,
			"exp": tensor.Float32, "sum": tensor.Float32, "mse": tensor.Float32, "cross_entropy": tensor.Float32,
			"add mixed": tensor.Float32, "mul low": tensor.Float16, "relu": tensor.Float16,
			"layer_norm": tensor.Float32, "linear": dt, "matmul disabled": tensor.Float32,
			"cat": tensor.Float32, "cat low": tensor.Float16, "stack": tensor.Float32,
			"stack float64": tensor.Float64, "scatter_add": tensor.Float32,
		}, got, dt.String())
	}
	assert.Equal(t, tensor.Float32, x.Matmul(w).Dtype(), "outside autocast nothing changes")
}

func TestRefusedDtypes(t *testing.T) {
	ran := false
	for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32, tensor.Int64} {
		err := amp.Autocast(dt, func() { ran = true })
		require.Error(t, err)
		assert.Contains(t, err.Error(), "amp: autocast to "+dt.String()+" is not supported")
	}
	assert.False(t, ran)
}

// The float16 casts of a Linear's parameters are cached for the region:
// visible in CacheBytes and the allocator, made once, freed at the end.
func TestCastCache(t *testing.T) {
	dev := simtest.Card(t)
	l := nn.NewLinear(1024, 1024, true, tensor.On(dev))
	x := tensor.Randn([]int{16, 1024}, tensor.On(dev))
	simtest.WarmBlas(t, dev) // the first product's cuBLAS workspace stays for good: not part of what is measured
	base := dev.MemoryAllocated()
	require.NoError(t, amp.Autocast(tensor.Float16, func() {
		y1 := l.Forward(x)
		afterOne := dev.MemoryAllocated()
		assert.EqualValues(t, (1024*1024+1024)*2, amp.CacheBytes())
		y2 := l.Forward(x)
		// the second call casts x again (an activation, not cached) but not the weight
		assert.EqualValues(t, (1024*1024+1024)*2, amp.CacheBytes())
		assert.Equal(t, y2.Nbytes()+16*1024*2, dev.MemoryAllocated()-afterOne, "second forward: output and x's cast (no grad: released) only")
		y1.Release()
		y2.Release()
	}))
	assert.Zero(t, amp.CacheBytes())
	assert.Equal(t, base, dev.MemoryAllocated(), "the cache is freed when the region ends")
}

// A training step under autocast: float32 parameters get float32
// gradients, the saved activations are half the size. The graph also
// keeps the float16 casts of the weights and of the input (the matmuls
// save them), so autocast pays off only when activations dominate (with
// one or two layers it holds more than float32 does).
func TestBackwardThroughAutocast(t *testing.T) {
	dev := simtest.Card(t)
	var layers []nn.Module
	for range 6 {
		layers = append(layers, nn.NewLinear(128, 128, true, tensor.On(dev)), nn.NewReLU())
	}
	m := nn.NewSequential(layers...)
	x := tensor.Randn([]int{512, 128}, tensor.On(dev))
	simtest.WarmBlas(t, dev) // the first product's cuBLAS workspace stays for good: not part of what is measured
	held := func(autocast bool) int64 {
		before := dev.MemoryAllocated()
		var loss *tensor.Tensor
		fwd := func() { y := m.Forward(x); loss = y.Pow(2).Mean(); y.Release() }
		if autocast {
			require.NoError(t, amp.Autocast(tensor.Float16, fwd))
		} else {
			fwd()
		}
		n := dev.MemoryAllocated() - before
		loss.Backward()
		loss.Release()
		for _, p := range nn.Parameters(m) {
			require.Equal(t, tensor.Float32, p.Grad().Dtype())
		}
		nn.ZeroGrad(m, true)
		return n
	}
	full, half := held(false), held(true)
	// float32: each ReLU output (saved by the ReLU and the next Linear), the
	// last output (saved by Pow), and the loss in a 512-byte block
	assert.Equal(t, 7*4*int64(512*128)+512, full)
	// float16 halves those; x's cast, the weights' casts and the last
	// output's float32 cast for Pow come on top
	assert.Less(t, half, full)
	t.Logf("held after forward: float32 %d bytes, float16 autocast %d bytes", full, half)
}

func TestGradScaler(t *testing.T) {
	dev := simtest.Card(t)
	assert.Equal(t, amp.GradScalerConfig{InitScale: 65536, GrowthFactor: 2, BackoffFactor: 0.5, GrowthInterval: 2000}, amp.DefaultGradScaler())
	p := tensor.FromSlice([]float64{1, 1}, []int{2}, tensor.On(dev)).SetRequiresGrad(true)
	opt, err := optim.NewSGD([]*tensor.Tensor{p}, optim.SGDConfig{LR: 1})
	require.NoError(t, err)
	cfg := amp.DefaultGradScaler()
	cfg.GrowthInterval = 2
	s, err := amp.NewGradScaler(cfg)
	require.NoError(t, err)

	// a step without a scaled backward is refused
	p.SetGrad(tensor.Ones([]int{2}, tensor.On(dev), tensor.Float64))
	_, err = s.Step(opt)
	assert.ErrorIs(t, err, amp.ErrNoScaledBackward)
	assert.Equal(t, []float64{1, 1}, p.Float64s(), "nothing changed")
	p.SetGrad(nil)

	iter := func(grad float64) bool {
		loss := p.Sum().Mul(grad)
		scaled := s.Scale(loss)
		scaled.Backward()
		if !math.IsNaN(grad) {
			assert.Equal(t, grad*s.GetScale(), p.Grad().At(0), "gradients arrive scaled")
		}
		stepped, err := s.Step(opt)
		require.NoError(t, err)
		s.Update()
		opt.ZeroGrad(true)
		return stepped
	}
	assert.True(t, iter(0.25))
	assert.InDeltaSlice(t, []float64{0.75, 0.75}, p.Float64s(), 0, "unscaled before the step")
	assert.Equal(t, 65536.0, s.GetScale())
	assert.True(t, iter(0.25))
	assert.Equal(t, 131072.0, s.GetScale(), "grows after GrowthInterval clean steps")
	assert.False(t, iter(math.Inf(1)), "inf: step skipped")
	assert.InDeltaSlice(t, []float64{0.5, 0.5}, p.Float64s(), 0)
	assert.Equal(t, 65536.0, s.GetScale(), "backs off")
	assert.False(t, iter(math.NaN()))
	assert.Equal(t, 32768.0, s.GetScale())

	// Unscale twice, and Step with no gradients
	scaled := s.Scale(p.Sum())
	scaled.Backward()
	require.NoError(t, s.Unscale(opt))
	assert.ErrorContains(t, s.Unscale(opt), "already been called")
	s.Update()
	opt.ZeroGrad(true)
	s.Scale(p.Sum())
	_, err = s.Step(opt)
	assert.ErrorContains(t, err, "no inf checks were recorded")

	for _, bad := range []amp.GradScalerConfig{{InitScale: 0, GrowthFactor: 2, BackoffFactor: 0.5, GrowthInterval: 1}, {InitScale: 1, GrowthFactor: 1, BackoffFactor: 0.5, GrowthInterval: 1}, {InitScale: 1, GrowthFactor: 2, BackoffFactor: 1, GrowthInterval: 1}, {InitScale: 1, GrowthFactor: 2, BackoffFactor: 0.5}} {
		_, err := amp.NewGradScaler(bad)
		assert.Error(t, err)
	}
}
