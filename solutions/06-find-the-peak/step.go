package findpeak

// This file is given: do not edit it. It defines the phases FindPeak
// receives and builds training steps to try it on.

import (
	"math"

	"github.com/gpumem/course/gpukit/device"
	"github.com/gpumem/course/gpukit/tensor"
)

// Phase is one named part of a training step. Run does its work once.
type Phase struct {
	Name string
	Run  func()
}

// MLPStep builds, on dev, a perceptron with the given layer sizes (for
// example 512, 1024, 10: one hidden layer of 1024) with explicit weights,
// a batch of the given size, and an optimizer (Adam when adam is set,
// otherwise SGD), and returns the four phases of one training step:
// "forward", "backward", "optimizer.step" and "zero_grad" (the names of
// gpukit/profiler's phase constants). The model, the batch and, for Adam,
// the optimizer state exist before the phases run; running the phases in
// order does one step, and they may run only once. Everything the phases
// allocate is released by "zero_grad", except what the model keeps.
func MLPStep(dev *device.Device, batch int, sizes []int, adam bool) []Phase {
	gen := tensor.NewGenerator(1)
	var params, moments []*tensor.Tensor
	for i := 0; i+1 < len(sizes); i++ {
		w := tensor.Randn([]int{sizes[i], sizes[i+1]}, tensor.On(dev), tensor.WithGenerator(gen))
		w.MulInPlace(1 / math.Sqrt(float64(sizes[i])))
		b := tensor.Zeros([]int{sizes[i+1]}, tensor.On(dev))
		params = append(params, w.SetRequiresGrad(true), b.SetRequiresGrad(true))
	}
	if adam {
		for _, p := range params {
			moments = append(moments, tensor.ZerosLike(p), tensor.ZerosLike(p))
		}
	}
	x := tensor.Randn([]int{batch, sizes[0]}, tensor.On(dev), tensor.WithGenerator(gen))
	y := tensor.Randint(0, int64(sizes[len(sizes)-1]), []int{batch}, tensor.On(dev), tensor.WithGenerator(gen))
	var loss *tensor.Tensor
	forward := func() {
		h := x
		for i := 0; i < len(params); i += 2 {
			z := h.Matmul(params[i])
			out := z.Add(params[i+1])
			z.Release()
			if i+2 < len(params) {
				r := out.Relu()
				out.Release()
				out = r
			}
			if h != x {
				h.Release()
			}
			h = out
		}
		loss = tensor.CrossEntropy(h, y)
		h.Release()
	}
	backward := func() {
		loss.Backward()
		loss.Release()
	}
	step := func() {
		tensor.NoGrad(func() {
			for i, p := range params {
				g := p.Grad()
				if !adam {
					u := g.Mul(0.01)
					p.SubInPlace(u)
					u.Release()
					continue
				}
				m, v := moments[2*i], moments[2*i+1]
				m.MulInPlace(0.9)
				gs := g.Mul(0.1)
				m.AddInPlace(gs)
				gs.Release()
				v.MulInPlace(0.999)
				g2 := g.Mul(g)
				g2.MulInPlace(0.001)
				v.AddInPlace(g2)
				g2.Release()
				den := v.Sqrt()
				den.AddInPlace(1e-8)
				u := m.Div(den)
				u.MulInPlace(1e-3)
				p.SubInPlace(u)
				den.Release()
				u.Release()
			}
		})
	}
	zeroGrad := func() {
		for _, p := range params {
			p.SetGrad(nil)
		}
	}
	return []Phase{{"forward", forward}, {"backward", backward}, {"optimizer.step", step}, {"zero_grad", zeroGrad}}
}
