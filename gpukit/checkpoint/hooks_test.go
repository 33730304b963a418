package checkpoint_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpumem/course/gpukit/checkpoint"
	"github.com/gpumem/course/gpukit/tensor"
)

// A non-reentrant checkpoint saves its segment's input as a tensor saved
// for backward (PyTorch's _NoopSaveInputs in torch/utils/checkpoint.py),
// so saved-tensor hooks around the checkpoint see it: a save-on-CPU hook
// moves the input off the card, and backward brings it back. The
// segment's own tensors still go to the checkpoint, not to outer hooks.
func TestOuterHooksSeeTheCheckpointInput(t *testing.T) {
	dev := newDev(t)
	m := mlp(dev, 256)
	x := tensor.Randn([]int{64, 256}, tensor.On(dev), tensor.RequiresGrad())
	h := x.Mul(2) // an activation: the checkpoint's input
	var packed []*tensor.Tensor
	unpacked := 0
	saveOnCPU := func(t *tensor.Tensor) any {
		packed = append(packed, t)
		return t.ToHost(false, false)
	}
	toDevice := func(p any) *tensor.Tensor {
		unpacked++
		return p.(*tensor.Tensor).To(dev, false)
	}
	var y *tensor.Tensor
	tensor.WithSavedTensorHooks(saveOnCPU, toDevice, func() {
		y = checkpoint.Checkpoint(m.Forward, h)
	})
	require.Len(t, packed, 1, "the outer hook sees the segment's input, and only it")
	assert.True(t, packed[0].SameStorage(h))
	before := dev.MemoryAllocated()
	h.Release()
	assert.EqualValues(t, 64*256*4, before-dev.MemoryAllocated(), "the input's device memory is freed: its saved copy is on the host")

	loss := y.Pow(2).Mean()
	y.Release()
	loss.Backward()
	loss.Release()
	assert.Equal(t, 1, unpacked, "backward unpacks the input once, to recompute")
	assert.NotNil(t, x.Grad())
}
