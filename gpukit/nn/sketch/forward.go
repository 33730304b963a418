package sketch

import (
	"github.com/gpumem/course/gpukit/nn"
	"github.com/gpumem/course/gpukit/tensor"
)

// Forward returns 1/(2L)·Σᵢ[(x·S1ᵢ)·U1ᵢ + (x·U2ᵢ)·S2ᵢ] + b for x of shape
// [..., in]. Its backward is SKLinear's own (see the package doc); it
// saves x and the factor tensors, which the layer holds anyway, so the
// graph costs no memory beyond what the layer and its input already do.
func (s *SKLinear) Forward(x *tensor.Tensor) *tensor.Tensor {
	if x == nil {
		panic(errorf("SKLinear: input is nil"))
	}
	if x.Dim() == 0 || x.Size(-1) != s.In {
		panic(errorf("SKLinear: input of shape %v, expected last dimension %d", x.Shape(), s.In))
	}
	lead := x.Shape()[:x.Dim()-1]
	x2 := x.Reshape(-1, s.In)
	defer x2.Release()
	var y *tensor.Tensor
	tensor.NoGrad(func() { y = sketchedForward(x2, s.S1s, s.S2s, s.U1s, s.U2s, s.Bias) })
	inputs := []*tensor.Tensor{x2, s.S1s, s.S2s}
	if s.Bias != nil {
		inputs = append(inputs, s.Bias)
	}
	y = tensor.Custom("SKLinearBackward", y, inputs,
		[]*tensor.Tensor{x2, s.S1s, s.S2s, s.U1s, s.U2s}, sketchedBackward)
	defer y.Release()
	return y.View(append(lead, s.Out)...)
}

// sketchedForward computes the layer on x [B, in] without autograd.
func sketchedForward(x, s1s, s2s, u1s, u2s, bias *tensor.Tensor) *tensor.Tensor {
	terms := s1s.Size(0)
	var acc *tensor.Tensor
	for i := range terms {
		s1, s2, u1, u2 := s1s.Select(0, i), s2s.Select(0, i), u1s.Select(0, i), u2s.Select(0, i)
		xs1 := x.Matmul(s1) // [B, k]
		first := xs1.Matmul(u1)
		xu2 := x.Matmul(u2) // [B, k]
		second := xu2.Matmul(s2)
		if acc == nil {
			acc = first.Add(second)
		} else {
			acc.AddInPlace(first).AddInPlace(second)
		}
		release(s1, s2, u1, u2, xs1, first, xu2, second)
	}
	acc.MulInPlace(1 / float64(2*terms))
	if bias != nil {
		acc.AddInPlace(bias)
	}
	return acc
}

// sketchedBackward returns the gradients of x, S1s, S2s and (when
// present) the bias, given g = dL/dy [B, out]:
//
//	dS1ᵢ = xᵀ·(g·U1ᵢᵀ)/(2L), dS2ᵢ = (x·U2ᵢ)ᵀ·g/(2L),
//	dx = Σᵢ[(g·U1ᵢᵀ)·S1ᵢᵀ + (g·S2ᵢᵀ)·U2ᵢᵀ]/(2L), db = Σ_batch g.
func sketchedBackward(g *tensor.Tensor, saved []*tensor.Tensor, needs []bool) []*tensor.Tensor {
	x, s1s, s2s, u1s, u2s := saved[0], saved[1], saved[2], saved[3], saved[4]
	terms := s1s.Size(0)
	scale := 1 / float64(2*terms)
	grads := make([]*tensor.Tensor, len(needs))
	var dx *tensor.Tensor
	var ds1, ds2 []*tensor.Tensor
	xt := x.T()
	defer xt.Release()
	for i := range terms {
		s1, s2, u1, u2 := s1s.Select(0, i), s2s.Select(0, i), u1s.Select(0, i), u2s.Select(0, i)
		u1t := u1.T()
		gu1 := g.Matmul(u1t) // [B, k]
		if needs[0] {
			s1t, s2t, u2t := s1.T(), s2.T(), u2.T()
			gs2 := g.Matmul(s2t) // [B, k]
			a, b := gu1.Matmul(s1t), gs2.Matmul(u2t)
			if dx == nil {
				dx = a.Add(b)
			} else {
				dx.AddInPlace(a).AddInPlace(b)
			}
			release(s1t, s2t, u2t, gs2, a, b)
		}
		if needs[1] {
			d := xt.Matmul(gu1)
			ds1 = append(ds1, d.MulInPlace(scale))
		}
		if needs[2] {
			xu2 := x.Matmul(u2)
			xu2t := xu2.T()
			d := xu2t.Matmul(g)
			ds2 = append(ds2, d.MulInPlace(scale))
			release(xu2, xu2t)
		}
		release(s1, s2, u1, u2, u1t, gu1)
	}
	if dx != nil {
		grads[0] = dx.MulInPlace(scale)
	}
	if ds1 != nil {
		grads[1] = stack(ds1)
	}
	if ds2 != nil {
		grads[2] = stack(ds2)
	}
	if len(needs) == 4 && needs[3] {
		grads[3] = g.SumDims([]int{0}, false)
	}
	return grads
}

func release(ts ...*tensor.Tensor) {
	for _, t := range ts {
		t.Release()
	}
}

var _ nn.Module = (*SKLinear)(nil)
