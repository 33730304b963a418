package tensor

import (
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
)

// This file is the autograd engine: the tape (nodes recorded by ops), saved
// tensors with their version check and hooks, and Backward. Ops use two
// helpers, needsGrad and record; see doc.go, "Adding an op".

// backwardFn computes the gradients of an op's inputs from the gradient g
// of its output. saved holds the tensors the op saved, in order; needs[i]
// tells whether input i wants a gradient (others may be nil). It runs with
// grad mode off and returns one gradient per input, shaped like the input.
// It must not capture tensors from the forward pass (only shapes and
// scalars): tensors it needs are saved, so that memory is accounted for and
// released after backward.
type backwardFn func(g *Tensor, saved []*Tensor, needs []bool) []*Tensor

// edge leads from a node to the producer of one of its inputs: the
// input's node, or the input itself when it is a leaf that requires grad
// (PyTorch's AccumulateGrad). Both nil: the input needs no gradient.
type edge struct {
	fn   *node
	leaf *Tensor
}

func (e edge) needed() bool { return e.fn != nil || e.leaf != nil }

// node is one recorded op on the tape (PyTorch's grad_fn).
//
// Nodes are reference counted, as PyTorch's are: a node is referenced by
// the tensors whose GradFn it is and by the nodes that take it as a next
// function (edge.fn). When the count reaches zero, the node releases its
// saved tensors and drops its references to the nodes before it, which
// may release them in turn (see drop). Releasing a loss therefore frees
// its graph at once, except the parts another live tensor or graph still
// refers to.
type node struct {
	name   string
	shapes [][]int // input shapes, to check what backward returns
	refs   atomic.Int64

	mu       sync.Mutex // guards next, saved, backward, freed and released
	next     []edge
	saved    []*savedTensor
	backward backwardFn
	freed    bool // saved tensors released by a backward without RetainGraph
	released bool // no reference left: saved tensors and edges are gone
}

func (n *node) retain() { n.refs.Add(1) }

// drop removes one reference. The last one releases the node's saved
// tensors and drops its references to the nodes before it, iteratively (a
// graph may be thousands of nodes deep).
func (n *node) drop() {
	stack := []*node{n}
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		r := n.refs.Add(-1)
		if r > 0 {
			continue
		}
		if r < 0 {
			panic("tensor: internal error: reference count of node " + n.name + " below zero")
		}
		n.mu.Lock()
		saved, next, freed := n.saved, n.next, n.freed
		n.saved, n.next, n.backward = nil, nil, nil
		n.released = true
		n.mu.Unlock()
		if !freed {
			for _, s := range saved {
				s.release()
			}
		}
		for _, e := range next {
			if e.fn != nil {
				stack = append(stack, e.fn)
			}
		}
	}
}

// savedTensor is one tensor saved for backward. Without hooks it holds a
// reference (an alias sharing the storage), so the memory stays allocated
// until the graph releases it. With saved-tensor hooks it holds whatever
// pack returned.
type savedTensor struct {
	t       *Tensor
	packed  any
	hooks   *savedHooks
	vc      *versionCounter
	version int64
	desc    string // "float32 [2, 3]" for messages
	// unchecked skips the version check: for a tensor saved only because
	// PyTorch saves it, which backward does not read (BatchNorm's running
	// statistics in training).
	unchecked bool
}

type savedHooks struct {
	pack   func(*Tensor) any
	unpack func(any) *Tensor
}

// WithSavedTensorHooks runs fn so that every tensor an op saves for
// backward inside it is passed to pack, and the packed value is passed to
// unpack when backward needs the tensor (torch.autograd.graph.
// saved_tensors_hooks). Activation checkpointing and CPU offload are built
// on it.
//
// Ownership: pack receives its own reference to the saved tensor. If pack
// returns that same tensor, the graph keeps it; otherwise the reference is
// released when pack returns (call x.Detach() inside pack to keep the
// storage alive in some other value). The tensor unpack returns is released
// after the node's backward, unless it is the very tensor pack returned.
// A packed value with a Release() method is released with the graph.
// Hooks apply to the calling goroutine only; the innermost hooks win.
func WithSavedTensorHooks(pack func(*Tensor) any, unpack func(any) *Tensor, fn func()) {
	withMode(frameHooks, &savedHooks{pack: pack, unpack: unpack}, fn)
}

