package sklinear

import (
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

func f64(dev *device.Device, seed uint64) []tensor.Option {
	return []tensor.Option{tensor.On(dev), tensor.Float64, tensor.WithGenerator(tensor.NewGenerator(seed))}
}

func set(t *tensor.Tensor, vals ...float64) {
	tensor.NoGrad(func() {
		flat := t.Reshape(-1)
		defer flat.Release()
		for i, v := range vals {
			flat.SetAt(v, i)
		}
	})
}

// formula computes y with plain loops.
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

func TestHiddenForwardHandChecked(t *testing.T) {
	tensortest.NoCollector(t)
	dev := newDev(t)
	l := NewLayer(4, 4, 1, 1, true, f64(dev, 1)...)
	set(l.S1s, 1, 0, 0, 1)
	set(l.U1s, 1, -1, 1, -1)
	set(l.U2s, 1, 1, 1, 1)
	set(l.S2s, 0.1, 0.2, 0.3, 0.4)
	set(l.Bias, 1, 1, 1, 1)
	x := tensor.FromSlice([]float64{1, 2, 3, 4}, []int{1, 4}, tensor.On(dev))
	var y *tensor.Tensor
	tensor.NoGrad(func() { y = SketchedForward(x, l.S1s, l.S2s, l.U1s, l.U2s, l.Bias) })
	require.NotNil(t, y)
	assert.InDeltaSlice(t, []float64{4, -0.5, 5, 0.5}, y.Float64s(), 1e-12)
}

func TestHiddenForwardFormula(t *testing.T) {
	tensortest.NoCollector(t)
	dev := newDev(t)
	for _, tc := range []struct {
		in, out, terms, rank int
		bias                 bool
	}{{12, 10, 2, 3, true}, {7, 5, 3, 2, false}, {16, 16, 1, 4, true}} {
		l := NewLayer(tc.in, tc.out, tc.terms, tc.rank, tc.bias, f64(dev, 2)...)
		x := tensor.Randn([]int{5, tc.in}, f64(dev, 3)...)
		var y *tensor.Tensor
		tensor.NoGrad(func() { y = SketchedForward(x, l.S1s, l.S2s, l.U1s, l.U2s, l.Bias) })
		require.NotNil(t, y)
		assert.Equal(t, []int{5, tc.out}, y.Shape())
		assert.InDeltaSlice(t, formula(x.Float64s(), 5, tc.in, tc.out, l), y.Float64s(), 1e-12)
	}
}

func TestHiddenGradcheck(t *testing.T) {
	tensortest.NoCollector(t)
	dev := newDev(t)
	for _, bias := range []bool{true, false} {
		l := NewLayer(6, 5, 2, 2, bias, f64(dev, 4)...)
		x := tensor.Randn([]int{3, 6}, f64(dev, 5)...).SetRequiresGrad(true)
		inputs := []*tensor.Tensor{x, l.S1s, l.S2s}
		if bias {
			inputs = append(inputs, l.Bias)
		}
		err := gradcheck.Check(func([]*tensor.Tensor) *tensor.Tensor { return l.Forward(x) }, inputs, gradcheck.Options{})
		assert.NoError(t, err, "bias %v", bias)
	}
}

// Only the gradients that are needed are computed; the U buffers get
// none.
func TestHiddenNeeds(t *testing.T) {
	tensortest.NoCollector(t)
	dev := newDev(t)
	l := NewLayer(6, 5, 2, 2, true, f64(dev, 6)...)
	x := tensor.Randn([]int{3, 6}, f64(dev, 7)...) // no grad for x
	g := tensor.Ones([]int{3, 5}, tensor.On(dev), tensor.Float64)
	var grads []*tensor.Tensor
	tensor.NoGrad(func() {
		grads = SketchedBackward(g, []*tensor.Tensor{x, l.S1s, l.S2s, l.U1s, l.U2s}, []bool{false, true, false, true})
	})
	require.Len(t, grads, 4)
	assert.True(t, grads[0] == nil, "needs[0] is false: no gradient for x, got one of shape %v", shapeOf(grads[0]))
	assert.True(t, grads[2] == nil, "needs[2] is false: no gradient for the second sketch, got one of shape %v", shapeOf(grads[2]))
	require.NotNil(t, grads[1])
	require.NotNil(t, grads[3])
	assert.Equal(t, []int{2, 6, 2}, grads[1].Shape())
	assert.Equal(t, []float64{3, 3, 3, 3, 3}, grads[3].Float64s())

	y := l.Forward(x)
	loss := y.Sum()
	loss.Backward()
	assert.True(t, l.U1s.Grad() == nil, "U1s is a buffer: it gets no gradient (got one of shape %v)", shapeOf(l.U1s.Grad()))
	assert.True(t, l.U2s.Grad() == nil, "U2s is a buffer: it gets no gradient (got one of shape %v)", shapeOf(l.U2s.Grad()))
	assert.True(t, x.Grad() == nil, "x does not require a gradient: it gets none (got one of shape %v)", shapeOf(x.Grad()))
	require.NotNil(t, l.S2s.Grad())
	assert.Equal(t, []int{2, 2, 5}, l.S2s.Grad().Shape())
}

// A forward pass leaves only its output allocated (the node saves
// references to tensors that exist anyway); backward leaves only the
// gradients.
func TestHiddenMemory(t *testing.T) {
	tensortest.NoCollector(t)
	dev := newDev(t)
	const B, in, out, L, k = 32, 256, 128, 2, 16
	l := NewLayer(in, out, L, k, true, tensor.On(dev), tensor.WithGenerator(tensor.NewGenerator(8)))
	x := tensor.Randn([]int{B, in}, tensor.On(dev)).SetRequiresGrad(true)
	base := dev.MemoryAllocated()
	y := l.Forward(x)
	require.NotNil(t, y)
	assert.EqualValues(t, base+B*out*4, dev.MemoryAllocated(), "forward: only the output")
	loss := y.Sum()
	loss.Backward()
	loss.Release()
	y.Release()
	grads := int64(B*in+L*in*k+L*k*out+out) * 4
	assert.EqualValues(t, base+grads, dev.MemoryAllocated(), "backward: only the gradients of x, S1s, S2s and the bias")
	// The layer and x (and their gradients) count in what was measured,
	// whatever the code under test collects.
	runtime.KeepAlive(l)
	runtime.KeepAlive(x)
}

// SketchedForward's peak: y, one [B, out] and one [B, k] tensor at most,
// with y right. The reference reuses two scratch tensors with MatmulOut;
// gpukit/nn/sketch's forward holds three [B, out] and two [B, k] at once.
func TestHiddenForwardPeak(t *testing.T) {
	tensortest.NoCollector(t)
	dev := newDev(t)
	for _, tc := range []struct {
		B, in, out, terms, rank int
		bias                    bool
	}{{32, 256, 128, 2, 16, true}, {16, 128, 256, 4, 32, false}} {
		l := NewLayer(tc.in, tc.out, tc.terms, tc.rank, tc.bias, tensor.On(dev), tensor.WithGenerator(tensor.NewGenerator(9)))
		x := tensor.Randn([]int{tc.B, tc.in}, tensor.On(dev), tensor.WithGenerator(tensor.NewGenerator(10)))
		base := dev.MemoryAllocated()
		dev.ResetPeakStats()
		var y *tensor.Tensor
		tensor.NoGrad(func() { y = SketchedForward(x, l.S1s, l.S2s, l.U1s, l.U2s, l.Bias) })
		peak := dev.MaxMemoryAllocated() - base
		require.NotNil(t, y)
		assert.LessOrEqual(t, peak, int64(2*tc.B*tc.out+tc.B*tc.rank)*4,
			"the forward's peak above what was allocated before it (B %d, out %d, k %d): y, one [B, out] and one [B, k] float32 tensor at most", tc.B, tc.out, tc.rank)
		require.Equal(t, []int{tc.B, tc.out}, y.Shape())
		assert.InDeltaSlice(t, formula(x.Float64s(), tc.B, tc.in, tc.out, l), y.Float64s(), 1e-4)
		y.Release()
		x.Release()
		l.Release()
	}
}

// SketchedBackward's peak: the gradients it returns, one [B, in] and one
// [B, k] tensor at most, with the gradients right, for several needs.
// gpukit/nn/sketch's backward stacks per-term gradients (each factor
// gradient twice for a moment) and holds two [B, in] products at once.
func TestHiddenBackwardPeak(t *testing.T) {
	tensortest.NoCollector(t)
	dev := newDev(t)
	const B, in, out, L, k = 16, 256, 128, 4, 32
	l := NewLayer(in, out, L, k, true, tensor.On(dev), tensor.WithGenerator(tensor.NewGenerator(11)))
	x := tensor.Randn([]int{B, in}, tensor.On(dev), tensor.WithGenerator(tensor.NewGenerator(12)))
	g := tensor.Randn([]int{B, out}, tensor.On(dev), tensor.WithGenerator(tensor.NewGenerator(13)))
	want := wantGrads(x, g, l)
	saved := []*tensor.Tensor{x, l.S1s, l.S2s, l.U1s, l.U2s}
	names := []string{"x", "S1s", "S2s", "the bias"}
	sizes := []int64{B * in * 4, L * in * k * 4, L * k * out * 4, out * 4}
	for _, needs := range [][]bool{{true, true, true, true}, {false, true, true, false}, {true, false, false, true}, {false, false, true, false}} {
		base := dev.MemoryAllocated()
		dev.ResetPeakStats()
		var grads []*tensor.Tensor
		tensor.NoGrad(func() { grads = SketchedBackward(g, saved, needs) })
		peak := dev.MaxMemoryAllocated() - base
		require.Len(t, grads, 4)
		var returned int64
		for i, need := range needs {
			if !need {
				continue
			}
			require.NotNil(t, grads[i], "needs %v: %s's gradient", needs, names[i])
			returned += sizes[i]
			assert.InDeltaSlice(t, want[i], grads[i].Float64s(), 1e-4, "needs %v: %s's gradient", needs, names[i])
		}
		assert.LessOrEqual(t, peak, returned+int64(B*in+B*k)*4,
			"needs %v: the backward's peak above what was allocated before it: the gradients (%d bytes), one [B, in] and one [B, k] float32 tensor at most", needs, returned)
		for _, d := range grads {
			d.Release()
		}
	}
	runtime.KeepAlive(l)
	runtime.KeepAlive(x)
	runtime.KeepAlive(g)
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

// shapeOf is a tensor's shape for a message, or "none" for nil: a message
// that prints the tensor itself shows its Go fields, which tell a student
// nothing.
func shapeOf(t *tensor.Tensor) any {
	if t == nil {
		return "none"
	}
	return t.Shape()
}
