// Package gradcheck compares the gradients that autograd computes with
// central finite differences, as torch.autograd.gradcheck does. Every op
// test in gpukit/tensor runs it; an op's backward is right when
//
//	gradcheck.Assert(t, func(in []*tensor.Tensor) *tensor.Tensor {
//		return in[0].Mul(in[1])
//	}, a, b)
//
// passes. Inputs must be float64 tensors on a device with bytes (sim or
// host); those that require grad are checked. The function must be
// deterministic and must not modify its inputs in place.
package gradcheck
