package checkpoint_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/gpumem/course/gpukit/checkpoint"
	"github.com/gpumem/course/gpukit/tensor"
)

// panicValue runs fn and returns what it panics with (nil if nothing).
func panicValue(fn func()) (r any) {
	defer func() { r = recover() }()
	fn()
	return nil
}

// A reentrant segment whose recomputed output needs no grad (the function
// detaches its input) makes backward fail with PyTorch's message
// (torch/utils/checkpoint.py, CheckpointFunction.backward), instead of
// leaving the input without a gradient.
func TestReentrantOutputWithoutGrad(t *testing.T) {
	dev := newDev(t)
	x := tensor.Ones([]int{4}, tensor.On(dev), tensor.RequiresGrad())
	detached := func(in *tensor.Tensor) *tensor.Tensor {
		d := in.Detach()
		defer d.Release()
		return d.Mul(2)
	}
	y := checkpoint.Checkpoint(detached, x, checkpoint.Reentrant())
	loss := y.Sum()
	r := panicValue(func() { loss.Backward() })
	var e *checkpoint.Error
	if assert.ErrorAs(t, asError(r), &e) {
		assert.EqualError(t, e, "checkpoint: none of output has requires_grad=True, this checkpoint() is not necessary")
	}
	loss.Release()
	y.Release()

	// Non-reentrant: the output needs no grad, and Backward says so.
	y = checkpoint.Checkpoint(detached, x)
	assert.False(t, y.RequiresGrad())
	r = panicValue(func() { y.Backward(tensor.WithGradient(tensor.ZerosLike(y))) })
	assert.ErrorContains(t, asError(r), "element 0 of tensors does not require grad and does not have a grad_fn")
	y.Release()
}

func asError(r any) error {
	err, _ := r.(error)
	return err
}

func TestCheckpointMisuse(t *testing.T) {
	dev := newDev(t)
	x := tensor.Ones([]int{4}, tensor.On(dev), tensor.RequiresGrad())
	for _, opts := range [][]checkpoint.Option{nil, {checkpoint.Reentrant()}} {
		r := panicValue(func() { checkpoint.Checkpoint(nil, x, opts...) })
		assert.EqualError(t, asError(r), "checkpoint: Checkpoint: fn is nil")
		r = panicValue(func() {
			checkpoint.Checkpoint(func(in *tensor.Tensor) *tensor.Tensor { return in.Mul(2) }, nil, opts...)
		})
		assert.EqualError(t, asError(r), "checkpoint: Checkpoint: x is nil")
	}
	r := panicValue(func() { checkpoint.Sequential(nil, 1, x) })
	var e *checkpoint.Error
	assert.ErrorAs(t, asError(r), &e)
}
