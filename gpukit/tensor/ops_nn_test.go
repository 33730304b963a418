package tensor_test

import (
	"math"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpumem/course/gpukit/device"
	"github.com/gpumem/course/gpukit/tensor"
)

func TestIndexSelectOutAllocatesNothing(t *testing.T) {
	dev := newDev(t)
	emb := tensor.Randn([]int{10, 4}, tensor.On(dev))
	ids := i64s(dev, 3, 7, 3, 0, 9)
	out := tensor.Empty([]int{5, 4}, tensor.On(dev))
	want := emb.IndexSelect(0, ids)
	before := allocations(dev)
	for range 5 {
		tensor.IndexSelectOut(out, emb, 0, ids)
	}
	assert.Equal(t, before, allocations(dev), "IndexSelectOut allocates nothing")
	assert.Equal(t, want.Float64s(), out.Float64s())
	assert.Equal(t, emb.Select(0, 9).Float64s(), out.Select(0, 4).Float64s())

	// along dim 1, from a transposed source
	out2 := tensor.Empty([]int{4, 2}, tensor.On(dev))
	tensor.IndexSelectOut(out2, emb.T(), 1, i64s(dev, 9, 3))
	assert.Equal(t, emb.IndexSelect(0, i64s(dev, 9, 3)).T().Float64s(), out2.Float64s())

	tests := []struct {
		name string
		fn   func()
		msg  string
	}{
		{"shape", func() { tensor.IndexSelectOut(tensor.Empty([]int{4, 4}, tensor.On(dev)), emb, 0, ids) }, "out has shape [4, 4], the result has shape [5, 4]"},
		{"grad", func() {
			tensor.IndexSelectOut(out, tensor.Randn([]int{10, 4}, tensor.On(dev), tensor.RequiresGrad()), 0, ids)
		}, "do not support automatic differentiation"},
		{"range", func() { tensor.IndexSelectOut(out, emb, 0, i64s(dev, 0, 1, 2, 3, 10)) }, "index 10 is out of bounds for dimension with size 10"},
		{"negative", func() { emb.IndexSelect(0, i64s(dev, -1)) }, "index -1 is out of bounds"},
		{"float index", func() { emb.IndexSelect(0, f64(dev, []float64{1}, 1)) }, "index must be an Int64 or Int32 tensor"},
		{"2-d index", func() { emb.IndexSelect(0, i64s(dev, 1, 2).View(1, 2)) }, "index must be 0-d or 1-d"},
		{"aliasing", func() { tensor.IndexSelectOut(emb.Narrow(0, 0, 5), emb, 0, ids) }, "shares storage"},
		{"other device", func() { emb.IndexSelect(0, i64s(newDev(t), 1)) }, "move the index with To"},
	}
	for _, tc := range tests {
		msg := panicMsg(tc.fn)
		assert.Contains(t, msg, "tensor: ", tc.name)
		assert.Contains(t, msg, tc.msg, tc.name)
	}
}

func TestIndexSelectSavesIndex(t *testing.T) {
	dev := newDev(t)
	w := tensor.Randn([]int{1000, 8}, tensor.On(dev), tensor.Float64, tensor.RequiresGrad())
	ids := tensor.FromSlice([]int32{1, 1, 5}, []int{3}, tensor.On(dev))
	y := w.IndexSelect(0, ids)
	ids.Release()
	assert.False(t, ids.Storage().Freed(), "the graph holds the index")
	y.Sum().Backward()
	assert.True(t, ids.Storage().Freed(), "backward releases the saved index")
	g := w.Grad()
	assert.Equal(t, []float64{2, 2}, []float64{g.At(1, 0), g.At(1, 7)}, "repeated index accumulates")
	assert.Equal(t, 1.0, g.At(5, 3))
	assert.Equal(t, 0.0, g.At(0, 0))
}

