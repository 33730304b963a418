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
	}
	for _, tc := range tests {
		assert.InDeltaSlice(t, tc.want, tc.got.Float64s(), 1e-12, tc.name)
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
