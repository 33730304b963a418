package sklinear

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpumem/course/gpukit/device"
	"github.com/gpumem/course/gpukit/device/simtest"
	"github.com/gpumem/course/gpukit/tensor"
	"github.com/gpumem/course/gpukit/tensor/gradcheck"
	"github.com/gpumem/course/gpukit/tensor/tensortest"
)

func newDev(t testing.TB) *device.Device {
	t.Helper()
	// the first product on the card takes cuBLAS's workspace (lesson 02),
	// which stays for good: take it now, so that the tests measure tensors
	return simtest.Card(t, simtest.BlasWorkspace())
}

// f64 are the options of float64 tensors on dev drawn from seed.
func f64(dev *device.Device, seed uint64) []tensor.Option {
	return []tensor.Option{tensor.On(dev), tensor.Float64, tensor.WithGenerator(tensor.NewGenerator(seed))}
}

// set writes vals into t's elements, in order.
func set(t *tensor.Tensor, vals ...float64) {
	tensor.NoGrad(func() {
		flat := t.Reshape(-1)
		defer flat.Release()
		for i, v := range vals {
			flat.SetAt(v, i)
		}
	})
}

// shapeOf is a tensor's shape for a message, or "none" for nil.
func shapeOf(t *tensor.Tensor) any {
	if t == nil {
		return "none"
	}
	return t.Shape()
}

// formula computes y for x [B, in] with plain loops.
func formula(x []float64, B, in, out int, l *Layer) []float64 {
	L, k := l.S1s.Size(0), l.S1s.Size(2)
	s1, s2, u1, u2 := l.S1s.Float64s(), l.S2s.Float64s(), l.U1s.Float64s(), l.U2s.Float64s()
	var b []float64
	if l.Bias != nil {
		b = l.Bias.Float64s()
	}
	y := make([]float64, B*out)
	for row := range B {
		for o := range out {
			var sum float64
			for i := range L {
				for r := range k {
					var xs1, xu2 float64
					for j := range in {
						xs1 += x[row*in+j] * s1[(i*in+j)*k+r]
						xu2 += x[row*in+j] * u2[(i*in+j)*k+r]
					}
					sum += xs1*u1[(i*k+r)*out+o] + xu2*s2[(i*k+r)*out+o]
				}
			}
			y[row*out+o] = sum / float64(2*L)
			if b != nil {
				y[row*out+o] += b[o]
			}
		}
	}
	return y
}

// The grader's TestForwardHandChecked checks another hand-checked example.
// Here L = 1, k = 1, in = 3, out = 2: S1 = [1 1 0]ᵀ, U1 = [1 -1],
// U2 = [1 -1 1]ᵀ, S2 = [.5 .25], b = [.5 -1]. For x = [2 -1 1]: x·S1 = 1,
// x·U2 = 4, y = ([1 -1] + [2 1])/2 + b = [2 -1]. For x = [0 1 3]: x·S1 = 1,
// x·U2 = 2, y = ([1 -1] + [1 .5])/2 + b = [1.5 -1.25].
func TestForwardHandChecked(t *testing.T) {
	dev := newDev(t)
	l := NewLayer(3, 2, 1, 1, true, f64(dev, 1)...)
	set(l.S1s, 1, 1, 0)
	set(l.U1s, 1, -1)
	set(l.U2s, 1, -1, 1)
	set(l.S2s, 0.5, 0.25)
	set(l.Bias, 0.5, -1)
	x := tensor.FromSlice([]float64{2, -1, 1, 0, 1, 3}, []int{2, 3}, tensor.On(dev))
	var y *tensor.Tensor
	tensor.NoGrad(func() { y = SketchedForward(x, l.S1s, l.S2s, l.U1s, l.U2s, l.Bias) })
	require.NotNil(t, y, "SketchedForward returned nil")
	require.Equal(t, []int{2, 2}, y.Shape(), "the shape of y for x [2, 3] and out = 2")
	assert.InDeltaSlice(t, []float64{2, -1, 1.5, -1.25}, y.Float64s(), 1e-12, "y, row by row")
}

