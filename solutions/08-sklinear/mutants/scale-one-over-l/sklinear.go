// Mutant: the forward pass scales by 1/L instead of 1/(2L).

package sklinear

import "github.com/gpumem/course/gpukit/tensor"

// SketchedForward returns, for x [B, in],
//
//	y = 1/(2L) · Σᵢ [ (x·S1ᵢ)·U1ᵢ + (x·U2ᵢ)·S2ᵢ ] + b
//
// with L = S1s.Size(0), S1ᵢ = S1s[i] [in, k], U1ᵢ = U1s[i] [k, out],
// U2ᵢ = U2s[i] [in, k], S2ᵢ = S2s[i] [k, out] and b the bias (nil: none).
// It runs without autograd (Layer.Forward calls it under NoGrad). Release
// every intermediate tensor: only y may stay allocated.
func SketchedForward(x, s1s, s2s, u1s, u2s, bias *tensor.Tensor) *tensor.Tensor {
	terms := s1s.Size(0)
	var acc *tensor.Tensor
	for i := range terms {
		s1, s2, u1, u2 := s1s.Select(0, i), s2s.Select(0, i), u1s.Select(0, i), u2s.Select(0, i)
		xs1, xu2 := x.Matmul(s1), x.Matmul(u2) // [B, k] each
		first, second := xs1.Matmul(u1), xu2.Matmul(s2)
		if acc == nil {
			acc = first.Add(second)
		} else {
			acc.AddInPlace(first).AddInPlace(second)
		}
		release(s1, s2, u1, u2, xs1, xu2, first, second)
	}
	acc.MulInPlace(1 / float64(terms))
	if bias != nil {
		acc.AddInPlace(bias)
	}
	return acc
}

// SketchedBackward returns the gradients of the inputs of Layer.Forward's
// node (x, S1s, S2s and, when there is a bias, the bias) given g, the
// gradient of y [B, out], and saved = [x, S1s, S2s, U1s, U2s]. An input
// whose needs entry is false gets nil. The gradients have their inputs'
// shapes; release every intermediate tensor.
//
//	dS1ᵢ = xᵀ·(g·U1ᵢᵀ)/(2L)   dS2ᵢ = (x·U2ᵢ)ᵀ·g/(2L)   db = Σ_batch g
//	dx   = Σᵢ [(g·U1ᵢᵀ)·S1ᵢᵀ + (g·S2ᵢᵀ)·U2ᵢᵀ] / (2L)
func SketchedBackward(g *tensor.Tensor, saved []*tensor.Tensor, needs []bool) []*tensor.Tensor {
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
			gs2 := g.Matmul(s2t)
			a, b := gu1.Matmul(s1t), gs2.Matmul(u2t)
			if dx == nil {
				dx = a.Add(b)
			} else {
				dx.AddInPlace(a).AddInPlace(b)
			}
			release(s1t, s2t, u2t, gs2, a, b)
		}
		if needs[1] {
			ds1 = append(ds1, xt.Matmul(gu1).MulInPlace(scale))
		}
		if needs[2] {
			xu2 := x.Matmul(u2)
			xu2t := xu2.T()
			ds2 = append(ds2, xu2t.Matmul(g).MulInPlace(scale))
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

func stack(ts []*tensor.Tensor) *tensor.Tensor {
	s := tensor.Stack(ts, 0)
	release(ts...)
	return s
}

func release(ts ...*tensor.Tensor) {
	for _, t := range ts {
		t.Release()
	}
}
