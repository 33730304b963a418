package checkpoint

import (
	"fmt"
	"sync"

	"github.com/gpumem/course/gpukit/nn"
	"github.com/gpumem/course/gpukit/tensor"
)

// Error is the panic value of misuse of a checkpoint (a nil function, a
// recomputation that differs from the forward, a segment whose output
// needs no grad); its message starts with "checkpoint: ".
type Error struct{ msg string }

func (e *Error) Error() string { return "checkpoint: " + e.msg }

func panicf(format string, args ...any) { panic(&Error{fmt.Sprintf(format, args...)}) }

// Func is a checkpointed segment: a deterministic function of one tensor
// (given the same random state) that returns a new tensor.
type Func func(x *tensor.Tensor) *tensor.Tensor

// Option configures Checkpoint.
type Option func(*config)

type config struct {
	autocast   tensor.Dtype // the forward's autocast dtype, when on
	autocastOn bool
	reentrant  bool
	preserve   bool
	generators []*tensor.Generator
}

// Reentrant selects PyTorch's reentrant mode (use_reentrant=True): the
// forward runs under NoGrad and a custom backward node recomputes it with
// grad enabled and runs a nested Backward. As in PyTorch, when the input
// does not require grad the segment records nothing and its parameters
// get no gradient.
func Reentrant() Option { return func(c *config) { c.reentrant = true } }

// NoPreserveRNG skips saving and restoring the generators' states
// (preserve_rng_state=False): a dropout inside the segment then draws a
// different mask when recomputed.
func NoPreserveRNG() Option { return func(c *config) { c.preserve = false } }

// WithGenerators adds generators whose state is preserved besides the
// default one (for a Dropout with its own Gen).
func WithGenerators(gens ...*tensor.Generator) Option {
	return func(c *config) { c.generators = append(c.generators, gens...) }
}

func newConfig(opts []Option) config {
	c := config{preserve: true}
	for _, o := range opts {
		o(&c)
	}
	c.generators = append([]*tensor.Generator{tensor.DefaultGenerator()}, c.generators...)
	c.autocast, c.autocastOn = tensor.IsAutocastEnabled()
	return c
}

// recomputeAs runs fn as the forward ran: with the generators' states of
// the forward (unless NoPreserveRNG) and the forward's autocast state,
// since backward runs with autocast off.
func (c config) recomputeAs(states [][]byte, fn func()) {
	run := fn
	if c.autocastOn {
		run = func() { tensor.WithAutocast(c.autocast, true, fn) }
	}
	if c.preserve {
		withStates(c.generators, states, run)
	} else {
		run()
	}
}

// rngStates snapshots the states of gens.
func rngStates(gens []*tensor.Generator) [][]byte {
	s := make([][]byte, len(gens))
	for i, g := range gens {
		s[i] = g.State()
	}
	return s
}

func setStates(gens []*tensor.Generator, states [][]byte) {
	for i, g := range gens {
		if err := g.SetState(states[i]); err != nil {
			panic(err)
		}
	}
}

// withStates runs fn with gens set to states, then puts their states back
// as they were (torch.random.fork_rng).
func withStates(gens []*tensor.Generator, states [][]byte, fn func()) {
	now := rngStates(gens)
	setStates(gens, states)
	defer setStates(gens, now)
	fn()
}

// Checkpoint runs fn on x without keeping the tensors fn's ops save for
// backward, and recomputes them when backward needs them
// (torch.utils.checkpoint.checkpoint). Between forward and backward the
// segment holds only its input. The default mode is non-reentrant,
// built on tensor.WithSavedTensorHooks; Reentrant selects the other. The
// generators' states are saved and restored around the recomputation, so
// a dropout inside fn recomputes the same mask and the gradients equal
// those without checkpointing bitwise.
func Checkpoint(fn Func, x *tensor.Tensor, opts ...Option) *tensor.Tensor {
	switch {
	case fn == nil:
		panicf("Checkpoint: fn is nil")
	case x == nil:
		panicf("Checkpoint: x is nil")
	}
	c := newConfig(opts)
	if c.reentrant {
		return reentrant(fn, x, c)
	}
	return nonReentrant(fn, x, c)
}

// frame is one non-reentrant checkpoint call: its input, the random
// states at forward, and the tensors recomputed at the first unpack.
type frame struct {
	mu         sync.Mutex
	fn         Func
	cfg        config
	input      *tensor.Saved // saved for backward, through the hooks around the checkpoint
	inputGrad  bool
	states     [][]byte
	packed     int // number of saved tensors in the forward
	live       int // handles not yet released
	recomputed []*tensor.Tensor
	done       bool
}

// handle is what the graph keeps instead of a saved tensor.
type handle struct {
	f *frame
	i int
}

// Release is called when the graph that holds h is freed; the last one
// frees the frame's input and what recomputation left unused.
func (h *handle) Release() {
	f := h.f
	f.mu.Lock()
	defer f.mu.Unlock()
	f.live--
	if f.live == 0 {
		f.input.Release()
		for _, t := range f.recomputed {
			t.Release()
		}
		f.recomputed = nil
	}
}