// The public twin of the grader's TestHiddenForwardFormula, on other
// shapes, terms, ranks and seeds: the forward pass equals the formula,
// computed with plain loops, with and without bias.
func TestForwardMatchesFormula(t *testing.T) {
	tensortest.NoCollector(t)
	dev := newDev(t)
	for _, tc := range []struct {
		in, out, terms, rank int
		bias                 bool
	}{{9, 4, 2, 2, false}, {5, 11, 4, 1, true}, {8, 6, 3, 3, true}} {
		l := NewLayer(tc.in, tc.out, tc.terms, tc.rank, tc.bias, f64(dev, 12)...)
		x := tensor.Randn([]int{3, tc.in}, f64(dev, 13)...)
		var y *tensor.Tensor
		tensor.NoGrad(func() { y = SketchedForward(x, l.S1s, l.S2s, l.U1s, l.U2s, l.Bias) })
		require.NotNil(t, y, "SketchedForward returned nil")
		what := fmt.Sprintf("in %d, out %d, %d terms of rank %d, bias %v", tc.in, tc.out, tc.terms, tc.rank, tc.bias)
		require.Equal(t, []int{3, tc.out}, y.Shape(), "the shape of y: %s", what)
		assert.InDeltaSlice(t, formula(x.Float64s(), 3, tc.in, tc.out, l), y.Float64s(), 1e-12, "y against the formula: %s", what)
	}
}

// The grader's TestGradcheck checks another layer: the backward pass
// agrees with finite differences for x, S1s, S2s and the bias, with and
// without bias.
func TestGradcheck(t *testing.T) {
	dev := newDev(t)
	for _, bias := range []bool{true, false} {
		l := NewLayer(5, 4, 3, 2, bias, f64(dev, 14)...)
		x := tensor.Randn([]int{2, 5}, f64(dev, 15)...).SetRequiresGrad(true)
		inputs := []*tensor.Tensor{x, l.S1s, l.S2s}
		if bias {
			inputs = append(inputs, l.Bias)
		}
		err := gradcheck.Check(func([]*tensor.Tensor) *tensor.Tensor { return l.Forward(x) }, inputs, gradcheck.Options{})
		assert.NoError(t, err, "gradcheck of a layer with bias %v", bias)
	}
}

// The public twin of the grader's TestHiddenNeeds, with other needs and
// another layer: only the needed gradients are computed; the buffers and
// an input without grad get none.
func TestOnlyNeededGradients(t *testing.T) {
	tensortest.NoCollector(t)
	dev := newDev(t)
	l := NewLayer(4, 3, 3, 1, true, f64(dev, 16)...)
	x := tensor.Randn([]int{2, 4}, f64(dev, 17)...) // no grad for x
	g := tensor.Ones([]int{2, 3}, tensor.On(dev), tensor.Float64)
	saved := []*tensor.Tensor{x, l.S1s, l.S2s, l.U1s, l.U2s}
	// a backward runs with grad mode off, as autograd calls it
	var grads []*tensor.Tensor
	tensor.NoGrad(func() { grads = SketchedBackward(g, saved, []bool{true, false, true, false}) })
	require.Len(t, grads, 4, "one gradient (or nil) for each of x, S1s, S2s and the bias")
	assert.True(t, grads[1] == nil, "needs[1] is false: no gradient for S1s, got one of shape %v", shapeOf(grads[1]))
	assert.True(t, grads[3] == nil, "needs[3] is false: no gradient for the bias, got one of shape %v", shapeOf(grads[3]))
	require.NotNil(t, grads[0], "needs[0] is true: x's gradient")
	require.NotNil(t, grads[2], "needs[2] is true: S2s's gradient")
	assert.Equal(t, []int{2, 4}, grads[0].Shape(), "x's gradient has x's shape")
	assert.Equal(t, []int{3, 1, 3}, grads[2].Shape(), "S2s's gradient has S2s's shape")
	tensor.NoGrad(func() { grads = SketchedBackward(g, saved, []bool{false, false, false, true}) })
	require.Len(t, grads, 4)
	require.NotNil(t, grads[3], "needs[3] is true: the bias's gradient")
	assert.Equal(t, []float64{2, 2, 2}, grads[3].Float64s(), "the bias's gradient sums g over the batch of 2")
	for i := range 3 {
		assert.True(t, grads[i] == nil, "needs[%d] is false: no gradient, got one of shape %v", i, shapeOf(grads[i]))
	}

	y := l.Forward(x)
	loss := y.Sum()
	loss.Backward()
	assert.True(t, l.U1s.Grad() == nil, "U1s is a buffer: it gets no gradient (got one of shape %v)", shapeOf(l.U1s.Grad()))
	assert.True(t, l.U2s.Grad() == nil, "U2s is a buffer: it gets no gradient (got one of shape %v)", shapeOf(l.U2s.Grad()))
	assert.True(t, x.Grad() == nil, "x does not require a gradient: it gets none (got one of shape %v)", shapeOf(x.Grad()))
	require.NotNil(t, l.S1s.Grad(), "S1s is trained: it gets a gradient")
	assert.Equal(t, []int{3, 4, 1}, l.S1s.Grad().Shape(), "S1s's gradient has S1s's shape")
}

