package checkpoint_test

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpumem/course/gpukit/checkpoint"
	"github.com/gpumem/course/gpukit/device"
	"github.com/gpumem/course/gpukit/device/simtest"
	"github.com/gpumem/course/gpukit/nn"
	"github.com/gpumem/course/gpukit/tensor"
)

func newDev(t testing.TB) *device.Device { return simtest.Card(t) }

// mlp is Linear → ReLU → Dropout → Linear → GELU → Linear, seeded.
func mlp(dev *device.Device, width int) *nn.Sequential {
	o := []tensor.Option{tensor.On(dev), tensor.WithGenerator(tensor.NewGenerator(9))}
	return nn.NewSequential(nn.NewLinear(width, width, true, o...), nn.NewReLU(), nn.NewDropout(0.3),
		nn.NewLinear(width, width, true, o...), nn.NewGELU(), nn.NewLinear(width, width, true, o...))
}

type run func(m *nn.Sequential, x *tensor.Tensor) *tensor.Tensor

// gradients runs one forward and backward from a fixed random state and
// returns the bytes of every gradient (the input's first).
func gradients(t *testing.T, dev *device.Device, forward run) [][]byte {
	m := mlp(dev, 32)
	x := tensor.Randn([]int{16, 32}, tensor.On(dev), tensor.WithGenerator(tensor.NewGenerator(2)), tensor.RequiresGrad())
	tensor.ManualSeed(42) // the dropout masks come from the default generator
	y := forward(m, x)
	loss := y.Pow(2).Mean()
	loss.Backward()
	loss.Release()
	y.Release()
	out := [][]byte{append([]byte(nil), x.Grad().Storage().Bytes()...)}
	for _, p := range nn.Parameters(m) {
		require.NotNil(t, p.Grad())
		out = append(out, append([]byte(nil), p.Grad().Storage().Bytes()...))
	}
	nn.Release(m)
	return out
}

func TestGradientsBitwiseEqual(t *testing.T) {
	dev := newDev(t)
	want := gradients(t, dev, func(m *nn.Sequential, x *tensor.Tensor) *tensor.Tensor { return m.Forward(x) })
	tests := []struct {
		name string
		fwd  run
	}{
		{"non-reentrant", func(m *nn.Sequential, x *tensor.Tensor) *tensor.Tensor {
			return checkpoint.Checkpoint(m.Forward, x)
		}},
		{"reentrant", func(m *nn.Sequential, x *tensor.Tensor) *tensor.Tensor {
			return checkpoint.Checkpoint(m.Forward, x, checkpoint.Reentrant())
		}},
		{"sequential 3", func(m *nn.Sequential, x *tensor.Tensor) *tensor.Tensor {
			return checkpoint.Sequential(m.Layers, 3, x)
		}},
		{"sequential 2 reentrant", func(m *nn.Sequential, x *tensor.Tensor) *tensor.Tensor {
			return checkpoint.Sequential(m.Layers, 2, x, checkpoint.Reentrant())
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, want, gradients(t, dev, tc.fwd))
		})
	}
	t.Run("without preserving the random state", func(t *testing.T) {
		got := gradients(t, dev, func(m *nn.Sequential, x *tensor.Tensor) *tensor.Tensor {
			return checkpoint.Checkpoint(m.Forward, x, checkpoint.NoPreserveRNG())
		})
		assert.NotEqual(t, want, got, "the recomputed dropout draws another mask")
	})
}

// Between forward and backward a checkpointed segment holds only its
// input (which the caller holds anyway): the forward adds exactly the
// output's bytes.
func TestSegmentHoldsOnlyItsInput(t *testing.T) {
	for _, opts := range [][]checkpoint.Option{nil, {checkpoint.Reentrant()}} {
		dev := newDev(t)
		ws := simtest.WarmBlas(t, dev) // the first product's cuBLAS workspace, held for good
		m := mlp(dev, 256)
		x := tensor.Randn([]int{64, 256}, tensor.On(dev), tensor.RequiresGrad())
		before := dev.MemoryAllocated()
		y := checkpoint.Checkpoint(m.Forward, x, opts...)
		assert.Equal(t, y.Nbytes(), dev.MemoryAllocated()-before, "only the output is new")
		x.Release() // the checkpoint keeps its own reference to the input
		assert.Equal(t, y.Nbytes(), dev.MemoryAllocated()-before, "the input stays alive for backward")

		plain := mlp(dev, 256)
		x2 := tensor.Randn([]int{64, 256}, tensor.On(dev), tensor.RequiresGrad())
		before2 := dev.MemoryAllocated()
		y2 := plain.Forward(x2)
		assert.Greater(t, dev.MemoryAllocated()-before2, 3*y2.Nbytes(), "without checkpointing the activations stay")

		loss := y.Sum()
		loss.Backward()
		loss.Release()
		y.Release()
		nn.ZeroGrad(m, true)
		x.SetGrad(nil)
		runtime.KeepAlive(y2)
		y2.Release()
		x2.Release()
		nn.Release(plain)
		nn.Release(m)
		assert.Equal(t, ws, dev.MemoryAllocated(), "backward frees the input and everything recomputed")
	}
}

