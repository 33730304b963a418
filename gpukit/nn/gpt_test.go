package nn_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/gpumem/course/gpukit/device"
	"github.com/gpumem/course/gpukit/device/simtest"
	"github.com/gpumem/course/gpukit/nn"
	"github.com/gpumem/course/gpukit/tensor"
)

// Lesson 07's small GPT: its parameters are named as a state dict names
// them, and one forward pass gives logits over the vocabulary.
func ExampleGPT() {
	dev := device.MustOpen("sim:3")
	g := nn.NewGPT(nn.GPTConfig{Vocab: 32, Dim: 32, Heads: 2, Layers: 2},
		tensor.On(dev), tensor.WithGenerator(tensor.NewGenerator(1)))
	defer nn.Release(g)
	state := nn.StateDict(g)
	fmt.Println(len(state), "tensors, from", state[0].Name, "to", state[len(state)-1].Name)
	fmt.Println("parameters:", nn.NumParams(g))
	ids := tensor.Zeros([]int{2, 16}, tensor.On(dev), tensor.Int64)
	logits := g.Forward(ids)
	fmt.Println("logits:", logits.Shape())
	logits.Release()
	ids.Release()
	// Output:
	// 29 tensors, from emb.weight to head.bias
	// parameters: 27552
	// logits: [2 16 32]
}

// RunBlocks replaces how the blocks run (checkpointing sets it); nil runs
// them in order, and both give the same logits.
func TestGPTRunBlocks(t *testing.T) {
	dev := simtest.Card(t)
	g := nn.NewGPT(nn.GPTConfig{Vocab: 16, Dim: 8, Heads: 2, Layers: 3},
		tensor.On(dev), tensor.WithGenerator(tensor.NewGenerator(2)))
	defer nn.Release(g)
	ids := tensor.Randint(0, 16, []int{2, 5}, tensor.On(dev), tensor.WithGenerator(tensor.NewGenerator(3)))
	defer ids.Release()
	plain := g.Forward(ids)
	defer plain.Release()
	calls := 0
	g.RunBlocks = func(blocks []nn.Module, x *tensor.Tensor) *tensor.Tensor {
		calls++
		assert.Len(t, blocks, 3)
		return nn.RunLayers(blocks, x)
	}
	hooked := g.Forward(ids)
	defer hooked.Release()
	assert.Equal(t, 1, calls)
	assert.Equal(t, plain.Float64s(), hooked.Float64s())
}

// A GPT of a size that cannot be built gets nn's error.
func TestNewGPTMisuse(t *testing.T) {
	for _, c := range []nn.GPTConfig{
		{Vocab: 0, Dim: 8, Heads: 2, Layers: 1},
		{Vocab: 16, Dim: -8, Heads: 2, Layers: 1},
		{Vocab: 16, Dim: 8, Heads: 0, Layers: 1},
		{Vocab: 16, Dim: 8, Heads: 2, Layers: -1},
		{Vocab: 16, Dim: 8, Heads: 3, Layers: 1},
	} {
		t.Run(fmt.Sprint(c), func(t *testing.T) {
			dev := simtest.Card(t)
			assert.Regexp(t, `^nn: New(GPT|MultiheadAttention): `, recoverMsgOf(func() { nn.NewGPT(c, tensor.On(dev)) }))
		})
	}
}
