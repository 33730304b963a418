package sketch_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpumem/course/gpukit/device/simtest"
	"github.com/gpumem/course/gpukit/nn"
	"github.com/gpumem/course/gpukit/nn/nntest"
	"github.com/gpumem/course/gpukit/nn/sketch"
	"github.com/gpumem/course/gpukit/tensor"
	"github.com/gpumem/course/gpukit/tensor/gradcheck"
)

func set(t *tensor.Tensor, vals ...float64) {
	flat := t.Reshape(-1)
	defer flat.Release()
	tensor.NoGrad(func() {
		for i, v := range vals {
			flat.SetAt(v, i)
		}
	})
}

// x = [1 2 3 4], S1 = [1 0 0 1]ᵀ, U1 = [1 -1 1 -1], U2 = [1 1 1 1]ᵀ,
// S2 = [.1 .2 .3 .4], b = 1: x·S1 = 5, x·U2 = 10, so
// y = ([5 -5 5 -5] + [1 2 3 4])/2 + 1 = [4 -0.5 5 0.5].
func TestForwardHandChecked(t *testing.T) {
	dev := simtest.Card(t)
	s, err := sketch.New(4, 4, 1, 1, true, nntest.F64(dev, 1)...)
	require.NoError(t, err)
	set(s.S1s, 1, 0, 0, 1)
	set(s.U1s, 1, -1, 1, -1)
	set(s.U2s, 1, 1, 1, 1)
	set(s.S2s, 0.1, 0.2, 0.3, 0.4)
	set(s.Bias, 1, 1, 1, 1)
	x := tensor.FromSlice([]float64{1, 2, 3, 4}, []int{1, 4}, tensor.On(dev))
	y := s.Forward(x)
	assert.InDeltaSlice(t, []float64{4, -0.5, 5, 0.5}, y.Float64s(), 1e-12)
}

// The forward equals the formula computed with plain loops, for several
// terms, ranks and leading dimensions.
func TestForwardEqualsFormula(t *testing.T) {
	dev := simtest.Card(t)
	const in, out, L, k = 12, 10, 2, 1
	s, err := sketch.New(in, out, L, k, true, nntest.F64(dev, 2)...)
	require.NoError(t, err)
	x := tensor.Randn([]int{2, 3, in}, nntest.F64(dev, 3)...)
	y := s.Forward(x)
	assert.Equal(t, []int{2, 3, out}, y.Shape())
	xs, got := x.Float64s(), y.Float64s()
	s1, s2, u1, u2, b := s.S1s.Float64s(), s.S2s.Float64s(), s.U1s.Float64s(), s.U2s.Float64s(), s.Bias.Float64s()
	for row := range 6 {
		for o := range out {
			var sum float64
			for i := range L {
				for r := range k {
					var xs1, xu2 float64
					for j := range in {
						xs1 += xs[row*in+j] * s1[(i*in+j)*k+r]
						xu2 += xs[row*in+j] * u2[(i*in+j)*k+r]
					}
					sum += xs1*u1[(i*k+r)*out+o] + xu2*s2[(i*k+r)*out+o]
				}
			}
			assert.InDelta(t, sum/(2*L)+b[o], got[row*out+o], 1e-12)
		}
	}
	for _, v := range u1 {
		assert.Equal(t, 1/math.Sqrt(k), math.Abs(v), "U entries are ±1/√k")
	}
}

func TestBackwardPassesGradcheck(t *testing.T) {
	dev := simtest.Card(t)
	for _, bias := range []bool{true, false} {
		s, err := sketch.New(8, 8, 2, 1, bias, nntest.F64(dev, 4)...)
		require.NoError(t, err)
		x := tensor.Randn([]int{3, 8}, nntest.F64(dev, 5)...).SetRequiresGrad(true)
		inputs := []*tensor.Tensor{x, s.S1s, s.S2s}
		if bias {
			inputs = append(inputs, s.Bias)
		}
		gradcheck.Assert(t, func([]*tensor.Tensor) *tensor.Tensor { return s.Forward(x) }, inputs...)
	}
}

func TestRefusals(t *testing.T) {
	dev := simtest.Card(t)
	for _, tc := range []struct {
		name                       string
		in, out, numTerms, lowRank int
		errHas                     string
	}{
		{"zero in", 0, 4, 1, 1, "sizes must be positive"},
		{"negative rank", 4, 4, 1, -1, "sizes must be positive"},
		{"zero terms", 4, 4, 0, 1, "sizes must be positive"},
		{"more than dense", 4, 4, 1, 2, "holds 2·1·2·(4+4) = 32 numbers"},
		{"overflow", 1 << 40, 1 << 40, 1 << 40, 1 << 40, "more than 2⁶³"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := dev.MemoryAllocated()
			_, err := sketch.New(tc.in, tc.out, tc.numTerms, tc.lowRank, true, tensor.On(dev))
			require.Error(t, err)
			assert.Contains(t, err.Error(), "sketch: ")
			assert.Contains(t, err.Error(), tc.errHas)
			assert.Equal(t, before, dev.MemoryAllocated())
		})
	}
	l := nn.NewLinear(4, 4, true, tensor.On(dev))
	_, err := sketch.FromLinear(l, 2, 1)
	assert.ErrorContains(t, err, "more than the 16")
}

