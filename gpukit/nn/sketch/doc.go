// Package sketch is a sketched linear layer, Panther's SKLinear: a dense
// weight replaced by numTerms pairs of low-rank factors, of which half
// are trained parameters and half fixed random matrices.
//
// With L = numTerms and k = lowRank, SKLinear(in, out, L, k) computes
//
//	y = 1/(2L) · Σᵢ [ (x·S1ᵢ)·U1ᵢ + (x·U2ᵢ)·S2ᵢ ] + b
//
// where S1ᵢ [in, k] and S2ᵢ [k, out] are parameters and U1ᵢ [k, out] and
// U2ᵢ [in, k] are random sign matrices scaled by 1/√k, kept as buffers:
// they are not trained but they are in device memory, as many numbers as
// the parameters. Counting parameters only (nn.NumParams) halves the
// layer's real cost (nn.NumBuffers and nn.Nbytes count both). The layer
// holds 2·L·k·(in+out) numbers against in·out for the dense weight, so it
// saves memory only when 2·L·k·(in+out) < in·out; New refuses a
// configuration that holds more (Panther only warns).
//
// Construction follows Panther: U1ᵢ and U2ᵢ are drawn first, then a
// weight W [in, out] (given, the transpose of a Linear's weight, or drawn
// from U(±1/√out) as Panther's kaiming_uniform_ on a tensor of that
// shape does), and S1ᵢ = W·U1ᵢᵀ, S2ᵢ = U2ᵢᵀ·W, so that the layer starts
// near x·W (each U has E[UᵀU] = I). The bias is drawn from U(±1/√out)
// (Panther computes its bound from W's second dimension).
//
// The backward pass is written out (a tensor.Custom node), not derived by
// autograd through the parts, and saves only what it needs: x and the
// four factor tensors (references, no copies):
//
//	dS1ᵢ = xᵀ·(g·U1ᵢᵀ) / (2L)      dS2ᵢ = (x·U2ᵢ)ᵀ·g / (2L)
//	dx   = 1/(2L) · Σᵢ [ (g·U1ᵢᵀ)·S1ᵢᵀ + (g·S2ᵢᵀ)·U2ᵢᵀ ]      db = Σ g
//
// Both passes are the plain form: every product is a new tensor, and each
// term's dS1ᵢ and dS2ᵢ is made apart and stacked, so that for a moment
// each factor gradient exists twice. Exercise 08-sklinear asks for the
// form with bounded scratch (two scratch tensors reused with
// tensor.MatmulOut, each term written into its slice of the gradient).
// This package keeps the plain one so that its source, which students
// have, does not answer the exercise; exercise_internal_test.go fails if
// it would.
package sketch