// Saved is a tensor saved for backward outside an op, as
// ctx.save_for_backward saves one in a torch.autograd.Function: through
// the saved-tensor hooks active when it is saved (their pack now, their
// unpack at Unpack), with a version check that catches in-place changes
// in between. Non-reentrant checkpointing saves its segment's input this
// way, as PyTorch's _NoopSaveInputs does, so that hooks around the
// checkpoint (offloading to the host) see it.
type Saved struct {
	name string
	s    *savedTensor
}

// SaveForBackward saves t for a later Unpack; op names the saver in
// messages. Release the result when done.
func SaveForBackward(op string, t *Tensor) *Saved { return &Saved{name: op, s: saveTensor(op, t)} }

// Unpack returns the saved tensor (from the hooks' unpack when it was
// saved under hooks), as a new reference the caller releases. It panics
// with an *Error when the tensor was modified in place since it was saved
// or the Saved was released.
func (s *Saved) Unpack() *Tensor {
	if s.s == nil {
		panicf("%s: the saved tensor was released", s.name)
	}
	t, owned := s.s.unpack(s.name, 0)
	if owned {
		return t
	}
	return t.alias()
}

// Release frees the saved tensor (what the hooks' pack returned, when it
// has a Release method). It is safe to call more than once.
func (s *Saved) Release() {
	if s.s != nil {
		s.s.release()
		s.s = nil
	}
}

func currentHooks() *savedHooks {
	m := currentMode()
	if m == nil || len(m.hooks) == 0 {
		return nil
	}
	return m.hooks[len(m.hooks)-1]
}

// alias returns a new tensor object with t's layout on t's storage, taking
// a reference of its own. It has no autograd history.
func (t *Tensor) alias() *Tensor {
	a := wrap(t.st, t.offset, t.shape, t.strides, t.dtype)
	a.inference = t.inference
	runtime.KeepAlive(t) // t's own cleanup must not drop the storage before wrap took its reference
	return a
}

func saveTensor(op string, t *Tensor) *savedTensor {
	t.live(op)
	if t.inference && !inferenceModeOn() {
		panicf("%s: inference tensors cannot be saved for backward (shape %s was created inside InferenceMode); Clone it outside InferenceMode to get a normal tensor and use that in autograd", op, fmtShape(t.shape))
	}
	s := &savedTensor{vc: t.st.version, version: t.st.version.v.Load(), desc: t.dtype.String() + " " + fmtShape(t.shape)}
	if h := currentHooks(); h != nil {
		a := t.alias()
		s.hooks = h
		s.packed = h.pack(a)
		if p, ok := s.packed.(*Tensor); !ok || p != a {
			a.Release()
		}
		return s
	}
	// The node owns the alias and always releases it (by backward or when
	// the node is released), so it needs no collector fallback of its own.
	s.t = wrapOwned(t.st, t.offset, t.shape, t.strides, t.dtype)
	s.t.inference = t.inference
	runtime.KeepAlive(t)
	return s
}

// unpack returns the saved tensor, checking that nobody changed it in
// place since it was saved. owned reports whether the caller must release
// the result.
func (s *savedTensor) unpack(name string, i int) (t *Tensor, owned bool) {
	if v := s.vc.v.Load(); v != s.version && !s.unchecked {
		panicf("one of the variables needed for gradient computation has been modified by an inplace operation: [%s], saved tensor %d of %s, is at version %d; expected version %d instead. Hint: do not modify that tensor in place (or Clone it before the in-place op)", s.desc, i, name, v, s.version)
	}
	if s.hooks == nil {
		return s.t, false
	}
	t = s.hooks.unpack(s.packed)
	if p, ok := s.packed.(*Tensor); ok && p == t {
		return t, false
	}
	return t, true
}

func (s *savedTensor) release() {
	if s == nil { // an input saved as nil
		return
	}
	if s.t != nil {
		s.t.Release()
		s.t = nil
	}
	if r, ok := s.packed.(interface{ Release() }); ok {
		r.Release()
	}
	s.packed = nil
}

// needsGrad reports whether an op on these inputs must record a node:
// grad mode is on and some input requires grad.
func needsGrad(inputs ...*Tensor) bool {
	any := false
	for _, t := range inputs {
		if t != nil && t.requiresGrad {
			any = true
			break
		}
	}
	return any && IsGradEnabled()
}

