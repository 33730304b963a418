package sklinear

import (
	"math"

	"github.com/gpumem/course/gpukit/tensor"
)

// Layer is a sketched linear layer (given, do not edit it): parameters
// S1s [L, in, k] and S2s [L, k, out], buffers U1s [L, k, out] and
// U2s [L, in, k] of ±1/√k, an optional bias [out].
type Layer struct {
	S1s, S2s, U1s, U2s, Bias *tensor.Tensor
}

// NewLayer returns a Layer with random factors drawn from the generator
// in opts: S1s and S2s from N(0, 1/in), U1s and U2s random signs over √k,
// the bias from U(±1/√out).
func NewLayer(in, out, numTerms, lowRank int, bias bool, opts ...tensor.Option) *Layer {
	signs := func(shape []int) *tensor.Tensor {
		u := tensor.Rand(shape, opts...)
		defer u.Release()
		neg := u.Lt(0.5)
		defer neg.Release()
		s := neg.ToDtype(u.Dtype())
		k := 1 / math.Sqrt(float64(lowRank))
		s.MulInPlace(-2 * k).AddInPlace(k)
		return s
	}
	normal := func(shape []int) *tensor.Tensor {
		t := tensor.Randn(shape, opts...)
		t.MulInPlace(1 / math.Sqrt(float64(in)))
		return t.SetRequiresGrad(true)
	}
	l := &Layer{
		U1s: signs([]int{numTerms, lowRank, out}),
		U2s: signs([]int{numTerms, in, lowRank}),
		S1s: normal([]int{numTerms, in, lowRank}),
		S2s: normal([]int{numTerms, lowRank, out}),
	}
	if bias {
		b := tensor.Rand([]int{out}, opts...)
		bound := 1 / math.Sqrt(float64(out))
		b.MulInPlace(2 * bound).SubInPlace(bound)
		l.Bias = b.SetRequiresGrad(true)
	}
	return l
}

// Forward runs SketchedForward on x [B, in] without autograd and attaches
// SketchedBackward as the output's backward (a tensor.Custom node saving
// x, S1s, S2s, U1s and U2s). The inputs of the node are x, S1s, S2s and,
// with a bias, the bias, in that order: SketchedBackward returns their
// gradients in that order.
func (l *Layer) Forward(x *tensor.Tensor) *tensor.Tensor {
	var y *tensor.Tensor
	tensor.NoGrad(func() { y = SketchedForward(x, l.S1s, l.S2s, l.U1s, l.U2s, l.Bias) })
	inputs := []*tensor.Tensor{x, l.S1s, l.S2s}
	if l.Bias != nil {
		inputs = append(inputs, l.Bias)
	}
	return tensor.Custom("SKLinearBackward", y, inputs,
		[]*tensor.Tensor{x, l.S1s, l.S2s, l.U1s, l.U2s}, SketchedBackward)
}

// Release frees the layer's tensors and gradients.
func (l *Layer) Release() {
	for _, t := range []*tensor.Tensor{l.S1s, l.S2s, l.U1s, l.U2s, l.Bias} {
		if t != nil {
			t.SetGrad(nil)
			t.Release()
		}
	}
}
