package tensor_test

import (
	"math"
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpumem/course/gpukit/tensor"
)

// Values worked by hand: the row [1, 2, 3, 6] has mean 3 and biased
// variance 3.5; the channels of [[1, 10], [3, 20], [5, 30]] have means
// [3, 20], biased variances [8/3, 200/3] and unbiased ones [4, 100].
func TestNormForwardValues(t *testing.T) {
	dev := newDev(t)
	o := []tensor.Option{tensor.On(dev), tensor.Float64}
	x := tensor.FromSlice([]float64{1, 2, 3, 6}, []int{1, 4}, o...)
	w := tensor.FromSlice([]float64{1, 2, 1, 1}, []int{4}, o...)
	b := tensor.FromSlice([]float64{0, 0, 0, 0.5}, []int{4}, o...)
	y := tensor.LayerNorm(x, []int{4}, w, b, 0)
	s := 1 / math.Sqrt(3.5)
	assert.InDeltaSlice(t, []float64{-2 * s, -2 * s, 0, 3*s + 0.5}, y.Float64s(), 1e-12)

	bx := tensor.FromSlice([]float64{1, 10, 3, 20, 5, 30}, []int{3, 2}, o...)
	rm := tensor.Zeros([]int{2}, o...)
	rv := tensor.Ones([]int{2}, o...)
	v0 := rm.Storage().Version()
	by := tensor.BatchNorm(bx, nil, nil, rm, rv, true, 0.1, 0)
	assert.InDeltaSlice(t, []float64{-2 / math.Sqrt(8.0/3), -10 / math.Sqrt(200.0/3)}, []float64{by.At(0, 0), by.At(0, 1)}, 1e-12)
	assert.InDeltaSlice(t, []float64{0.3, 2}, rm.Float64s(), 1e-12)
	assert.InDeltaSlice(t, []float64{0.9 + 0.4, 0.9 + 10}, rv.Float64s(), 1e-12, "running_var takes the unbiased variance")
	assert.Greater(t, rm.Storage().Version(), v0, "the running statistics are updated in place")
	ey := tensor.BatchNorm(bx, nil, nil, rm, rv, false, 0.1, 0)
	assert.InDelta(t, (1-0.3)/math.Sqrt(1.3), ey.At(0, 0), 1e-12)
	assert.InDeltaSlice(t, []float64{0.3, 2}, rm.Float64s(), 1e-12, "eval leaves the running statistics")
}

// float32 inputs keep float32 statistics; a half input has float32 ones
// too (PyTorch's accumulation type), so its saved bytes are those of
// float32 statistics.
func TestNormStatisticsDtype(t *testing.T) {
	dev := newDev(t)
	for _, dt := range []tensor.Dtype{tensor.Float32, tensor.Float16} {
		x := tensor.Randn([]int{256, 64}, tensor.On(dev), dt, tensor.RequiresGrad())
		base := dev.MemoryAllocated()
		y := tensor.LayerNorm(x, []int{64}, nil, nil, 1e-5)
		assert.Equal(t, dt, y.Dtype())
		loss := y.Sum() // keeps the graph
		y.Release()
		assert.EqualValues(t, 512+2*1024, dev.MemoryAllocated()-base, "%s: the loss, and mean and rstd, 256 float32 each", dt)
		loss.Release()
		assert.EqualValues(t, 0, dev.MemoryAllocated()-base, "%s: releasing the loss frees the graph", dt)
	}
}

func TestNormMisuse(t *testing.T) {
	dev := newDev(t)
	x := tensor.Zeros([]int{4, 3}, tensor.On(dev))
	tests := []struct {
		name string
		fn   func()
		msg  string
	}{
		{"layer shape", func() { tensor.LayerNorm(x, []int{4}, nil, nil, 1e-5) }, "does not end in the normalized shape [4]"},
		{"layer empty shape", func() { tensor.LayerNorm(x, nil, nil, nil, 1e-5) }, "normalized shape"},
		{"layer weight", func() { tensor.LayerNorm(x, []int{3}, tensor.Ones([]int{4}, tensor.On(dev)), nil, 1e-5) }, "weight has shape [4], expected [3]"},
		{"layer dtype", func() {
			tensor.LayerNorm(x, []int{3}, nil, tensor.Zeros([]int{3}, tensor.On(dev), tensor.Float64), 1e-5)
		}, "bias has dtype float64"},
		{"layer int", func() { tensor.LayerNorm(tensor.Zeros([]int{2}, tensor.On(dev), tensor.Int64), []int{2}, nil, nil, 0) }, "floating-point"},
		{"batch rank", func() { tensor.BatchNorm(tensor.Zeros([]int{4}, tensor.On(dev)), nil, nil, nil, nil, true, 0.1, 1e-5) }, "expected a 2-d [N, C] or 3-d [N, C, L] input"},
		{"batch one value", func() {
			tensor.BatchNorm(tensor.Zeros([]int{1, 3}, tensor.On(dev)), nil, nil, nil, nil, true, 0.1, 1e-5)
		}, "more than 1 value per channel"},
		{"batch eval stats", func() { tensor.BatchNorm(x, nil, nil, nil, nil, false, 0.1, 1e-5) }, "must be defined in evaluation mode"},
		{"batch weight", func() { tensor.BatchNorm(x, tensor.Ones([]int{4}, tensor.On(dev)), nil, nil, nil, true, 0.1, 1e-5) }, "weight has shape [4], expected [3]"},
	}
	for _, tc := range tests {
		assert.Contains(t, panicMsg(tc.fn), tc.msg, tc.name)
	}
}

