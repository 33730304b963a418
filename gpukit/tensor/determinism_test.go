package tensor_test

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gpumem/course/gpukit/tensor"
)

// rowOpResults runs the row-wise nn ops and their backwards on fixed
// inputs and returns every value they produce, in order.
func rowOpResults(t *testing.T) []float64 {
	dev := newDev(t)
	gen := tensor.WithGenerator(tensor.NewGenerator(3))
	x := tensor.Randn([]int{257, 515}, tensor.On(dev), gen, tensor.RequiresGrad())
	w := tensor.Randn([]int{515}, tensor.On(dev), gen, tensor.RequiresGrad())
	b := tensor.Randn([]int{515}, tensor.On(dev), gen, tensor.RequiresGrad())
	g := tensor.Randn([]int{257, 515}, tensor.On(dev), gen)
	targets := tensor.Randint(0, 515, []int{257}, tensor.On(dev), gen)
	var out []float64
	grads := func(ts ...*tensor.Tensor) {
		for _, p := range ts {
			out = append(out, p.Grad().Float64s()...)
			p.SetGrad(nil)
		}
	}
	tensor.NoGrad(func() {
		xb := x.View(257, 5, 103).Transpose(0, 1) // a batch of 5 products
		out = append(out, xb.Matmul(xb.Transpose(1, 2)).Float64s()...)
	})
	for _, y := range []*tensor.Tensor{x.Softmax(-1), x.LogSoftmax(-1), x.Gelu(), tensor.LayerNorm(x, []int{515}, w, b, 1e-5)} {
		out = append(out, y.Float64s()...)
		y.Backward(tensor.WithGradient(g))
		grads(x)
		if w.Grad() != nil {
			grads(w, b)
		}
	}
	l := tensor.CrossEntropy(x, targets)
	out = append(out, l.Float64s()...)
	l.Backward()
	grads(x)
	return out
}

// TestRowOpsIndependentOfCores checks that softmax, log-softmax, GELU,
// LayerNorm and cross-entropy (forward and backward) and a batched matmul
// give the same bits whatever the number of cores: the grader and the
// lessons print the same figures on a laptop and a server.
func TestRowOpsIndependentOfCores(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	var want []float64
	for _, procs := range []int{1, 2, 8} {
		runtime.GOMAXPROCS(procs)
		got := rowOpResults(t)
		if want == nil {
			want = got
			continue
		}
		require.Equal(t, want, got, "GOMAXPROCS=%d", procs)
	}
}

// TestHalfFastPathMatchesGeneral checks that float16 and bfloat16 ops on
// contiguous tensors (widened to float32 a stripe at a time) give the bits
// of the per-element loop that transposed views take.
func TestHalfFastPathMatchesGeneral(t *testing.T) {
	dev := newDev(t)
	gen := tensor.WithGenerator(tensor.NewGenerator(5))
	for _, dt := range []tensor.Dtype{tensor.Float16, tensor.BFloat16} {
		x := tensor.Randn([]int{67, 45}, tensor.On(dev), gen).Mul(3).ToDtype(dt)
		y := tensor.Randn([]int{67, 45}, tensor.On(dev), gen).ToDtype(dt)
		xt, yt := x.T().Contiguous().T(), y.T().Contiguous().T() // same values, transposed layout
		require.False(t, xt.IsContiguous())
		for name, f := range map[string]func(a, b *tensor.Tensor) *tensor.Tensor{
			"Exp":  func(a, _ *tensor.Tensor) *tensor.Tensor { return a.Exp() },
			"Gelu": func(a, _ *tensor.Tensor) *tensor.Tensor { return a.Gelu() },
			"Tanh": func(a, _ *tensor.Tensor) *tensor.Tensor { return a.Tanh() },
			"Mul":  func(a, b *tensor.Tensor) *tensor.Tensor { return a.Mul(b) },
			"Div":  func(a, b *tensor.Tensor) *tensor.Tensor { return a.Div(b) },
		} {
			require.Equal(t, f(xt, yt).Float64s(), f(x, y).Float64s(), "%s %s", dt, name)
		}
	}
}