func TestDropout(t *testing.T) {
	dev := newDev(t)
	x := tensor.Ones([]int{100, 100}, tensor.On(dev), tensor.RequiresGrad())

	t.Run("eval returns the input", func(t *testing.T) {
		before, mem := allocations(dev), dev.MemoryAllocated()
		y := x.Dropout(0.5, false, nil)
		assert.Equal(t, before, allocations(dev), "eval mode allocates nothing")
		assert.Equal(t, mem, dev.MemoryAllocated())
		assert.True(t, y.SameStorage(x))
		assert.Equal(t, x.Float64s(), y.Float64s())
		s := y.Sum()
		s.Backward()
		assert.Equal(t, 1.0, x.Grad().At(3, 3), "gradient flows through unchanged")
		x.SetGrad(nil)
		s.Release()
		y.Release()
	})

	t.Run("train saves a one-byte mask", func(t *testing.T) {
		base := dev.MemoryAllocated()
		y := x.Dropout(0.25, true, tensor.NewGenerator(1))
		// y (40000 B) + the Bool mask saved for backward (10000 B), each
		// rounded to the allocator's 512 B granularity.
		assert.Equal(t, base+40448+10240, dev.MemoryAllocated())
		vals := y.Float64s()
		kept := 0
		for _, v := range vals {
			if v != 0 {
				assert.InDelta(t, 1/0.75, v, 1e-6)
				kept++
			}
		}
		assert.InDelta(t, 0.75, float64(kept)/float64(len(vals)), 0.02)
		loss := y.Sum()
		loss.Backward()
		g := x.Grad().Float64s()
		for i := range g {
			assert.Equal(t, float32(vals[i]), float32(g[i]), "grad = mask/(1-p)")
		}
		x.SetGrad(nil)
		y.Release()
		loss.Release()
		assert.Equal(t, base, dev.MemoryAllocated(), "mask freed by backward")
		runtime.KeepAlive(y)
	})

	t.Run("mask goes through saved-tensor hooks", func(t *testing.T) {
		var packed []tensor.Dtype
		var y *tensor.Tensor
		tensor.WithSavedTensorHooks(func(s *tensor.Tensor) any {
			packed = append(packed, s.Dtype())
			return s
		}, func(p any) *tensor.Tensor { return p.(*tensor.Tensor) }, func() {
			y = x.Dropout(0.5, true, nil)
		})
		assert.Equal(t, []tensor.Dtype{tensor.Bool}, packed)
		assert.Equal(t, "NativeDropoutBackward0", y.GradFn())
		s := y.Sum()
		s.Backward()
		x.SetGrad(nil)
		s.Release()
		y.Release()
	})

	t.Run("seeded and edge probabilities", func(t *testing.T) {
		a := x.Dropout(0.5, true, tensor.NewGenerator(9)).Float64s()
		b := x.Dropout(0.5, true, tensor.NewGenerator(9)).Float64s()
		assert.Equal(t, a, b)
		assert.Equal(t, 0.0, x.Dropout(1, true, nil).Sum().Item())
		assert.Equal(t, 10000.0, x.Dropout(0, true, nil).Sum().Item())
		assert.Contains(t, panicMsg(func() { x.Dropout(1.5, true, nil) }), "tensor: Dropout: probability has to be between 0 and 1")
	})

	// The kept values are a·scale rounded in the input's compute dtype
	// (float32 here), as PyTorch's input.mul(mask).mul_(scale), whatever
	// the layout: a transposed input gives the bits of its contiguous
	// copy (main rounded strided inputs from a float64 product).
	t.Run("same bits for every layout", func(t *testing.T) {
		a := tensor.Randn([]int{40, 30}, tensor.On(dev), tensor.WithGenerator(tensor.NewGenerator(4))).T()
		strided := a.Dropout(0.1, true, tensor.NewGenerator(2)).Float64s()
		dense := a.Contiguous().Dropout(0.1, true, tensor.NewGenerator(2)).Float64s()
		for i := range dense {
			if math.Float64bits(strided[i]) != math.Float64bits(dense[i]) {
				t.Fatalf("element %d: %v from the transposed input, %v from its contiguous copy", i, strided[i], dense[i])
			}
		}
	})
}

