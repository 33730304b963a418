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
	return nil // not implemented yet
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
func SketchedBackward(g *tensor.Tensor, saved []*tensor.Tensor, needs []bool) []*tensor.Tensor {
	return make([]*tensor.Tensor, len(needs)) // not implemented yet
}
