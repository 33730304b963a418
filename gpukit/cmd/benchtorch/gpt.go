package main

import (
	"github.com/gpumem/course/gpukit/nn"
	"github.com/gpumem/course/gpukit/optim"
	"github.com/gpumem/course/gpukit/tensor"
)

// The GPT of lesson 07 (lessons/07-training-budget.md, nn.GPT), its "big" size:
// token embedding, 8 pre-norm blocks (causal attention, 8 heads; MLP
// 512→2048→512 with GELU), a layer norm and the vocabulary head, trained
// with Adam (lr 1e-2) on cross-entropy, batch 12 × 256 tokens.
const (
	gptVocab, gptDim, gptHeads, gptLayers, gptSeq, gptBatch = 2048, 512, 8, 8, 256, 12
)

func gptStep(on, gen tensor.Option) (run, reset, done func()) {
	g := nn.NewGPT(nn.GPTConfig{Vocab: gptVocab, Dim: gptDim, Heads: gptHeads, Layers: gptLayers}, on, gen)
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
