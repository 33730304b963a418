package tensor

import (
	"slices"

	"github.com/gpumem/course/gpukit/ops"
)

// AdamScalars are the hyperparameters of one FusedAdam step (see
// ops.AdamScalars).
type AdamScalars = ops.AdamScalars

// FusedAdam applies one Adam (or AdamW) step to param in place, updating
// its state expAvg and expAvgSq, in one kernel that reads each element of
// the four tensors once and allocates nothing: PyTorch's fused Adam
// (torch.optim.Adam(fused=True), _fused_adam_). The formula and its
// rounding are those of kernels.AdamUpdate. The three updated tensors'
// version counters are bumped. It is meant for optimizers, inside NoGrad.
//
// It reports false, doing nothing, when the step cannot be fused here:
// dtypes other than float32 and float64, non-contiguous tensors, or a
// device whose Compute has no Adam kernel for the dtype; the caller then
// composes the step from elementwise ops. It runs on every device whose
// Compute has one (sim, host, cuda). On a meta device it charges the kernel
// and computes no values, like every op.
func FusedAdam(param, grad, expAvg, expAvgSq *Tensor, s AdamScalars) bool {
	const op = "FusedAdam"
	grad.live(op)
	for _, t := range []*Tensor{param, expAvg, expAvgSq} {
		checkInPlace(op, t)
		checkPair(op, t, grad)
		if !slices.Equal(t.shape, grad.shape) {
			panicf("%s: tensor of shape %s does not match the gradient's %s", op, fmtShape(t.shape), fmtShape(grad.shape))
		}
	}
	all := []*Tensor{param, grad, expAvg, expAvgSq}
	if param.dtype != Float32 && param.dtype != Float64 {
		return false
	}
	for _, t := range all {
		if !t.IsContiguous() {
			return false
		}
	}
	if n := param.Numel(); n > 0 {
		c, st := kern(op, param)
		err := c.Adam(st, cdt(param), addr(param), addr(grad), addr(expAvg), addr(expAvgSq), n, s)
		if unsupported(err) {
			return false // composed of elementwise ops instead
		}
		done(op, err, param, grad, expAvg, expAvgSq)
	}
	// Reads param, grad, exp_avg and exp_avg_sq; writes param (counted as
	// the output), exp_avg and exp_avg_sq: 7 bytes moved per parameter byte.
	param.charge(op, 12*int64(param.Numel()), param, grad, expAvg, expAvgSq, expAvg, expAvgSq)
	for _, t := range []*Tensor{param, expAvg, expAvgSq} {
		t.bump()
	}
	return true
}