func TestCrossEntropy(t *testing.T) {
	dev := newDev(t)
	t.Run("stable for huge logits", func(t *testing.T) {
		logits := tensor.FromSlice([]float32{1e4, 0, -1e4, 0, 0, 1e4}, []int{2, 3}, tensor.On(dev), tensor.RequiresGrad())
		loss := tensor.CrossEntropy(logits, i64s(dev, 0, 1))
		assert.InDelta(t, 1e4/2, loss.Item(), 1e-3, "row 0 is certain (0), row 1 costs 1e4")
		loss.Backward()
		g := logits.Grad().Float64s()
		assert.InDeltaSlice(t, []float64{0, 0, 0, 0, -0.5, 0.5}, g, 1e-6)
	})
	t.Run("saves the log-softmax", func(t *testing.T) {
		dev := newDev(t) // exact accounting: nothing else on this device
		logits := tensor.Randn([]int{64, 1000}, tensor.On(dev), tensor.RequiresGrad())
		targets := tensor.Zeros([]int{64}, tensor.On(dev), tensor.Int64)
		base := dev.MemoryAllocated()
		loss := tensor.CrossEntropy(logits, targets)
		targets.Release()
		// 64×1000 float32 log-probs, the loss (512 B) and total_weight
		// (0-dim, 512 B, as NllLossBackward0 saves it); the graph holds
		// targets.
		assert.Equal(t, base+256000+512+512, dev.MemoryAllocated())
		loss.Backward()
		assert.Equal(t, base-512+512+256000, dev.MemoryAllocated(), "after backward: targets gone; the loss and logits.grad remain")
	})
	t.Run("misuse", func(t *testing.T) {
		logits := tensor.Zeros([]int{2, 3}, tensor.On(dev))
		assert.Contains(t, panicMsg(func() { tensor.CrossEntropy(logits, i64s(dev, 0, 3)) }), "index 3 is out of bounds")
		assert.Contains(t, panicMsg(func() { tensor.CrossEntropy(logits, i64s(dev, 0)) }), "targets must be [N] = [2]")
		assert.Contains(t, panicMsg(func() { tensor.CrossEntropy(logits.View(6), i64s(dev, 0)) }), "logits must be [N, C]")
		assert.Contains(t, panicMsg(func() { tensor.CrossEntropy(logits, logits.Sum(1)) }), "Int64 or Int32")
	})
}

func TestSoftmaxFloat32(t *testing.T) {
	dev := newDev(t)
	x := tensor.Randn([]int{5, 7}, tensor.On(dev)).Mul(30)
	for _, dim := range []int{0, 1} {
		s := x.Softmax(dim).SumDims([]int{dim}, false).Float64s()
		for _, v := range s {
			assert.InDelta(t, 1, v, 1e-5)
		}
		ls := x.LogSoftmax(dim).Exp().Sum(dim).Float64s()
		for _, v := range ls {
			assert.InDelta(t, 1, v, 1e-5)
		}
	}
	assert.Contains(t, panicMsg(func() { i64s(dev, 1).Softmax(0) }), "floating-point")
}

func TestComparisonsAndWhere(t *testing.T) {
	dev := newDev(t)
	x := tensor.FromSlice([]float32{1, math.Float32frombits(0x7fc00000), 3}, []int{3}, tensor.On(dev), tensor.RequiresGrad())
	for name, c := range map[string]*tensor.Tensor{"Gt": x.Gt(1), "Lt": x.Lt(x), "Ge": x.Ge(1), "Le": x.Le(3.0), "Eq": x.Eq(x)} {
		assert.Equal(t, tensor.Bool, c.Dtype(), name)
		assert.False(t, c.RequiresGrad(), name)
		assert.Equal(t, 0.0, c.At(1), "%s: NaN compares false", name)
	}
	assert.Equal(t, []float64{1, 0, 1}, x.Eq(x).Float64s())
	cond := x.Ge(2)
	y := tensor.Where(cond, x, tensor.Scalar(-1, tensor.On(dev)))
	assert.Equal(t, []float64{-1, -1, 3}, y.Float64s())
	assert.Contains(t, panicMsg(func() { tensor.Where(x, x, x) }), "condition must be a Bool tensor")
	assert.Contains(t, panicMsg(func() { tensor.Where(cond, x, i64s(dev, 1)) }), "dtype mismatch")
	assert.Contains(t, panicMsg(func() { x.Gt("a") }), "operand must be a *Tensor or a number")
}