// Mistake 10: checkpointing every single layer keeps every layer's input,
// which is what the layers saved anyway. With Linear and ReLU as separate
// layers it even costs more: the Linear outputs, which ReLU (saving its
// output) would let go, are kept as the next checkpoint's input.
func TestCheckpointEachLayerSavesNothing(t *testing.T) {
	dev := newDev(t)
	simtest.WarmBlas(t, dev) // the first product's cuBLAS workspace is not an activation
	var layers []nn.Module
	for range 4 {
		layers = append(layers, nn.NewLinear(512, 512, true, tensor.On(dev)), nn.NewReLU())
	}
	m := nn.NewSequential(layers...)
	x := tensor.Randn([]int{128, 512}, tensor.On(dev), tensor.RequiresGrad())
	held := func(forward func() *tensor.Tensor) int64 {
		before := dev.MemoryAllocated()
		y := forward()
		n := dev.MemoryAllocated() - before
		y.Release()
		return n
	}
	baseline := held(func() *tensor.Tensor { return m.Forward(x) })
	act := int64(128 * 512 * 4)
	assert.Equal(t, 4*act, baseline, "the four ReLU outputs (each the next Linear's input)")
	pairs := held(func() *tensor.Tensor { return checkpoint.Sequential(layers, 4, x) })
	assert.Equal(t, baseline, pairs, "one segment per Linear+ReLU holds what the layers saved")
	each := held(func() *tensor.Tensor { return checkpoint.Sequential(layers, len(layers), x) })
	assert.Equal(t, 7*act, each, "one segment per single layer also keeps the Linear outputs")
	two := held(func() *tensor.Tensor { return checkpoint.Sequential(layers, 2, x) })
	assert.Equal(t, 3*act, two, "two segments: one segment input plus the last segment's two activations")
}

// As in PyTorch, a reentrant checkpoint whose input does not require grad
// records nothing: the segment's parameters get no gradient.
func TestReentrantInputWithoutGrad(t *testing.T) {
	dev := newDev(t)
	m := mlp(dev, 8)
	x := tensor.Randn([]int{4, 8}, tensor.On(dev))
	y := checkpoint.Checkpoint(m.Forward, x, checkpoint.Reentrant())
	assert.False(t, y.RequiresGrad())
	y2 := checkpoint.Checkpoint(m.Forward, x)
	require.True(t, y2.RequiresGrad(), "non-reentrant records the parameters' graph")
	loss := y2.Sum()
	loss.Backward()
	assert.NotNil(t, m.Layers[0].(*nn.Linear).Weight.Grad())
}

func TestBackwardTwiceRefused(t *testing.T) {
	dev := newDev(t)
	m := mlp(dev, 8)
	x := tensor.Randn([]int{4, 8}, tensor.On(dev), tensor.RequiresGrad())
	y := checkpoint.Checkpoint(m.Forward, x)
	loss := y.Sum()
	loss.Backward()
	err := tensor.Try(func() { loss.Backward() })
	require.Error(t, err)
	assert.Contains(t, err.Error(), "second time")
	assert.Panics(t, func() { checkpoint.Sequential(m.Layers, 0, x) })
}

// The recomputation runs under the forward's autocast state (backward
// runs with autocast off), so checkpointing under autocast gives the
// gradients of autocast alone, bitwise.
func TestCheckpointUnderAutocast(t *testing.T) {
	dev := newDev(t)
	grads := func(ck bool) [][]byte {
		return gradients(t, dev, func(m *nn.Sequential, x *tensor.Tensor) *tensor.Tensor {
			var y *tensor.Tensor
			tensor.WithAutocast(tensor.BFloat16, true, func() {
				if ck {
					y = checkpoint.Checkpoint(m.Forward, x)
				} else {
					y = m.Forward(x)
				}
			})
			return y
		})
	}
	assert.Equal(t, grads(false), grads(true))
}