// wantGrads returns the gradients of x, S1s, S2s and the bias for the
// output gradient g, which autograd derives through the formula written
// with tensor ops (nil for the bias of a layer without one).
func wantGrads(x, g *tensor.Tensor, l *Layer) [][]float64 {
	var leaves []*tensor.Tensor
	tensor.NoGrad(func() {
		for _, p := range []*tensor.Tensor{x, l.S1s, l.S2s, l.Bias} {
			if p != nil {
				leaves = append(leaves, p.Clone().SetRequiresGrad(true))
			}
		}
	})
	xl, s1s, s2s := leaves[0], leaves[1], leaves[2]
	L := l.S1s.Size(0)
	var y *tensor.Tensor
	for i := range L {
		s1, s2, u1, u2 := s1s.Select(0, i), s2s.Select(0, i), l.U1s.Select(0, i), l.U2s.Select(0, i)
		term := xl.Matmul(s1).Matmul(u1).Add(xl.Matmul(u2).Matmul(s2))
		if y == nil {
			y = term
		} else {
			y = y.Add(term)
		}
	}
	y = y.Mul(1 / float64(2*L))
	if len(leaves) == 4 {
		y = y.Add(leaves[3])
	}
	y.Mul(g).Sum().Backward()
	want := make([][]float64, 4)
	for i, p := range leaves {
		want[i] = p.Grad().Float64s()
	}
	for _, p := range leaves {
		p.SetGrad(nil)
		p.Release()
	}
	tensor.CollectGarbage() // the products above, which nothing refers to now
	return want
}

// The public twin of the grader's TestHiddenForwardPeak, on other layers:
// while SketchedForward runs, at most one [B, out] and one [B, k] tensor
// are allocated beside y, so its peak passes what was allocated before
// the call by 2·B·out + B·k elements at most; and y is right.
func TestForwardPeak(t *testing.T) {
	tensortest.NoCollector(t)
	dev := newDev(t)
	for _, tc := range []struct {
		B, in, out, terms, rank int
		bias                    bool
	}{{32, 128, 256, 3, 16, true}, {8, 384, 128, 2, 64, false}} {
		l := NewLayer(tc.in, tc.out, tc.terms, tc.rank, tc.bias, tensor.On(dev), tensor.WithGenerator(tensor.NewGenerator(19)))
		x := tensor.Randn([]int{tc.B, tc.in}, tensor.On(dev), tensor.WithGenerator(tensor.NewGenerator(20)))
		base := dev.MemoryAllocated()
		dev.ResetPeakStats()
		var y *tensor.Tensor
		tensor.NoGrad(func() { y = SketchedForward(x, l.S1s, l.S2s, l.U1s, l.U2s, l.Bias) })
		peak := dev.MaxMemoryAllocated() - base
		require.NotNil(t, y, "SketchedForward returned nil")
		what := fmt.Sprintf("B %d, in %d, out %d, %d terms of rank %d", tc.B, tc.in, tc.out, tc.terms, tc.rank)
		assert.LessOrEqual(t, peak, int64(2*tc.B*tc.out+tc.B*tc.rank)*4,
			"the forward's peak above what was allocated before it (%s): y, one [B, out] and one [B, k] float32 tensor at most", what)
		require.Equal(t, []int{tc.B, tc.out}, y.Shape(), "the shape of y: %s", what)
		assert.InDeltaSlice(t, formula(x.Float64s(), tc.B, tc.in, tc.out, l), y.Float64s(), 1e-4, "y against the formula: %s", what)
		y.Release()
		x.Release()
		l.Release()
	}
}

