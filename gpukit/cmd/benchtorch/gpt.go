package main

import (
	"github.com/gpumem/course/gpukit/nn"
	"github.com/gpumem/course/gpukit/optim"
	"github.com/gpumem/course/gpukit/tensor"
)

// The GPT of lesson 07 (lessons/07-training-budget.md), its "big" size:
// token embedding, 8 pre-norm blocks (causal attention, 8 heads; MLP
// 512→2048→512 with GELU), a layer norm and the vocabulary head, trained
// with Adam (lr 1e-2) on cross-entropy, batch 12 × 256 tokens.
const (
	gptVocab, gptDim, gptHeads, gptLayers, gptSeq, gptBatch = 2048, 512, 8, 8, 256, 12
)

type gpt struct {
	nn.Base
	emb    *nn.Embedding
	blocks []nn.Module
	ln     *nn.LayerNorm
	head   *nn.Linear
}

func (g *gpt) Members() nn.Members {
	ms := nn.Members{Children: []nn.NamedModule{{Name: "emb", Module: g.emb}}}
	for _, b := range g.blocks {
		ms.Children = append(ms.Children, nn.NamedModule{Name: "block", Module: b})
	}
	return nn.Members{Children: append(ms.Children, nn.NamedModule{Name: "ln", Module: g.ln}, nn.NamedModule{Name: "head", Module: g.head})}
}

func (g *gpt) Forward(ids *tensor.Tensor) *tensor.Tensor {
	h := g.emb.Forward(ids)
	x := nn.RunLayers(g.blocks, h)
	h.Release()
	n := g.ln.Forward(x)
	x.Release()
	defer n.Release()
	return g.head.Forward(n)
}

func gptStep(on, gen tensor.Option) (run, reset, done func()) {
	g := &gpt{emb: nn.NewEmbedding(gptVocab, gptDim, on, gen), ln: nn.NewLayerNorm(gptDim, on, gen),
		head: nn.NewLinear(gptDim, gptVocab, true, on, gen)}
	for range gptLayers {
		b := nn.NewBlock(gptDim, gptHeads, on, gen)
		b.Attn.Causal = true
		g.blocks = append(g.blocks, b)
	}
	cfg := optim.DefaultAdam()
	cfg.LR = 1e-2
	opt, err := optim.NewAdam(nn.Parameters(g), cfg)
	check(err)
	ids := tensor.Randint(0, gptVocab, []int{gptBatch, gptSeq}, on, gen)
	targets := tensor.Randint(0, gptVocab, []int{gptBatch * gptSeq}, on, gen)
	reset, forget := restorable(nn.Parameters(g))
	return func() {
			logits := g.Forward(ids)
			flat := logits.View(-1, gptVocab)
			loss := tensor.CrossEntropy(flat, targets)
			flat.Release()
			logits.Release()
			loss.Backward()
			opt.Step()
			opt.ZeroGrad(true)
			loss.Release()
		}, reset, func() {
			forget()
			opt.Release()
			nn.Release(g)
			releaseAll(ids, targets)()
		}
}