// On a meta device the norms allocate their outputs and statistics and
// compute nothing; backward gives gradients of the right shapes.
func TestNormOnMeta(t *testing.T) {
	meta := newMeta(t)
	x := tensor.Empty([]int{512, 1024}, tensor.On(meta), tensor.RequiresGrad())
	w := tensor.Empty([]int{1024}, tensor.On(meta), tensor.RequiresGrad())
	base := meta.MemoryAllocated()
	y := tensor.LayerNorm(x, []int{1024}, w, nil, 1e-5)
	assert.EqualValues(t, 512*1024*4+2*2048, meta.MemoryAllocated()-base)
	z := tensor.BatchNorm(y, w, nil, nil, nil, true, 0.1, 1e-5)
	loss := z.Sum()
	loss.Backward()
	require.NotNil(t, x.Grad())
	assert.Equal(t, []int{512, 1024}, x.Grad().Shape())
	assert.Equal(t, []int{1024}, w.Grad().Shape())
}

// FuzzNorms runs LayerNorm and BatchNorm forward and backward on random
// shapes, with and without weight and bias, in training and eval, on a
// device small enough that large shapes run out of memory part way: every
// outcome must leave allocated memory where it started once the tensors
// are released.
func FuzzNorms(f *testing.F) {
	f.Add(uint8(3), uint8(4), uint8(0), true, true)
	f.Add(uint8(1), uint8(1), uint8(2), false, false)
	f.Add(uint8(200), uint8(250), uint8(5), true, false)
	f.Fuzz(func(t *testing.T, rows, cols, length uint8, affine, training bool) {
		defer debug.SetGCPercent(debug.SetGCPercent(-1))
		dev := newDevCap(t, 1<<20)
		base := dev.MemoryAllocated()
		var made []*tensor.Tensor
		keep := func(ts ...*tensor.Tensor) {
			for _, x := range ts {
				if x != nil {
					made = append(made, x)
				}
			}
		}
		shape := []int{int(rows), int(cols)}
		if length%3 != 0 {
			shape = append(shape, int(length%5))
		}
		err := tensor.Try(func() {
			opts := []tensor.Option{tensor.On(dev), tensor.Float64, tensor.RequiresGrad()}
			x := tensor.Randn(shape, opts...)
			keep(x)
			var w, b *tensor.Tensor
			if affine {
				w, b = tensor.Ones([]int{int(cols)}, opts...), tensor.Zeros([]int{int(cols)}, opts...)
				keep(w, b)
			}
			rm, rv := tensor.Zeros([]int{int(cols)}, tensor.On(dev), tensor.Float64), tensor.Ones([]int{int(cols)}, tensor.On(dev), tensor.Float64)
			keep(rm, rv)
			var ln *tensor.Tensor
			if len(shape) == 2 {
				var lw, lb *tensor.Tensor
				if affine {
					lw, lb = w, b
				}
				ln = tensor.LayerNorm(x, shape[1:], lw, lb, 1e-5)
			} else {
				ln = tensor.LayerNorm(x, shape[2:], nil, nil, 1e-5)
			}
			keep(ln)
			bn := tensor.BatchNorm(ln, w, b, rm, rv, training, 0.1, 1e-5)
			keep(bn)
			loss := bn.Sum()
			keep(loss)
			loss.Backward()
		})
		if err != nil {
			t.Logf("refused: %v", err)
		}
		for _, x := range made {
			x.SetGrad(nil)
			x.Release()
		}
		tensor.CollectGarbage() // an op that ran out of memory leaves temporaries to the collector
		if got := dev.MemoryAllocated(); got != base {
			t.Fatalf("shape %v: %d bytes still allocated after releasing everything", shape, got-base)
		}
	})
}