func TestMaxMinArg(t *testing.T) {
	dev := newDev(t)
	x := tensor.Randn([]int{33, 17, 5}, tensor.On(dev))
	xt := x.Permute(2, 0, 1).Contiguous().Permute(1, 2, 0) // same values, not contiguous
	require.False(t, xt.IsContiguous())
	for dim := range 3 {
		fast, slow := x.Max(dim, true), xt.Max(dim, true)
		assert.Equal(t, fast.Float64s(), slow.Float64s(), "dim %d", dim)
		assert.Equal(t, x.ArgMin(dim, false).Float64s(), xt.ArgMin(dim, false).Float64s(), "dim %d", dim)
		idx := x.ArgMax(dim, true)
		assert.Equal(t, tensor.Int64, idx.Dtype())
		assert.Equal(t, fast.Float64s(), x.Gather(dim, idx).Float64s(), "values at ArgMax")
	}
	assert.Equal(t, []int{33, 5}, x.Max(1, false).Shape())
	assert.Equal(t, []int{33, 1, 5}, x.Min(-2, true).Shape())
	assert.Contains(t, panicMsg(func() { tensor.Zeros([]int{2, 0}, tensor.On(dev)).Max(1, false) }), "size 0")
	// ties: first index, gradient to it only
	w := tensor.FromSlice([]float64{2, 5, 5}, []int{3}, tensor.On(dev), tensor.RequiresGrad())
	w.Max(0, false).Backward()
	assert.Equal(t, []float64{0, 1, 0}, w.Grad().Float64s())
	assert.Equal(t, 1.0, w.ArgMax(0, false).Item())
}

func TestSumMeanFastPathMatchesGeneric(t *testing.T) {
	dev := newDev(t)
	x := tensor.Randn([]int{6, 7, 8}, tensor.On(dev))
	xs := x.Permute(2, 1, 0).Contiguous().Permute(2, 1, 0) // generic loop
	for _, dims := range [][]int{nil, {0}, {1}, {2}, {0, 1}, {1, 2}, {0, 2}} {
		assert.InDeltaSlice(t, xs.SumDims(dims, true).Float64s(), x.SumDims(dims, true).Float64s(), 1e-4, "%v", dims)
		assert.InDeltaSlice(t, xs.MeanDims(dims, false).Float64s(), x.MeanDims(dims, false).Float64s(), 1e-6, "%v", dims)
	}
}

func TestVar(t *testing.T) {
	dev := newDev(t)
	x := tensor.Randn([]int{4, 6}, tensor.On(dev), tensor.Float64)
	for _, unbiased := range []bool{true, false} {
		v := x.Var([]int{1}, true, unbiased)
		assert.Equal(t, []int{4, 1}, v.Shape())
		for r := range 4 {
			row := x.Select(0, r).Float64s()
			var m, s float64
			for _, e := range row {
				m += e / 6
			}
			for _, e := range row {
				s += (e - m) * (e - m)
			}
			if unbiased {
				s /= 5
			} else {
				s /= 6
			}
			assert.InDelta(t, s, v.At(r, 0), 1e-12)
		}
	}
}

func TestCatStackMisuse(t *testing.T) {
	dev := newDev(t)
	a := tensor.Zeros([]int{2, 3}, tensor.On(dev))
	tests := []struct {
		name string
		fn   func()
		msg  string
	}{
		{"empty", func() { tensor.Cat(nil, 0) }, "non-empty list"},
		{"cat sizes", func() { tensor.Cat([]*tensor.Tensor{a, tensor.Zeros([]int{3, 2}, tensor.On(dev))}, 0) }, "sizes of tensors must match except in the concatenating dimension"},
		{"stack sizes", func() { tensor.Stack([]*tensor.Tensor{a, tensor.Zeros([]int{2, 2}, tensor.On(dev))}, 0) }, "sizes of tensors must match to be stacked"},
		{"rank", func() { tensor.Cat([]*tensor.Tensor{a, tensor.Zeros([]int{6}, tensor.On(dev))}, 0) }, "same rank"},
		{"dtype", func() { tensor.Cat([]*tensor.Tensor{a, tensor.Zeros([]int{2, 3}, tensor.On(dev), tensor.Float64)}, 0) }, "dtype mismatch"},
		{"dim", func() { tensor.Stack([]*tensor.Tensor{a}, 3) }, "dimension 3 out of range"},
		{"0-d", func() { tensor.Cat([]*tensor.Tensor{tensor.Scalar(1, tensor.On(dev))}, 0) }, "use Stack"},
	}
	for _, tc := range tests {
		assert.Contains(t, panicMsg(tc.fn), tc.msg, tc.name)
	}
	assert.Equal(t, []int{3}, tensor.Stack([]*tensor.Tensor{tensor.Scalar(1, tensor.On(dev)), tensor.Scalar(2, tensor.On(dev)), tensor.Scalar(3, tensor.On(dev))}, 0).Shape())
}

