package nn

import (
	"fmt"

	"github.com/gpumem/course/gpukit/tensor"
)

// GPTConfig is the size of a GPT: a vocabulary of Vocab tokens, width Dim,
// Heads attention heads per block and Layers blocks.
type GPTConfig struct{ Vocab, Dim, Heads, Layers int }

// GPT is a decoder-only transformer, the course's small GPT (lessons 06 and
// 07): a token embedding, Layers pre-norm Blocks with causal attention, a
// final layer norm and a linear head over the vocabulary. As in nanoGPT's
// model.py without position embeddings or weight tying:
//
//	x = emb(ids); x = blocks(x); logits = head(ln(x))
type GPT struct {
	Base
	Emb    *Embedding
	Blocks []Module
	LN     *LayerNorm
	Head   *Linear

	// RunBlocks runs the blocks on the embeddings; nil runs them one after
	// another (RunLayers). Set it to checkpoint them, e.g. with
	// checkpoint.Sequential (which imports nn, so nn cannot call it).
	RunBlocks func(blocks []Module, x *tensor.Tensor) *tensor.Tensor
}

// NewGPT returns a GPT of size c. The parameters are drawn in the order
// embedding, final layer norm, head, then the blocks, so that a generator
// passed in opts gives the same model every time.
func NewGPT(c GPTConfig, opts ...tensor.Option) *GPT {
	checkSizes("NewGPT", c.Vocab, c.Dim, c.Heads)
	if c.Layers < 0 {
		panic(errorf("NewGPT: Layers must be 0 or more, got %d", c.Layers))
	}
	g := &GPT{
		Emb:  NewEmbedding(c.Vocab, c.Dim, opts...),
		LN:   NewLayerNorm(c.Dim, opts...),
		Head: NewLinear(c.Dim, c.Vocab, true, opts...),
	}
	for range c.Layers {
		b := NewBlock(c.Dim, c.Heads, opts...)
		b.Attn.Causal = true
		g.Blocks = append(g.Blocks, b)
	}
	return g
}

// Members lists the children emb, blocks.0 … blocks.N-1, ln and head.
func (g *GPT) Members() Members {
	ms := []NamedModule{{"emb", g.Emb}}
	for i, b := range g.Blocks {
		ms = append(ms, NamedModule{fmt.Sprint("blocks.", i), b})
	}
	return Members{Children: append(ms, NamedModule{"ln", g.LN}, NamedModule{"head", g.Head})}
}

// Forward maps token ids [B, T] to logits [B, T, Vocab]. Each intermediate
// is released as soon as the next one exists.
func (g *GPT) Forward(ids *tensor.Tensor) *tensor.Tensor {
	h := g.Emb.Forward(ids)
	run := g.RunBlocks
	if run == nil {
		run = RunLayers
	}
	x := run(g.Blocks, h)
	h.Release()
	n := g.LN.Forward(x)
	x.Release()
	defer n.Release()
	return g.Head.Forward(n)
}
