package tensor

import (
	"sync"
	"sync/atomic"
)

// Autocast (automatic mixed precision, torch.autocast) is per goroutine,
// like grad modes: WithAutocast(dtype, fn) makes the ops that fn calls on
// this goroutine cast their floating-point inputs by PyTorch's CUDA
// policy (package amp is the user-facing API):
//
//   - lower precision (matmul-like): Matmul runs in the autocast dtype;
//   - float32 (numerically sensitive): Softmax, LogSoftmax, Exp, Log, Pow,
//     Sum, SumDims, MSELoss, CrossEntropy, LayerNorm;
//   - widest input (ops whose inputs must agree): Add, Sub, Mul, Div,
//     Maximum, Minimum, Where, and the ops of PyTorch's "promote" list
//     that gpukit has: Cat, Stack, ScatterAdd;
//   - every other op runs in the dtype of its input.
//
// Float64 tensors are never cast (they are not eligible, as in PyTorch).
// Casts of leaves that require grad (parameters) are cached until the
// outermost autocast scope ends, so a weight used by several ops is cast
// once; AutocastCacheBytes reports the cache's memory. Backward runs with
// autocast paused: gradients flow in the dtypes the forward chose.
//
// Outside any scope, ops pay one atomic load.

type castPolicy uint8

const (
	castLower castPolicy = iota
	castFloat32
	castPromote
)

type autocastState struct {
	stack []autocastFrame // innermost last
	cache map[castKey]*Tensor
}

// castKey names a cached cast: a parameter and the dtype it was cast to.
// Nested scopes with different dtypes (a float16 scope holding bfloat16
// ones) each cache their own cast, and all are released when the
// outermost scope ends.
type castKey struct {
	t  *Tensor
	dt Dtype
}

type autocastFrame struct {
	dtype   Dtype
	enabled bool
}

var (
	autocastScopes atomic.Int64
	autocastStates sync.Map // goroutine id -> *autocastState
)

// WithAutocast runs fn with autocast to dtype (Float16 or BFloat16)
// enabled, or disabled inside an enclosing scope when enabled is false.
// It panics with an *Error for another dtype. The cast cache is emptied
// (its tensors released) when the outermost scope of the goroutine ends.
func WithAutocast(dtype Dtype, enabled bool, fn func()) {
	if enabled && dtype != Float16 && dtype != BFloat16 {
		panicf("WithAutocast: autocast supports Float16 and BFloat16, not %s", dtype)
	}
	id := goroutineKey()
	var st *autocastState
	if v, ok := autocastStates.Load(id); ok {
		st = v.(*autocastState)
	} else {
		st = &autocastState{cache: map[castKey]*Tensor{}}
		autocastStates.Store(id, st)
	}
	st.stack = append(st.stack, autocastFrame{dtype: dtype, enabled: enabled})
	autocastScopes.Add(1)
	defer func() {
		st.stack = st.stack[:len(st.stack)-1]
		if len(st.stack) == 0 {
			for _, c := range st.cache {
				c.Release()
			}
			autocastStates.Delete(id)
		}
		autocastScopes.Add(-1)
	}()
	fn()
}

// currentAutocast returns the calling goroutine's state and its active
// frame, or nil when autocast is off here.
func currentAutocast() (*autocastState, *autocastFrame) {
	if autocastScopes.Load() == 0 {
		return nil, nil
	}
	v, ok := autocastStates.Load(goroutineKey())
	if !ok {
		return nil, nil
	}
	st := v.(*autocastState)
	if len(st.stack) == 0 {
		return nil, nil
	}
	f := &st.stack[len(st.stack)-1]
	if !f.enabled {
		return nil, nil
	}
	return st, f
}

// IsAutocastEnabled reports whether autocast is on for the calling
// goroutine, and to which dtype.
func IsAutocastEnabled() (Dtype, bool) {
	_, f := currentAutocast()
	if f == nil {
		return 0, false
	}
	return f.dtype, true
}

// AutocastCacheBytes is the memory held by the calling goroutine's cache
// of cast parameters (0 outside autocast).
func AutocastCacheBytes() int64 {
	st, _ := currentAutocast()
	if st == nil {
		return 0
	}
	var n int64
	for _, c := range st.cache {
		n += c.Nbytes()
	}
	return n
}

// pauseAutocast turns autocast off on this goroutine until the returned
// function is called (Backward uses it).
func pauseAutocast() func() {
	if autocastScopes.Load() == 0 {
		return func() {}
	}
	v, ok := autocastStates.Load(goroutineKey())
	if !ok {
		return func() {}
	}
	st := v.(*autocastState)
	st.stack = append(st.stack, autocastFrame{enabled: false})
	return func() { st.stack = st.stack[:len(st.stack)-1] }
}