func TestNewInPlaceOps(t *testing.T) {
	dev := newDev(t)
	tests := []struct {
		name string
		op   func(x *tensor.Tensor) *tensor.Tensor
		want []float64
	}{
		{"SubInPlace", func(x *tensor.Tensor) *tensor.Tensor { return x.SubInPlace(1) }, []float64{-3, -1, 0, 1}},
		{"SubInPlace tensor", func(x *tensor.Tensor) *tensor.Tensor { return x.SubInPlace(f64(dev, []float64{1, 2}, 2)) }, []float64{-3, -2, 0, 0}},
		{"DivInPlace", func(x *tensor.Tensor) *tensor.Tensor { return x.DivInPlace(2) }, []float64{-1, 0, 0.5, 1}},
		{"DivInPlace tensor", func(x *tensor.Tensor) *tensor.Tensor { return x.DivInPlace(f64(dev, []float64{-2, 4}, 2)) }, []float64{1, 0, -0.5, 0.5}},
		{"ReluInPlace", func(x *tensor.Tensor) *tensor.Tensor { return x.ReluInPlace() }, []float64{0, 0, 1, 2}},
		{"ClampInPlace", func(x *tensor.Tensor) *tensor.Tensor { return x.ClampInPlace(-1, 1.5) }, []float64{-1, 0, 1, 1.5}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			x := f64(dev, []float64{-2, 0, 1, 2}, 2, 2)
			v := x.Version()
			y := tc.op(x)
			assert.Same(t, x, y, "returns its receiver")
			assert.Equal(t, tc.want, x.Float64s())
			assert.Equal(t, v+1, x.Version(), "bumps the version counter")

			leaf := tensor.Ones([]int{2, 2}, tensor.On(dev), tensor.Float64, tensor.RequiresGrad())
			assert.Contains(t, panicMsg(func() { tc.op(leaf) }), "a leaf tensor that requires grad")
			tensor.NoGrad(func() { tc.op(leaf) }) // as an optimizer does
		})
	}
	// A saved tensor modified in place: backward names the node.
	x := tensor.Randn([]int{3}, tensor.On(dev), tensor.RequiresGrad())
	y := x.Exp()
	y.ReluInPlace()
	msg := panicMsg(func() { y.Sum().Backward() })
	assert.Contains(t, msg, "modified by an inplace operation")
	assert.Contains(t, msg, "ExpBackward0")
	// ClampInPlace saves its one-byte mask only when t requires grad
	dev = newDev(t) // exact accounting: nothing else on this device
	w := tensor.Zeros([]int{1024}, tensor.On(dev), tensor.RequiresGrad())
	h := w.Mul(2) // non-leaf, requires grad; Mul by a number saves nothing
	base := dev.MemoryAllocated()
	h.ClampInPlace(0, 1)
	assert.Equal(t, base+1024, dev.MemoryAllocated(), "the Bool mask")
	runtime.KeepAlive(h)
	runtime.KeepAlive(w)
}

func TestBinaryOutVariants(t *testing.T) {
	dev := newDev(t)
	a := tensor.Randn([]int{8, 4}, tensor.On(dev))
	b := tensor.Rand([]int{4}, tensor.On(dev)).Add(1)
	out := tensor.Empty([]int{8, 4}, tensor.On(dev))
	tests := []struct {
		name string
		out  func() *tensor.Tensor
		want *tensor.Tensor
	}{
		{"SubOut", func() *tensor.Tensor { return tensor.SubOut(out, a, b) }, a.Sub(b)},
		{"MulOut", func() *tensor.Tensor { return tensor.MulOut(out, a, b) }, a.Mul(b)},
		{"DivOut", func() *tensor.Tensor { return tensor.DivOut(out, a, b) }, a.Div(b)},
		{"AddOut", func() *tensor.Tensor { return tensor.AddOut(out, a, b) }, a.Add(b)},
	}
	for _, tc := range tests {
		before := allocations(dev)
		got := tc.out()
		assert.Equal(t, before, allocations(dev), "%s allocates nothing", tc.name)
		assert.Same(t, out, got)
		assert.Equal(t, tc.want.Float64s(), out.Float64s(), tc.name)
	}
	msg := panicMsg(func() { tensor.MulOut(tensor.Empty([]int{4}, tensor.On(dev)), a, b) })
	assert.Contains(t, msg, "tensor: MulOut: out has shape [4], the result has shape [8, 4]")
	// in place through out = a
	tensor.SubOut(a, a, a)
	assert.Equal(t, 0.0, a.Abs().Sum().Item())
}

