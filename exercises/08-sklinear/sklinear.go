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
	return nil // not implemented yet
}

// SketchedBackward returns the gradients of the inputs of Layer.Forward's
// node (x, S1s, S2s and, when there is a bias, the bias) given g, the
// gradient of y [B, out], and saved = [x, S1s, S2s, U1s, U2s]. An input
// whose needs entry is false gets nil. The gradients have their inputs'
// shapes; release every intermediate tensor.
func SketchedBackward(g *tensor.Tensor, saved []*tensor.Tensor, needs []bool) []*tensor.Tensor {
	return make([]*tensor.Tensor, len(needs)) // not implemented yet
}
