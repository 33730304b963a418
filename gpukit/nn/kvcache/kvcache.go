package kvcache

import (
	"fmt"
	"math"

	"github.com/gpumem/course/gpukit/nn"
	"github.com/gpumem/course/gpukit/tensor"
)

// Strategy is how the cache grows.
type Strategy int

const (
	// Preallocated allocates the cache for MaxLen tokens at the start.
	Preallocated Strategy = iota
	// Concat grows the cache by concatenation at every step.
	Concat
)

func (s Strategy) String() string {
	switch s {
	case Preallocated:
		return "preallocated"
	case Concat:
		return "concat"
	}
	return fmt.Sprintf("Strategy(%d)", int(s))
}

func (s Strategy) valid() bool { return s == Preallocated || s == Concat }

// Error is the error of a refused step; its message starts with
// "kvcache: ".
type Error struct{ msg string }

func (e *Error) Error() string { return "kvcache: " + e.msg }

func errorf(format string, args ...any) *Error { return &Error{fmt.Sprintf(format, args...)} }

// Decoder runs a causal Block token by token with a key/value cache. It
// computes without gradients (inference).
type Decoder struct {
	Block    *nn.Block
	Strategy Strategy
	Batch    int
	MaxLen   int
	Len      int // tokens in the cache

	k, v *tensor.Tensor // [B, H, MaxLen or Len, hd]
}

// NewDecoder returns a decoder for batch sequences of up to maxLen
// tokens. With Preallocated it allocates the cache now: 2·B·maxLen·D
// values in the block's dtype.
func NewDecoder(block *nn.Block, strategy Strategy, batch, maxLen int) (*Decoder, error) {
	switch {
	case block == nil:
		return nil, errorf("NewDecoder: block is nil")
	case block.Attn == nil || block.LN1 == nil || block.LN2 == nil || block.MLP == nil:
		return nil, errorf("NewDecoder: the block has no attention, layer norms or MLP; make it with nn.NewBlock")
	case !strategy.valid():
		return nil, errorf("NewDecoder: unknown strategy %v; use Preallocated or Concat", strategy)
	}
	if !block.Attn.Causal {
		return nil, errorf("NewDecoder: the block's attention is not causal; a key/value cache needs causal attention")
	}
	if batch <= 0 || maxLen <= 0 {
		return nil, errorf("NewDecoder: batch %d and maxLen %d must be positive", batch, maxLen)
	}
	d := &Decoder{Block: block, Strategy: strategy, Batch: batch, MaxLen: maxLen}
	if strategy == Preallocated {
		h := block.Attn.Heads
		hd := block.Attn.Dim / h
		if !fits(batch, h, maxLen, hd) {
			return nil, errorf("NewDecoder: a cache of %d×%d×%d×%d values is too large", batch, h, maxLen, hd)
		}
		w := block.Attn.InProjWeight
		opts := []tensor.Option{tensor.On(w.Device()), w.Dtype()}
		err := tensor.Try(func() {
			d.k = tensor.Zeros([]int{batch, h, maxLen, hd}, opts...)
			d.v = tensor.Zeros([]int{batch, h, maxLen, hd}, opts...)
		})
		if err != nil {
			d.Release()
			return nil, errorf("NewDecoder: allocating the cache: %v", err)
		}
	}
	return d, nil
}

// CacheBytes is the device memory the cache holds now.
func (d *Decoder) CacheBytes() int64 {
	if d.k == nil {
		return 0
	}
	return d.k.Nbytes() + d.v.Nbytes()
}

// Release frees the cache. A Preallocated decoder cannot step afterwards;
// a Concat one starts again from an empty cache.
func (d *Decoder) Release() {
	d.k.Release()
	d.v.Release()
	d.k, d.v, d.Len = nil, nil, 0
}

