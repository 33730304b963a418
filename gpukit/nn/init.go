package nn

import (
	"math"

	"github.com/gpumem/course/gpukit/tensor"
)

// newParam draws a parameter of shape with init and makes it a leaf that
// requires grad. opts place it (tensor.On), pick its dtype (Float32 by
// default) and its generator (tensor.WithGenerator; the default generator
// otherwise), so two models built from one seed are bitwise equal.
func newParam(shape []int, init func([]int, []tensor.Option) *tensor.Tensor, opts []tensor.Option) *tensor.Tensor {
	return init(shape, opts).SetRequiresGrad(true)
}

// uniform returns values drawn from U(-bound, bound), as
// torch.nn.init.uniform_(t, -bound, bound) (from + (to-from)·u).
func uniform(bound float64) func([]int, []tensor.Option) *tensor.Tensor {
	return func(shape []int, opts []tensor.Option) *tensor.Tensor {
		u := tensor.Rand(shape, opts...)
		tensor.NoGrad(func() { u.MulInPlace(2 * bound).SubInPlace(bound) })
		return u
	}
}

// normal returns values from N(0, 1) (torch.nn.init.normal_).
func normal(shape []int, opts []tensor.Option) *tensor.Tensor { return tensor.Randn(shape, opts...) }

// constant returns a tensor filled with v.
func constant(v float64) func([]int, []tensor.Option) *tensor.Tensor {
	return func(shape []int, opts []tensor.Option) *tensor.Tensor { return tensor.Full(shape, v, opts...) }
}

// kaimingUniformBound is the bound of torch.nn.init.kaiming_uniform_ with
// a = √5 and leaky-ReLU gain, which Linear.reset_parameters uses:
// gain = √(2/(1+a²)) = √(1/3), std = gain/√fan_in, bound = √3·std =
// 1/√fan_in.
func kaimingUniformBound(fanIn int) float64 {
	a := math.Sqrt(5)
	gain := math.Sqrt(2 / (1 + a*a))
	return math.Sqrt(3) * gain / math.Sqrt(float64(fanIn))
}

// xavierUniformBound is torch.nn.init.xavier_uniform_'s bound with gain 1:
// √(6/(fan_in+fan_out)).
func xavierUniformBound(fanIn, fanOut int) float64 {
	return math.Sqrt(6 / float64(fanIn+fanOut))
}