// eligible reports whether autocast may cast t: a floating-point tensor
// other than Float64.
func eligible(t *Tensor) bool {
	return t != nil && t.dtype.IsFloat() && t.dtype != Float64
}

// autocastTarget is the dtype the policy wants for ts, and whether any
// eligible tensor differs from it.
func autocastTarget(p castPolicy, f *autocastFrame, ts []*Tensor) (Dtype, bool) {
	var target Dtype
	switch p {
	case castLower:
		target = f.dtype
	case castFloat32:
		target = Float32
	case castPromote:
		// Float64 > Float32 > the 16-bit types; Float16 with BFloat16
		// meet at Float32.
		rank := map[Dtype]int{Float16: 1, BFloat16: 1, Float32: 2, Float64: 3}
		widest, found := Dtype(0), false
		for _, t := range ts {
			if t == nil || !t.dtype.IsFloat() {
				continue
			}
			switch {
			case !found || rank[t.dtype] > rank[widest]:
				widest, found = t.dtype, true
			case rank[t.dtype] == 1 && t.dtype != widest && rank[widest] == 1:
				widest = Float32
			}
		}
		if !found {
			return 0, false
		}
		target = widest
	}
	for _, t := range ts {
		if eligible(t) && t.dtype != target {
			return target, true
		}
	}
	return target, false
}

// autocastCast returns t cast to dt (cached for a leaf that requires
// grad) and whether the caller must release it.
func autocastCast(st *autocastState, t *Tensor, dt Dtype) (*Tensor, bool) {
	if !eligible(t) || t.dtype == dt {
		return t, false
	}
	if t.IsLeaf() && t.requiresGrad && IsGradEnabled() { // a cast made under NoGrad would carry no graph
		k := castKey{t, dt}
		if c, ok := st.cache[k]; ok && !c.released() {
			return c, false
		}
		c := t.ToDtype(dt)
		st.cache[k] = c
		return c, false
	}
	return t.ToDtype(dt), true
}

// autocastN runs op on ts cast by policy p when autocast is on and some
// input needs a cast; ok is false when the op should run as it is.
func autocastN(p castPolicy, ts []*Tensor, op func([]*Tensor) *Tensor) (out *Tensor, ok bool) {
	st, f := currentAutocast()
	if f == nil {
		return nil, false
	}
	dt, need := autocastTarget(p, f, ts)
	if !need {
		return nil, false
	}
	cast := make([]*Tensor, len(ts))
	for i, t := range ts {
		c, own := autocastCast(st, t, dt)
		cast[i] = c
		if own {
			defer c.Release()
		}
	}
	return op(cast), true
}

// autocast1 is autocastN for one tensor.
func autocast1(p castPolicy, a *Tensor, op func(*Tensor) *Tensor) (*Tensor, bool) {
	if autocastScopes.Load() == 0 {
		return nil, false
	}
	return autocastN(p, []*Tensor{a}, func(c []*Tensor) *Tensor { return op(c[0]) })
}

// autocast2 is autocastN for two tensors.
func autocast2(p castPolicy, a, b *Tensor, op func(a, b *Tensor) *Tensor) (*Tensor, bool) {
	if autocastScopes.Load() == 0 {
		return nil, false
	}
	return autocastN(p, []*Tensor{a, b}, func(c []*Tensor) *Tensor { return op(c[0], c[1]) })
}

// autocastOperand is autocast2 for ops whose second operand may be a
// number (Add, Sub, Mul, Div): numbers need no cast.
func autocastOperand(p castPolicy, a *Tensor, other any, op func(a *Tensor, b any) *Tensor) (*Tensor, bool) {
	if autocastScopes.Load() == 0 {
		return nil, false
	}
	b, isTensor := other.(*Tensor)
	if !isTensor {
		return autocast1(p, a, func(c *Tensor) *Tensor { return op(c, other) })
	}
	return autocast2(p, a, b, func(x, y *Tensor) *Tensor { return op(x, y) })
}

// AutocastParam returns the tensor an op under autocast would use for
// parameter p in a lower-precision op: the cached cast of p to the
// autocast dtype, or a new reference to p outside autocast. Modules use it
// when they transform a weight (Linear's Wᵀ) before the op sees it, so
// the cast is cached on the parameter itself. The caller releases the
// result.
func AutocastParam(p *Tensor) *Tensor {
	st, f := currentAutocast()
	if f == nil || !eligible(p) || p.dtype == f.dtype {
		return p.sameTensor()
	}
	c, own := autocastCast(st, p, f.dtype)
	if own {
		return c
	}
	return c.sameTensor()
}