// record attaches a node named name (PyTorch's grad_fn name, e.g.
// "MulBackward0") to out when needsGrad(inputs...): it saves the tensors in
// save (which show in memory stats until backward) and remembers bw. It is
// a no-op otherwise, so ops call it unconditionally. It returns out.
//
// A nil entry of save saves nothing and reaches bw as nil, keeping the
// positions of the others. Ops pass nil for a tensor that no needed
// gradient uses, as PyTorch's generated code guards each save with
// should_compute_output: a x.Mul(c) with a constant c saves c and not x
// (see savedIf).
func record(out *Tensor, name string, inputs []*Tensor, save []*Tensor, bw backwardFn) *Tensor {
	if !needsGrad(inputs...) {
		return out
	}
	n := &node{name: name, backward: bw}
	for _, in := range inputs {
		var e edge
		if in != nil && in.requiresGrad {
			if in.gradFn != nil {
				e.fn = in.gradFn
				e.fn.retain()
			} else {
				e.leaf = in
			}
		}
		n.next = append(n.next, e)
		if in != nil {
			n.shapes = append(n.shapes, in.shape)
		} else {
			n.shapes = append(n.shapes, nil)
		}
	}
	for _, s := range save {
		var st *savedTensor
		if s != nil {
			st = saveTensor(name, s)
		}
		n.saved = append(n.saved, st)
	}
	out.requiresGrad = true
	out.setGradFn(n)
	runtime.KeepAlive(inputs) // their nodes must not be released before n holds them
	return out
}

// savedIf returns t when the gradient of some input that uses it will be
// computed (one of inputs requires grad), and nil otherwise: the argument
// of record's save for an operand that only other inputs' gradients need.
// Call it in the forward, before record.
func savedIf(t *Tensor, inputs ...*Tensor) *Tensor {
	for _, in := range inputs {
		if in != nil && in.requiresGrad {
			return t
		}
	}
	return nil
}

// RequiresGrad reports whether gradients flow to t.
func (t *Tensor) RequiresGrad() bool { return t.requiresGrad }

// SetRequiresGrad sets whether autograd records ops on t (only on leaves,
// of a floating-point dtype). It returns t.
func (t *Tensor) SetRequiresGrad(b bool) *Tensor {
	t.live("SetRequiresGrad")
	if t.gradFn != nil {
		if !b {
			panicf("SetRequiresGrad: you can only change requires_grad flags of leaf variables; use Detach() to get a tensor without history")
		}
		return t
	}
	if b && !t.dtype.IsFloat() {
		panicf("SetRequiresGrad: only tensors of floating point dtype can require gradients (got %s)", t.dtype)
	}
	if b && t.inference && !inferenceModeOn() {
		panicf("SetRequiresGrad: setting requires_grad on an inference tensor outside InferenceMode is not allowed; Clone it first")
	}
	t.requiresGrad = b
	return t
}

// IsLeaf reports whether t has no autograd history: it was created by the
// user, or does not require grad. Only leaves get .Grad() filled by
// Backward.
func (t *Tensor) IsLeaf() bool { return t.gradFn == nil }

// GradFn is the name of the op that produced t, such as "MulBackward0"
// (empty for leaves).
func (t *Tensor) GradFn() string {
	if t.gradFn == nil {
		return ""
	}
	return t.gradFn.name
}

// Grad is the accumulated gradient of a leaf (nil before any backward or
// after SetGrad(nil)).
func (t *Tensor) Grad() *Tensor {
	t.gradMu.Lock()
	defer t.gradMu.Unlock()
	return t.grad
}

// SetGrad replaces t's gradient, releasing the previous one. SetGrad(nil)
// is PyTorch's zero_grad(set_to_none=True): the memory goes back.
func (t *Tensor) SetGrad(g *Tensor) {
	if g != nil {
		g.live("SetGrad")
		if !slices.Equal(g.shape, t.shape) {
			panicf("SetGrad: gradient of shape %s for a tensor of shape %s", fmtShape(g.shape), fmtShape(t.shape))
		}
	}
	t.gradMu.Lock()
	defer t.gradMu.Unlock()
	if t.grad != nil && t.grad != g {
		t.grad.Release()
	}
	t.grad = g
}

// ZeroGrad fills t's gradient with zeros in place, keeping its memory
// (zero_grad(set_to_none=False)). Use SetGrad(nil) to free it instead.
func (t *Tensor) ZeroGrad() {
	t.gradMu.Lock()
	defer t.gradMu.Unlock()
	if t.grad != nil {
		NoGrad(func() { t.grad.Fill(0) })
	}
}