// The public twin of the grader's TestHiddenBackwardPeak, on another layer
// and other needs: while SketchedBackward runs, at most one [B, in] and one
// [B, k] tensor are allocated beside the gradients it returns; and the
// gradients are right.
func TestBackwardPeak(t *testing.T) {
	tensortest.NoCollector(t)
	dev := newDev(t)
	const B, in, out, L, k = 32, 128, 256, 3, 16 // every tensor a multiple of 512 bytes
	l := NewLayer(in, out, L, k, true, tensor.On(dev), tensor.WithGenerator(tensor.NewGenerator(21)))
	x := tensor.Randn([]int{B, in}, tensor.On(dev), tensor.WithGenerator(tensor.NewGenerator(22)))
	g := tensor.Randn([]int{B, out}, tensor.On(dev), tensor.WithGenerator(tensor.NewGenerator(23)))
	want := wantGrads(x, g, l)
	saved := []*tensor.Tensor{x, l.S1s, l.S2s, l.U1s, l.U2s}
	names := []string{"x", "S1s", "S2s", "the bias"}
	sizes := []int64{B * in * 4, L * in * k * 4, L * k * out * 4, out * 4}
	for _, needs := range [][]bool{{true, true, true, true}, {true, true, false, false}, {false, false, true, true}} {
		base := dev.MemoryAllocated()
		dev.ResetPeakStats()
		var grads []*tensor.Tensor
		tensor.NoGrad(func() { grads = SketchedBackward(g, saved, needs) })
		peak := dev.MaxMemoryAllocated() - base
		require.Len(t, grads, 4, "one gradient (or nil) for each of x, S1s, S2s and the bias")
		var returned int64
		for i, need := range needs {
			if !need {
				continue
			}
			require.NotNil(t, grads[i], "needs %v: %s's gradient", needs, names[i])
			returned += sizes[i]
			assert.InDeltaSlice(t, want[i], grads[i].Float64s(), 1e-4, "needs %v: %s's gradient against autograd's", needs, names[i])
		}
		assert.LessOrEqual(t, peak, returned+int64(B*in+B*k)*4,
			"needs %v: the backward's peak above what was allocated before it: the gradients (%d bytes), one [B, in] and one [B, k] float32 tensor at most", needs, returned)
		for _, d := range grads {
			d.Release()
		}
	}
	runtime.KeepAlive(l) // the layer, x and g count in every base
	runtime.KeepAlive(x)
	runtime.KeepAlive(g)
}

// The public twin of the grader's TestHiddenMemory, on another layer: a
// forward pass leaves only its output allocated (the node saves references
// to tensors that exist anyway); backward leaves only the gradients.
func TestMemoryOnlyOutputAndGradients(t *testing.T) {
	tensortest.NoCollector(t)
	dev := newDev(t)
	const B, in, out, L, k = 16, 192, 256, 3, 8 // every tensor a multiple of 512 bytes
	l := NewLayer(in, out, L, k, true, tensor.On(dev), tensor.WithGenerator(tensor.NewGenerator(18)))
	x := tensor.Randn([]int{B, in}, tensor.On(dev)).SetRequiresGrad(true)
	base := dev.MemoryAllocated()
	y := l.Forward(x)
	require.NotNil(t, y, "Forward returned nil")
	assert.EqualValues(t, base+B*out*4, dev.MemoryAllocated(), "bytes allocated after forward: only the output may stay, release every intermediate")
	loss := y.Sum()
	loss.Backward()
	loss.Release()
	y.Release()
	grads := int64(B*in+L*in*k+L*k*out+out) * 4
	assert.EqualValues(t, base+grads, dev.MemoryAllocated(), "bytes allocated after backward: only the gradients of x, S1s, S2s and the bias may stay")
	runtime.KeepAlive(l) // the layer and x count in base
	runtime.KeepAlive(x)
}