func TestNewOpsOnMeta(t *testing.T) {
	meta := newMeta(t)
	x := tensor.Empty([]int{4096, 1024}, tensor.On(meta), tensor.RequiresGrad())
	ids := tensor.Empty([]int{512}, tensor.On(meta), tensor.Int64)
	emb := x.IndexSelect(0, ids)
	assert.Equal(t, []int{512, 1024}, emb.Shape())
	g := emb.Gelu()
	d := g.Dropout(0.1, true, nil)
	h := d.Softmax(-1)
	g.Release() // saved by nobody: freed now, not by the collector mid-test
	d.Release()
	base := meta.MemoryAllocated()
	m := h.Max(1, false)
	assert.Equal(t, []int{512}, m.Shape())
	assert.Equal(t, base+512*4+512*8, meta.MemoryAllocated(), "values and saved int64 indices")
	c := tensor.Cat([]*tensor.Tensor{h, h}, 0)
	assert.Equal(t, []int{1024, 1024}, c.Shape())
	loss := tensor.CrossEntropy(h, ids).Add(m.Sum()).Add(c.Var(nil, false, true))
	assert.True(t, loss.IsMeta())
	loss.Backward()
	assert.Equal(t, []int{4096, 1024}, x.Grad().Shape())
	assert.Contains(t, panicMsg(func() { loss.Item() }), "no data")
}

func TestContiguousTransposedFloat32(t *testing.T) {
	dev := newDev(t)
	x := tensor.Randn([]int{70, 130}, tensor.On(dev))
	c := x.T().Contiguous()
	require.True(t, c.IsContiguous())
	for _, ij := range [][2]int{{0, 0}, {129, 69}, {17, 33}, {64, 64}} {
		assert.Equal(t, x.At(ij[1], ij[0]), c.At(ij[0], ij[1]))
	}
	assert.Equal(t, x.Sum().Item(), c.Sum().Item())
}

// ReLU's backward is PyTorch's threshold_backward: one pass that
// allocates only the gradient, no mask tensor, and passes the gradient
// where the output is positive (or NaN).
func TestReluBackwardAllocatesOnlyTheGradient(t *testing.T) {
	dev := newDev(t)
	x := tensor.FromSlice([]float32{-1, 0, 2, float32(math.NaN())}, []int{4}, tensor.On(dev), tensor.RequiresGrad())
	y := x.Relu()
	g := tensor.FromSlice([]float32{5, 6, 7, 8}, []int{4}, tensor.On(dev))
	y.Backward(tensor.WithGradient(g))
	assert.Equal(t, []float64{0, 0, 7, 8}, x.Grad().Float64s())

	big := tensor.Randn([]int{64, 64}, tensor.On(dev), tensor.RequiresGrad())
	r := big.Relu()
	gr := tensor.Ones([]int{64, 64}, tensor.On(dev))
	base := dev.MemoryAllocated()
	dev.ResetPeakStats()
	r.Backward(tensor.WithGradient(gr))
	assert.EqualValues(t, 64*64*4, dev.MaxMemoryAllocated()-base, "the gradient only, which becomes big.Grad()")
}

// An elementwise backward holds what PyTorch's does at its peak: the
// gradient alone where PyTorch's formula is one kernel (sigmoid_backward,
// tanh_backward, gelu_backward), the gradient and a temporary where it is
// two ops (abs: grad * self.sgn()). The values are g·f'(x) either way.
func TestElementwiseBackwardMemory(t *testing.T) {
	const n = 64 * 64
	for _, tc := range []struct {
		name    string
		forward func(*tensor.Tensor) *tensor.Tensor
		blocks  int64 // blocks of n float32 at the backward's peak
	}{
		{"Sigmoid", (*tensor.Tensor).Sigmoid, 1},
		{"Tanh", (*tensor.Tensor).Tanh, 1},
		{"Gelu", (*tensor.Tensor).Gelu, 1},
		{"GeluTanh", (*tensor.Tensor).GeluTanh, 1},
		{"Abs", (*tensor.Tensor).Abs, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dev := newDev(t)
			x := tensor.Randn([]int{64, 64}, tensor.On(dev), tensor.RequiresGrad())
			y := tc.forward(x)
			g := tensor.Randn([]int{64, 64}, tensor.On(dev))
			base := dev.MemoryAllocated()
			dev.ResetPeakStats()
			y.Backward(tensor.WithGradient(g))
			assert.EqualValues(t, tc.blocks*n*4, dev.MaxMemoryAllocated()-base)

			// The same values as g times the derivative computed alone.
			x2 := x.Detach().Clone().SetRequiresGrad(true)
			ones := tensor.Ones([]int{64, 64}, tensor.On(dev))
			tc.forward(x2).Backward(tensor.WithGradient(ones))
			want := g.Mul(x2.Grad())
			assert.Equal(t, want.Float64s(), x.Grad().Float64s())
		})
	}
}