// Detach returns a new tensor on the same storage with no history
// (torch.Tensor.detach). It allocates nothing and frees nothing: the graph
// is freed when nothing refers to it any more.
func (t *Tensor) Detach() *Tensor {
	t.live("Detach")
	return t.alias()
}

// BackwardOption configures Backward.
type BackwardOption func(*backwardConfig)

type backwardConfig struct {
	retain bool
	grad   *Tensor
}

// RetainGraph keeps the saved tensors after backward, so that Backward can
// run through the same graph again (retain_graph=True).
func RetainGraph() BackwardOption { return func(c *backwardConfig) { c.retain = true } }

// WithGradient seeds backward with g (the gradient of some scalar with
// respect to t); required when t has more than one element.
func WithGradient(g *Tensor) BackwardOption { return func(c *backwardConfig) { c.grad = g } }

// Backward computes the gradient of t with respect to every leaf that
// requires grad and accumulates it into their Grad(). Unless RetainGraph
// is given, the tensors saved by the graph are released afterwards, and a
// second Backward through the same nodes fails.
func (t *Tensor) Backward(opts ...BackwardOption) {
	defer pauseAutocast()() // gradients flow in the dtypes the forward chose
	t.live("Backward")
	var cfg backwardConfig
	for _, o := range opts {
		o(&cfg)
	}
	if !t.requiresGrad {
		panicf("Backward: element 0 of tensors does not require grad and does not have a grad_fn (shape %s)", fmtShape(t.shape))
	}
	var seed *Tensor
	if cfg.grad != nil {
		cfg.grad.live("Backward")
		if !slices.Equal(cfg.grad.shape, t.shape) {
			panicf("Backward: gradient of shape %s for a tensor of shape %s", fmtShape(cfg.grad.shape), fmtShape(t.shape))
		}
		seed = cfg.grad.alias()
	} else {
		if t.Numel() != 1 {
			panicf("Backward: grad can be implicitly created only for scalar outputs (shape %s); pass WithGradient", fmtShape(t.shape))
		}
		NoGrad(func() { seed = onesLike(t) })
	}
	NoGrad(func() { runBackward(t, seed, cfg.retain) })
	// t holds the root node: it must not be collected (and its graph
	// released by its collector fallback) while backward walks the graph.
	runtime.KeepAlive(t)
}

// edges returns n's edges, panicking if n was released: a released node
// has lost its saved tensors and its edges, and must never be run.
func (n *node) edges() []edge {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.released {
		panicf("Backward: %s was released (every tensor and node that referred to it was released or collected, and its saved tensors were freed); it cannot be used by a backward pass", n.name)
	}
	return n.next
}

// forBackward returns what backward needs from n, checking that it can
// still run: not released, and saved tensors not freed by an earlier
// Backward.
func (n *node) forBackward() ([]edge, []*savedTensor, backwardFn) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.released {
		panicf("Backward: %s was released (every tensor and node that referred to it was released or collected, and its saved tensors were freed); it cannot be used by a backward pass", n.name)
	}
	if n.freed && slices.ContainsFunc(n.saved, func(s *savedTensor) bool { return s != nil }) {
		panicf("Backward: trying to backward through the graph a second time (or directly access saved tensors after they have already been freed); %s released its saved tensors after the first Backward. Pass RetainGraph() to the first Backward if you need to backward twice", n.name)
	}
	return n.next, n.saved, n.backward
}

// freeSaved releases n's saved tensors after a backward without
// RetainGraph (the node itself stays, with its edges, as long as something
// refers to it).
func (n *node) freeSaved() {
	n.mu.Lock()
	saved, freed := n.saved, n.freed
	n.freed = true
	n.mu.Unlock()
	if !freed {
		for _, s := range saved {
			s.release()
		}
	}
}

