package snapwhatif

// This file is given: do not edit it. It records the snapshots the
// exercise replays: lesson 07's GPT trained on a meta card with the
// allocator's history on, written as the pickle that PyTorch's
// torch.cuda.memory._dump_snapshot writes. `go generate` writes the
// snapshot shipped beside it (gpt-steps.pickle, the run Shipped) again.

//go:generate go test -run ^TestShippedSnapshotIsCurrent$ . -update

import (
	"errors"
	"fmt"

	"github.com/gpumem/course/gpukit/alloc"
	"github.com/gpumem/course/gpukit/device"
	"github.com/gpumem/course/gpukit/device/sim"
	"github.com/gpumem/course/gpukit/nn"
	"github.com/gpumem/course/gpukit/optim"
	"github.com/gpumem/course/gpukit/tensor"
	"github.com/gpumem/course/gpukit/viz/memviewer"
)

// Run is a recorded training run: the model (lesson 07's GPT, nn.GPT), one Adam step per sequence
// length in Seqs at Batch sequences each, on a meta card of profile Card
// (its index Index) whose allocator runs under AllocConf (the
// PYTORCH_CUDA_ALLOC_CONF syntax; "" is the default), with at most
// MaxEntries events kept in the history (0: alloc.DefaultMaxEntries), as
// torch.cuda.memory._record_memory_history(max_entries=...) keeps them.
type Run struct {
	Model      nn.GPTConfig
	Batch      int
	Seqs       []int
	Card       device.Profile
	Index      int
	AllocConf  string
	MaxEntries int
}

// Shipped is the run behind gpt-steps.pickle: lesson 07's big GPT (104 MiB
// of parameters), four steps on sequences of 256, 96, 224 and 160 tokens,
// batch 18, recorded on a meta card of the H100 profile with the
// allocator's default settings.
func Shipped() Run {
	card, err := device.LookupProfile("h100-80gb")
	if err != nil {
		panic(err)
	}
	return Run{
		Model: nn.GPTConfig{Vocab: 2048, Dim: 512, Heads: 8, Layers: 8},
		Batch: 18, Seqs: []int{256, 96, 224, 160}, Card: card,
	}
}

// Record trains r's model for len(r.Seqs) steps with the allocator's
// history on and returns the snapshot taken after the last step, pickled
// as torch.cuda.memory._dump_snapshot writes it (memviewer.Pickle). The
// same run gives the same bytes.
func Record(r Run) ([]byte, error) {
	if len(r.Seqs) == 0 || r.Batch <= 0 {
		return nil, errors.New("snapwhatif: a run needs a batch and at least one sequence length")
	}
	cfg, err := alloc.ParseConfig(r.AllocConf)
	if err != nil {
		return nil, err
	}
	dev, err := device.New(sim.NewMeta(r.Index, r.Card), device.WithAllocConfig(cfg))
	if err != nil {
		return nil, err
	}
	var snap alloc.Snapshot
	err = tensor.Try(func() {
		o := []tensor.Option{tensor.On(dev), tensor.WithGenerator(tensor.NewGenerator(1))}
		m := nn.NewGPT(r.Model, o...)
		defer nn.Release(m)
		opt, err := optim.NewAdam(nn.Parameters(m), optim.DefaultAdam())
		if err != nil {
			panic(err)
		}
		defer opt.Release()
		dev.Allocator().RecordHistory(alloc.HistoryOptions{Enabled: true, MaxEntries: r.MaxEntries})
		for _, seq := range r.Seqs {
			step(m, opt, dev, r.Batch, seq)
		}
		snap = dev.Snapshot()
		dev.Allocator().RecordHistory(alloc.HistoryOptions{Enabled: false})
	})
	if err != nil {
		return nil, fmt.Errorf("snapwhatif: recording: %w", err)
	}
	return memviewer.Pickle(snap)
}

// step is one training step on random tokens: forward, cross-entropy
// against the tokens themselves, backward, Adam, gradients set to none.
func step(m *nn.GPT, opt *optim.Adam, dev *device.Device, batch, seq int) {
	ids := tensor.Zeros([]int{batch, seq}, tensor.On(dev), tensor.Int64)
	targets := tensor.Zeros([]int{batch * seq}, tensor.On(dev), tensor.Int64)
	logits := m.Forward(ids)
	flat := logits.View(-1, logits.Size(-1))
	loss := tensor.CrossEntropy(flat, targets)
	flat.Release()
	logits.Release()
	loss.Backward()
	opt.Step()
	opt.ZeroGrad(true)
	loss.Release()
	ids.Release()
	targets.Release()
}