func nonReentrant(fn Func, x *tensor.Tensor, c config) *tensor.Tensor {
	if !tensor.IsGradEnabled() { // no graph will be recorded: nothing to recompute
		return fn(x)
	}
	// The input is saved before the checkpoint's own hooks are installed,
	// so that the hooks around the checkpoint see it, as PyTorch's
	// _NoopSaveInputs.apply(dummy, kwargs, *args) before
	// _checkpoint_hook(new_frame) (torch/utils/checkpoint.py).
	f := &frame{fn: fn, cfg: c, input: tensor.SaveForBackward("checkpoint", x), inputGrad: x.RequiresGrad()}
	if c.preserve {
		f.states = rngStates(c.generators)
	}
	var y *tensor.Tensor
	tensor.WithSavedTensorHooks(func(*tensor.Tensor) any {
		h := &handle{f: f, i: f.packed}
		f.packed++
		f.live++
		return h
	}, f.unpack, func() { y = fn(x) })
	if f.live == 0 { // nothing was saved: no graph will ever release the frame
		f.input.Release()
	}
	return y
}

// unpack returns saved tensor i, recomputing the segment at the first
// call. Ownership of the returned tensor goes to the backward pass.
func (f *frame) unpack(p any) *tensor.Tensor {
	h := p.(*handle)
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.done {
		f.recompute()
	}
	t := f.recomputed[h.i]
	if t == nil {
		panicf("saved tensor %d was unpacked twice; backward through a checkpointed segment runs once (RetainGraph is not supported)", h.i)
	}
	f.recomputed[h.i] = nil
	return t
}

func (f *frame) recompute() {
	run := func() {
		saved := f.input.Unpack()
		xr := saved.Detach()
		saved.Release()
		defer xr.Release()
		tensor.EnableGrad(func() {
			if f.inputGrad {
				xr.SetRequiresGrad(true)
			}
			var y *tensor.Tensor
			tensor.WithSavedTensorHooks(func(t *tensor.Tensor) any {
				f.recomputed = append(f.recomputed, t.Detach())
				return len(f.recomputed) - 1
			}, func(any) *tensor.Tensor {
				panic("checkpoint: internal error: the recomputed graph was used for backward")
			}, func() { y = f.fn(xr) })
			y.Release() // the recomputed graph: its saved tensors are now in f.recomputed
		})
	}
	f.cfg.recomputeAs(f.states, run)
	f.done = true
	if len(f.recomputed) != f.packed {
		n := len(f.recomputed)
		for _, t := range f.recomputed {
			t.Release()
		}
		f.recomputed = make([]*tensor.Tensor, f.packed)
		panicf("the recomputed forward saved %d tensors, the original forward %d; the checkpointed function must run the same ops both times", n, f.packed)
	}
}

func reentrant(fn Func, x *tensor.Tensor, c config) *tensor.Tensor {
	var states [][]byte
	if c.preserve {
		states = rngStates(c.generators)
	}
	var y *tensor.Tensor
	tensor.NoGrad(func() { y = fn(x) })
	return tensor.Custom("CheckpointFunctionBackward", y, []*tensor.Tensor{x}, []*tensor.Tensor{x},
		func(g *tensor.Tensor, saved []*tensor.Tensor, needs []bool) []*tensor.Tensor {
			xr := saved[0].Detach()
			defer xr.Release()
			if needs[0] {
				xr.SetRequiresGrad(true)
			}
			var yr *tensor.Tensor
			c.recomputeAs(states, func() { tensor.EnableGrad(func() { yr = fn(xr) }) })
			defer yr.Release()
			// PyTorch's CheckpointFunction.backward
			// (torch/utils/checkpoint.py) raises when no output of the
			// recomputed segment requires grad.
			if !yr.RequiresGrad() {
				panicf("none of output has requires_grad=True, this checkpoint() is not necessary")
			}
			yr.Backward(tensor.WithGradient(g))
			var gx *tensor.Tensor
			if needs[0] && xr.Grad() != nil {
				gx = xr.Grad().Detach()
				xr.SetGrad(nil)
			}
			return []*tensor.Tensor{gx}
		})
}

// Sequential runs layers on x in segments, checkpointing every segment but
// the last (torch.utils.checkpoint.checkpoint_sequential): the layers are
// split into segments runs of len(layers)/segments, the last taking the
// remainder. Between forward and backward only each checkpointed
// segment's input is kept, plus what the last segment saves.
func Sequential(layers []nn.Module, segments int, x *tensor.Tensor, opts ...Option) *tensor.Tensor {
	if segments < 1 || segments > len(layers) {
		panicf("Sequential: %d segments for %d layers; use 1 to %d", segments, len(layers), len(layers))
	}
	size := len(layers) / segments
	h := x
	start := 0
	for ; start < size*(segments-1); start += size {
		part := layers[start : start+size]
		next := Checkpoint(func(in *tensor.Tensor) *tensor.Tensor { return nn.RunLayers(part, in) }, h, opts...)
		if h != x {
			h.Release()
		}
		h = next
	}
	out := nn.RunLayers(layers[start:], h)
	if h != x {
		h.Release()
	}
	return out
}