func runBackward(root *Tensor, seed *Tensor, retain bool) {
	if root.gradFn == nil {
		accumulateLeaf(root, seed)
		return
	}
	// Count, for every node, the edges that lead to it from the graph.
	deps := map[*node]int{}
	seen := map[*node]bool{root.gradFn: true}
	stack := []*node{root.gradFn}
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, e := range n.edges() {
			if e.fn == nil {
				continue
			}
			deps[e.fn]++
			if !seen[e.fn] {
				seen[e.fn] = true
				stack = append(stack, e.fn)
			}
		}
	}
	grads := map[*node]*Tensor{root.gradFn: seed}
	// inFlight holds the gradient and the unpacked saved tensors of the
	// node being run. When the walk stops early (a released node, a saved
	// tensor changed in place), everything it still holds is given back,
	// so that a refused backward leaks nothing; at the normal end, grads
	// holds only branches that never became ready (none in a DAG walked
	// from its root).
	var inFlight []*Tensor
	defer func() {
		for _, t := range inFlight {
			t.Release()
		}
		for _, g := range grads {
			g.Release()
		}
	}()
	ready := []*node{root.gradFn}
	for len(ready) > 0 {
		n := ready[len(ready)-1]
		ready = ready[:len(ready)-1]
		g := grads[n]
		delete(grads, n)
		inFlight = append(inFlight[:0], g)
		next, savedTensors, backward := n.forBackward()
		needs := make([]bool, len(next))
		for i, e := range next {
			needs[i] = e.needed()
		}
		saved := make([]*Tensor, len(savedTensors))
		var owned []*Tensor
		for i, s := range savedTensors {
			if s == nil {
				continue // not saved: no needed gradient uses it
			}
			st, own := s.unpack(n.name, i)
			saved[i] = st
			if own {
				owned = append(owned, st)
				inFlight = append(inFlight, st)
			}
		}
		ins := backward(g, saved, needs)
		if len(ins) != len(next) {
			panic(fmt.Sprintf("tensor: internal error: %s returned %d gradients for %d inputs", n.name, len(ins), len(next)))
		}
		for _, o := range owned {
			o.Release()
		}
		inFlight = inFlight[:1]
		for _, gi := range ins {
			if gi != nil && gi != g && !slices.Contains(saved, gi) && !slices.Contains(inFlight, gi) {
				inFlight = append(inFlight, gi)
			}
		}
		if !retain {
			n.freeSaved()
		}
		// Take one reference per use of each returned gradient, then drop
		// the ones the backward function handed us (several inputs may get
		// the very same tensor, e.g. Add) and the incoming gradient, so
		// that a fresh gradient reaching a leaf is referenced by its use
		// alone and AccumulateGrad can take it without a copy.
		uses := make([]*Tensor, len(next))
		for i, e := range next {
			gi := ins[i]
			if !e.needed() || gi == nil {
				continue
			}
			if !slices.Equal(gi.shape, n.shapes[i]) {
				panic(fmt.Sprintf("tensor: internal error: %s returned a gradient of shape %s for input %d of shape %s", n.name, fmtShape(gi.shape), i, fmtShape(n.shapes[i])))
			}
			uses[i] = gi.alias()
		}
		// inFlight holds g and the gradients the backward function made.
		for _, t := range inFlight {
			t.Release()
		}
		inFlight = append(inFlight[:0], uses...) // released if a use panics
		for i, e := range next {
			ga := uses[i]
			if ga == nil {
				continue
			}
			inFlight[i] = nil // handed over
			if e.leaf != nil {
				accumulateLeaf(e.leaf, ga)
				continue
			}
			if prev, ok := grads[e.fn]; ok {
				grads[e.fn] = prev.Add(ga)
				prev.Release()
				ga.Release()
			} else {
				grads[e.fn] = ga
			}
			deps[e.fn]--
			if deps[e.fn] == 0 {
				ready = append(ready, e.fn)
			}
		}
		inFlight = inFlight[:0]
	}
}

// accumulateLeaf adds g (owned by the caller, handed over) to leaf.grad.
// A fresh, contiguous gradient that nobody else references is stolen, as
// PyTorch's AccumulateGrad does; otherwise it is copied or added in place.
// If it panics (out of memory), g is released all the same. Backward
// passes on several goroutines may share a leaf: the leaf's lock makes
// the read-and-update of .grad one step, as PyTorch's AccumulateGrad does
// under its mutex, so no gradient is lost.
func accumulateLeaf(leaf *Tensor, g *Tensor) {
	defer func() {
		if g != nil {
			g.Release()
		}
	}()
	if g.dtype != leaf.dtype {
		c := g.ToDtype(leaf.dtype)
		g.Release()
		g = c
	}
	leaf.gradMu.Lock()
	defer leaf.gradMu.Unlock()
	switch {
	case leaf.grad != nil:
		leaf.grad.AddInPlace(g)
	case g.IsContiguous() && g.st.Refs() == 1 && g.offset == 0 && int64(g.Numel()*g.dtype.Size()) == g.st.nbytes:
		leaf.grad, g = g, nil
	default:
		leaf.grad = g.Clone()
	}
}