// Step appends the tokens x [B, C, D] to the sequence and returns the
// block's outputs for them [B, C, D]: what Block.Forward gives at those
// positions on the whole sequence so far.
func (d *Decoder) Step(x *tensor.Tensor) (*tensor.Tensor, error) {
	switch {
	case x == nil:
		return nil, errorf("Step: x is nil")
	case d.Block == nil || d.Block.Attn == nil:
		return nil, errorf("Step: the decoder has no block; make it with NewDecoder")
	case !d.Strategy.valid():
		return nil, errorf("Step: unknown strategy %v; use Preallocated or Concat", d.Strategy)
	case d.Strategy == Preallocated && d.k == nil:
		return nil, errorf("Step: the decoder was released")
	}
	dim := d.Block.Attn.Dim
	if x.Dim() != 3 || x.Size(0) != d.Batch || x.Size(2) != dim {
		return nil, errorf("Step: input of shape %v, expected [%d, C, %d]", x.Shape(), d.Batch, dim)
	}
	if c := x.Size(1); d.Len+c > d.MaxLen {
		return nil, errorf("Step: %d tokens after the %d in the cache exceed MaxLen %d", c, d.Len, d.MaxLen)
	}
	var out *tensor.Tensor
	tensor.NoGrad(func() {
		n := d.Block.LN1.Forward(x)
		defer n.Release()
		a := d.attend(n)
		defer a.Release()
		h := x.Add(a)
		defer h.Release()
		n2 := d.Block.LN2.Forward(h)
		defer n2.Release()
		m := d.Block.MLP.Forward(n2)
		defer m.Release()
		out = h.Add(m)
	})
	return out, nil
}

// Prefill feeds the prompt x [B, T, D] in chunks of at most chunk tokens
// and returns the outputs of its last token [B, 1, D].
func (d *Decoder) Prefill(x *tensor.Tensor, chunk int) (*tensor.Tensor, error) {
	if chunk <= 0 {
		return nil, errorf("Prefill: chunk %d must be positive", chunk)
	}
	if x == nil {
		return nil, errorf("Prefill: x is nil")
	}
	if x.Dim() != 3 || x.Size(1) == 0 {
		return nil, errorf("Prefill: input of shape %v, expected [B, T, D] with T > 0", x.Shape())
	}
	if d.Len+x.Size(1) > d.MaxLen {
		return nil, errorf("Prefill: %d tokens after the %d in the cache exceed MaxLen %d", x.Size(1), d.Len, d.MaxLen)
	}
	var last *tensor.Tensor
	for start := 0; start < x.Size(1); start += chunk {
		piece := x.Narrow(1, start, min(chunk, x.Size(1)-start))
		out, err := d.Step(piece)
		piece.Release()
		if err != nil {
			last.Release()
			return nil, err
		}
		last.Release()
		last = out.Narrow(1, out.Size(1)-1, 1)
		out.Release()
	}
	return last, nil
}

// ChunkForBudget is the largest chunk whose attention scores, for a
// prompt of length tokens, fit in budget bytes: B·H·chunk·length values
// (0 for a nil block or one without attention).
func ChunkForBudget(block *nn.Block, batch, length int, budget int64) int {
	if block == nil || block.Attn == nil || block.Attn.InProjWeight == nil {
		return 0
	}
	per := int64(batch) * int64(block.Attn.Heads) * int64(length) * int64(block.Attn.InProjWeight.Dtype().Size())
	if per <= 0 {
		return 0
	}
	return int(min(budget/per, int64(length)))
}

// attend is the block's attention for the new tokens n [B, C, D],
// against the cache and themselves.
func (d *Decoder) attend(n *tensor.Tensor) *tensor.Tensor {
	q, k, v, release := d.Block.Attn.ProjectHeads(n)
	defer release()
	keys, values := d.append(k, v)
	defer keys.Release()
	defer values.Release()
	return d.Block.Attn.Attend(q, keys, values, n.Size(1) > 1)
}

// append adds the new keys and values [B, H, C, hd] to the cache and
// returns views of all of them [B, H, Len, hd].
func (d *Decoder) append(k, v *tensor.Tensor) (keys, values *tensor.Tensor) {
	c := k.Size(2)
	if d.Strategy == Preallocated {
		for _, p := range []struct{ cache, src *tensor.Tensor }{{d.k, k}, {d.v, v}} {
			slot := p.cache.Narrow(2, d.Len, c)
			slot.CopyFrom(p.src)
			slot.Release()
		}
		d.Len += c
		return d.k.Narrow(2, 0, d.Len), d.v.Narrow(2, 0, d.Len)
	}
	grow := func(cache, src *tensor.Tensor) *tensor.Tensor {
		if cache == nil {
			return src.Contiguous()
		}
		next := tensor.Cat([]*tensor.Tensor{cache, src}, 2)
		cache.Release()
		return next
	}
	d.k, d.v = grow(d.k, k), grow(d.v, v)
	d.Len += c
	return d.k.Narrow(2, 0, d.Len), d.v.Narrow(2, 0, d.Len)
}

// fits reports whether the product of sizes fits an int.
func fits(sizes ...int) bool {
	n := 1
	for _, s := range sizes {
		if s != 0 && n > math.MaxInt/s {
			return false
		}
		n *= s
	}
	return true
}