// Mistake 11: the buffers cost as much as the parameters.
func TestParametersAndBuffersCountedApart(t *testing.T) {
	dev := simtest.Card(t)
	ws := simtest.WarmBlas(t, dev) // the first product's cuBLAS workspace, held for good
	const in, out, L, k = 256, 128, 2, 16
	s, err := sketch.New(in, out, L, k, true, tensor.On(dev))
	require.NoError(t, err)
	assert.EqualValues(t, L*k*(in+out)+out, nn.NumParams(s))
	assert.EqualValues(t, L*k*(in+out), nn.NumBuffers(s))
	assert.EqualValues(t, 4*(2*L*k*(in+out)+out), nn.Nbytes(s))
	assert.EqualValues(t, ws+nn.Nbytes(s), dev.MemoryAllocated(), "nothing else stays allocated after construction")
	var names []string
	for _, n := range append(nn.NamedParameters(s), nn.NamedBuffers(s)...) {
		names = append(names, n.Name)
	}
	assert.Equal(t, []string{"S1s", "S2s", "bias", "U1s", "U2s"}, names)

	// The graph of a forward pass saves references, not copies: only the
	// output is new.
	x := tensor.Randn([]int{32, in}, tensor.On(dev)).SetRequiresGrad(true)
	before := dev.MemoryAllocated()
	y := s.Forward(x)
	assert.EqualValues(t, before+32*out*4, dev.MemoryAllocated())
	loss := y.Sum()
	loss.Backward()
	loss.Release()
	y.Release()
	assert.EqualValues(t, [3]int64{L * in * k * 4, L * k * out * 4, out * 4},
		[3]int64{s.S1s.Grad().Nbytes(), s.S2s.Grad().Nbytes(), s.Bias.Grad().Nbytes()})
	assert.Nil(t, s.U1s.Grad())
}

func TestFromLinear(t *testing.T) {
	dev := simtest.Card(t)
	l := nn.NewLinear(12, 8, true, nntest.F64(dev, 6)...)
	s, err := sketch.FromLinear(l, 1, 2, tensor.WithGenerator(tensor.NewGenerator(7)))
	require.NoError(t, err)
	assert.Equal(t, tensor.Float64, s.S1s.Dtype())
	assert.Equal(t, l.Bias.Float64s(), s.Bias.Float64s())
	assert.NotSame(t, l.Bias, s.Bias)
	// S1 = W·U1ᵀ with W = weightᵀ [in, out]: S1[j][r] = Σ_o weight[o][j]·U1[r][o]
	w, u1, s1 := l.Weight.Float64s(), s.U1s.Float64s(), s.S1s.Float64s()
	for j := range 12 {
		for r := range 2 {
			want := sumOver(8, func(o int) float64 { return w[o*12+j] * u1[r*8+o] })
			assert.InDelta(t, want, s1[j*2+r], 1e-12)
		}
	}
	// S2 = U2ᵀ·W: S2[r][o] = Σ_j U2[j][r]·weight[o][j]
	u2, s2 := s.U2s.Float64s(), s.S2s.Float64s()
	for r := range 2 {
		for o := range 8 {
			want := sumOver(12, func(j int) float64 { return u2[j*2+r] * w[o*12+j] })
			assert.InDelta(t, want, s2[r*8+o], 1e-12)
		}
	}
}

// sumOver returns f(0) + f(1) + … + f(n-1), added in that order.
func sumOver(n int, f func(i int) float64) float64 {
	var sum float64
	for i := range n {
		sum += f(i)
	}
	return sum
}

func TestSeedGivesTheSameLayer(t *testing.T) {
	a, err := sketch.New(16, 16, 1, 4, true, nntest.F64(simtest.Card(t), 9)...)
	require.NoError(t, err)
	b, err := sketch.New(16, 16, 1, 4, true, nntest.F64(simtest.Card(t), 9)...)
	require.NoError(t, err)
	for i, n := range nn.NamedParameters(a) {
		assert.Equal(t, n.Tensor.Float64s(), nn.NamedParameters(b)[i].Tensor.Float64s(), n.Name)
	}
	assert.Equal(t, a.U1s.Float64s(), b.U1s.Float64s())
}
