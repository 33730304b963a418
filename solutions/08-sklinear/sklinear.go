package sklinear

import "github.com/gpumem/course/gpukit/tensor"

// SketchedForward returns, for x [B, in],
//
//	y = 1/(2L) · Σᵢ [ (x·S1ᵢ)·U1ᵢ + (x·U2ᵢ)·S2ᵢ ] + b
//
// with L = S1s.Size(0), S1ᵢ = S1s[i] [in, k], U1ᵢ = U1s[i] [k, out],
// U2ᵢ = U2s[i] [in, k], S2ᵢ = S2s[i] [k, out] and b the bias (nil: none).
// It runs without autograd (Layer.Forward calls it under NoGrad). Release
// every intermediate tensor: only y may stay allocated. While it runs, at
// most one [B, out] and one [B, k] tensor may be allocated beside y: its
// peak may pass what was allocated before the call by 2·B·out + B·k
// elements, no more (reuse them with tensor.MatmulOut, lesson 04).
func SketchedForward(x, s1s, s2s, u1s, u2s, bias *tensor.Tensor) *tensor.Tensor {
	terms, k, out := s1s.Size(0), s1s.Size(2), u1s.Size(2)
	b := x.Size(0)
	opts := []tensor.Option{tensor.On(x.Device()), x.Dtype()}
	y := tensor.Zeros([]int{b, out}, opts...)
	p := tensor.Empty([]int{b, k}, opts...)   // x·S1ᵢ, then x·U2ᵢ
	t := tensor.Empty([]int{b, out}, opts...) // one product of [B, out]
	for i := range terms {
		s1, s2, u1, u2 := s1s.Select(0, i), s2s.Select(0, i), u1s.Select(0, i), u2s.Select(0, i)
		tensor.MatmulOut(p, x, s1)
		tensor.MatmulOut(t, p, u1)
		y.AddInPlace(t)
		tensor.MatmulOut(p, x, u2)
		tensor.MatmulOut(t, p, s2)
		y.AddInPlace(t)
		release(s1, s2, u1, u2)
	}
	release(p, t)
	y.MulInPlace(1 / float64(2*terms))
	if bias != nil {
		y.AddInPlace(bias)
	}
	return y
}

// SketchedBackward returns the gradients of the inputs of Layer.Forward's
// node (x, S1s, S2s and, when there is a bias, the bias) given g, the
// gradient of y [B, out], and saved = [x, S1s, S2s, U1s, U2s]. An input
// whose needs entry is false gets nil. The gradients have their inputs'
// shapes; release every intermediate tensor. It runs with grad mode off,
// as every backward does. Allocate each gradient once, at its shape, and
// write each term's part into its slice: while it runs, at most one
// [B, in] and one [B, k] tensor may be allocated beside the gradients it
// returns (its peak may pass what was allocated before the call by the
// gradients plus B·in + B·k elements, no more).
//
//	dS1ᵢ = xᵀ·(g·U1ᵢᵀ)/(2L)   dS2ᵢ = (x·U2ᵢ)ᵀ·g/(2L)   db = Σ_batch g
//	dx   = Σᵢ [(g·U1ᵢᵀ)·S1ᵢᵀ + (g·S2ᵢᵀ)·U2ᵢᵀ] / (2L)
func SketchedBackward(g *tensor.Tensor, saved []*tensor.Tensor, needs []bool) []*tensor.Tensor {
	x, s1s, s2s, u1s, u2s := saved[0], saved[1], saved[2], saved[3], saved[4]
	terms, k := s1s.Size(0), s1s.Size(2)
	b, in := x.Size(0), x.Size(1)
	opts := []tensor.Option{tensor.On(x.Device()), x.Dtype()}
	grads := make([]*tensor.Tensor, len(needs))
	dx, ds1, ds2 := needs[0], needs[1], needs[2]
	if dx {
		grads[0] = tensor.Zeros([]int{b, in}, opts...)
	}
	if ds1 {
		grads[1] = tensor.Empty(s1s.Shape(), opts...)
	}
	if ds2 {
		grads[2] = tensor.Empty(s2s.Shape(), opts...)
	}
	var h, t *tensor.Tensor // [B, k] and [B, in] scratch, reused for every term
	if dx || ds1 || ds2 {
		h = tensor.Empty([]int{b, k}, opts...)
	}
	if dx {
		t = tensor.Empty([]int{b, in}, opts...)
	}
	xt := x.T()
	for i := range terms {
		s1, s2, u1, u2 := s1s.Select(0, i), s2s.Select(0, i), u1s.Select(0, i), u2s.Select(0, i)
		s1t, s2t, u1t, u2t := s1.T(), s2.T(), u1.T(), u2.T()
		if dx || ds1 {
			tensor.MatmulOut(h, g, u1t) // g·U1ᵢᵀ
			if ds1 {
				d := grads[1].Select(0, i)
				tensor.MatmulOut(d, xt, h)
				d.Release()
			}
			if dx {
				tensor.MatmulOut(t, h, s1t)
				grads[0].AddInPlace(t)
			}
		}
		if dx {
			tensor.MatmulOut(h, g, s2t) // g·S2ᵢᵀ
			tensor.MatmulOut(t, h, u2t)
			grads[0].AddInPlace(t)
		}
		if ds2 {
			tensor.MatmulOut(h, x, u2) // x·U2ᵢ
			ht, d := h.T(), grads[2].Select(0, i)
			tensor.MatmulOut(d, ht, g)
			release(ht, d)
		}
		release(s1, s2, u1, u2, s1t, s2t, u1t, u2t)
	}
	release(xt, h, t)
	for _, d := range grads[:3] {
		if d != nil {
			d.MulInPlace(1 / float64(2*terms))
		}
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
