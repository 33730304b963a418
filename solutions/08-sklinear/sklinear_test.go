package sklinear

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpumem/course/gpukit/device"
	"github.com/gpumem/course/gpukit/device/sim"
	"github.com/gpumem/course/gpukit/tensor"
	"github.com/gpumem/course/gpukit/tensor/gradcheck"
)

func newDev(t testing.TB) *device.Device {
	t.Helper()
	p, err := device.LookupProfile("classroom")
	require.NoError(t, err)
	d, err := device.New(sim.New(0, p))
	require.NoError(t, err)
	return d
}

// x = [1 2 3 4], S1 = [1 0 0 1]ᵀ, U1 = [1 -1 1 -1], U2 = [1 1 1 1]ᵀ,
// S2 = [.1 .2 .3 .4], b = 1: y = ([5 -5 5 -5] + [1 2 3 4])/2 + 1.
func TestForwardHandChecked(t *testing.T) {
	dev := newDev(t)
	l := NewLayer(4, 4, 1, 1, true, tensor.On(dev), tensor.Float64)
	tensor.NoGrad(func() {
		for _, p := range []struct {
			t    *tensor.Tensor
			vals []float64
		}{
			{l.S1s, []float64{1, 0, 0, 1}}, {l.U1s, []float64{1, -1, 1, -1}},
			{l.U2s, []float64{1, 1, 1, 1}}, {l.S2s, []float64{0.1, 0.2, 0.3, 0.4}},
			{l.Bias, []float64{1, 1, 1, 1}},
		} {
			flat := p.t.Reshape(-1)
			for i, v := range p.vals {
				flat.SetAt(v, i)
			}
			flat.Release()
		}
	})
	x := tensor.FromSlice([]float64{1, 2, 3, 4}, []int{1, 4}, tensor.On(dev))
	var y *tensor.Tensor
	tensor.NoGrad(func() { y = SketchedForward(x, l.S1s, l.S2s, l.U1s, l.U2s, l.Bias) })
	require.NotNil(t, y, "SketchedForward returned nil")
	assert.InDeltaSlice(t, []float64{4, -0.5, 5, 0.5}, y.Float64s(), 1e-12)
}

func TestGradcheck(t *testing.T) {
	dev := newDev(t)
	opts := []tensor.Option{tensor.On(dev), tensor.Float64, tensor.WithGenerator(tensor.NewGenerator(4))}
	l := NewLayer(6, 5, 2, 2, true, opts...)
	x := tensor.Randn([]int{3, 6}, opts...).SetRequiresGrad(true)
	gradcheck.Assert(t, func([]*tensor.Tensor) *tensor.Tensor { return l.Forward(x) }, x, l.S1s, l.S2s, l.Bias)
}
