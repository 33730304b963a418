package tensor_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpumem/course/gpukit/device/simtest"
	"github.com/gpumem/course/gpukit/tensor"
)

// savedBy runs fn under saved-tensor hooks that keep every packed tensor
// as it is, and returns what was packed, in order.
func savedBy(fn func()) []*tensor.Tensor {
	var packed []*tensor.Tensor
	tensor.WithSavedTensorHooks(func(t *tensor.Tensor) any {
		packed = append(packed, t)
		return t
	}, func(p any) *tensor.Tensor { return p.(*tensor.Tensor) }, fn)
	return packed
}

// PyTorch's native_batch_norm saves input, weight, running_mean,
// running_var, save_mean and save_invstd (tools/autograd/derivatives.yaml:
// native_batch_norm_backward(grad, input, weight, running_mean,
// running_var, result1, result2, ...)), in training too: the running
// statistics as references, without new memory.
func TestBatchNormSavesRunningStats(t *testing.T) {
	dev := simtest.Card(t)
	x := tensor.Randn([]int{4, 3}, tensor.On(dev), tensor.RequiresGrad())
	w := tensor.Ones([]int{3}, tensor.On(dev), tensor.RequiresGrad())
	rm, rv := tensor.Zeros([]int{3}, tensor.On(dev)), tensor.Ones([]int{3}, tensor.On(dev))
	for _, tc := range []struct {
		training bool
		saved    int
	}{{true, 6}, {false, 4}} {
		training := tc.training
		var y *tensor.Tensor
		saved := savedBy(func() { y = tensor.BatchNorm(x, w, nil, rm, rv, training, 0.1, 1e-5) })
		require.Len(t, saved, tc.saved, "training %v", training)
		assert.True(t, saved[0].SameStorage(x))
		assert.True(t, saved[1].SameStorage(w))
		assert.True(t, saved[2].SameStorage(rm), "running_mean is saved as a reference")
		assert.True(t, saved[3].SameStorage(rv), "running_var is saved as a reference")
		if training {
			assert.Equal(t, []int{3}, saved[4].Shape(), "save_mean")
			assert.Equal(t, []int{3}, saved[5].Shape(), "save_invstd")
		}
		loss := y.Sum()
		loss.Backward()
		loss.Release()
		y.Release()
		assert.NotNil(t, x.Grad())
		x.SetGrad(nil)
		w.SetGrad(nil)
	}
}

// NllLossBackward0 saves self (the log-softmax), target and total_weight,
// a 0-dim float holding the number of targets counted (derivatives.yaml:
// nll_loss_backward(grad, self, target, weight, reduction, ignore_index,
// total_weight)); on a card total_weight is a 512-byte block of its own.
func TestCrossEntropySavesTotalWeight(t *testing.T) {
	dev := simtest.Card(t)
	logits := tensor.Randn([]int{5, 4}, tensor.On(dev), tensor.RequiresGrad())
	targets := tensor.FromSlice([]int64{0, 3, 1, 2, 0}, []int{5}, tensor.On(dev))
	base := dev.MemoryAllocated()
	var loss *tensor.Tensor
	saved := savedBy(func() { loss = tensor.CrossEntropy(logits, targets) })
	require.Len(t, saved, 3)
	assert.Equal(t, []int{5, 4}, saved[0].Shape(), "the log-softmax")
	assert.True(t, saved[1].SameStorage(targets))
	assert.Equal(t, []int{}, saved[2].Shape(), "total_weight is 0-dim")
	assert.Equal(t, logits.Dtype(), saved[2].Dtype())
	assert.Equal(t, 5.0, saved[2].Item())
	assert.EqualValues(t, 512+512+512, dev.MemoryAllocated()-base, "loss, log-softmax (80 B) and total_weight: a block each")
	loss.Backward()
	loss.Release()
	assert.EqualValues(t, 512, dev.MemoryAllocated()-base, "backward freed what was saved: only the logits' gradient is left")
}

// Two training forwards through one BatchNorm before their backwards
// (gradient accumulation) work: the second forward updates the running
// statistics the first node saved, which its backward does not read.
func TestBatchNormAccumulation(t *testing.T) {
	dev := simtest.Card(t)
	w := tensor.Ones([]int{3}, tensor.On(dev), tensor.RequiresGrad())
	rm, rv := tensor.Zeros([]int{3}, tensor.On(dev)), tensor.Ones([]int{3}, tensor.On(dev))
	var losses []*tensor.Tensor
	for range 2 {
		x := tensor.Randn([]int{4, 3}, tensor.On(dev))
		y := tensor.BatchNorm(x, w, nil, rm, rv, true, 0.1, 1e-5)
		losses = append(losses, y.Pow(2).Sum())
		y.Release()
	}
	for _, l := range losses {
		assert.NotPanics(t, func() { l.Backward() })
		l.Release()
	}
	assert.NotNil(t, w.Grad())
}