// FusedAdam updates in place: nothing is allocated, versions move, and on
// a meta device it runs (no values) instead of refusing; a strided
// parameter is left to the caller's composed update.
func TestFusedAdam(t *testing.T) {
	s := tensor.AdamScalars{LR: 0.1, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, Step: 1}
	for _, dev := range []*device.Device{newDev(t), newMeta(t)} {
		p := tensor.Zeros([]int{8, 4}, tensor.On(dev))
		g, m, v := tensor.Ones([]int{8, 4}, tensor.On(dev)), tensor.Zeros([]int{8, 4}, tensor.On(dev)), tensor.Zeros([]int{8, 4}, tensor.On(dev))
		before, version := dev.Stats()["allocation.all.allocated"], p.Storage().Version()
		require.True(t, tensor.FusedAdam(p, g, m, v, s))
		assert.Equal(t, before, dev.Stats()["allocation.all.allocated"], dev.Name())
		assert.Greater(t, p.Storage().Version(), version)
		if !p.IsMeta() {
			assert.InDelta(t, -0.1, p.At(0, 0), 1e-6, "the first step moves by lr·sign(g)")
		}
		pt := tensor.Zeros([]int{4, 8}, tensor.On(dev)).T()
		assert.False(t, tensor.FusedAdam(pt, g, m, v, s), "strided: not fused")
	}
	dev := newDev(t)
	assert.Contains(t, panicMsg(func() {
		tensor.FusedAdam(tensor.Zeros([]int{3}, tensor.On(dev)), tensor.Zeros([]int{4}, tensor.On(dev)), tensor.Zeros([]int{3}, tensor.On(dev)), tensor.Zeros([]int{3}, tensor.On(dev)), s)
	}), "does not match the gradient's [4]")
}

// TestClampGradientMatchesPyTorch: clamp's backward compares x with the
// bounds rounded to x's dtype, as PyTorch compares a tensor with a Python
// number. The float32, bfloat16 and float64 rows are PyTorch 1.13.1's
// x.grad after x.clamp(0.7, 1.1).sum().backward() and after
// x.mul(1.0).clamp_(0.7, 1.1) (the same), measured on Debian 12's
// python3-torch; its CPU build has no float16 clamp, so that row follows
// the same rule (torch.tensor([0.7], dtype=torch.float16) >= 0.7 is True
// there).
func TestClampGradientMatchesPyTorch(t *testing.T) {
	dev := newDev(t)
	xs := []float64{0.7, 1.1, 1.0, 0.6999999, 1.1000001, 0.69, 1.11, math.NaN(), -5, 5}
	tests := []struct {
		dt   tensor.Dtype
		want []float64
	}{
		{tensor.Float32, []float64{1, 1, 1, 0, 0, 0, 0, 0, 0, 0}},
		{tensor.Float64, []float64{1, 1, 1, 0, 0, 0, 0, 0, 0, 0}},
		{tensor.BFloat16, []float64{1, 1, 1, 1, 1, 0, 0, 0, 0, 0}},
		{tensor.Float16, []float64{1, 1, 1, 1, 1, 0, 0, 0, 0, 0}},
	}
	for _, tt := range tests {
		grad := func(inPlace bool) []float64 {
			x := tensor.FromSlice(xs, []int{len(xs)}, tensor.On(dev)).ToDtype(tt.dt).SetRequiresGrad(true)
			var y *tensor.Tensor
			if inPlace {
				y = x.Mul(1.0).ClampInPlace(0.7, 1.1)
			} else {
				y = x.Clamp(0.7, 1.1)
			}
			y.Sum().Backward()
			return x.Grad().Float64s()
		}
		assert.Equal(t, tt.want, grad(false), "%s Clamp", tt.dt)
		assert.Equal(t, tt.want, grad(true), "%s ClampInPlace", tt.dt)
	}
}
