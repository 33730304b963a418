package tensor

import (
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/gpumem/course/gpukit/layout"
)

// Tensor is a strided view of a Storage: element [i0, i1, ...] lives at
// element offset StorageOffset() + Σ i_k·Stride()[k] of the storage, that
// is at byte address DataPtr() of the first element plus that many
// elements past it (see ElementOffset and ElementAddr).
//
// A Tensor holds one reference to its storage, and one to its autograd
// node (GradFn) if it has one, until Release is called or until the
// collector finds the tensor unreachable (see CollectGarbage). Methods
// panic with an *Error on misuse; see Try.
type Tensor struct {
	st      *Storage
	offset  int
	shape   []int
	strides []int
	dtype   Dtype

	// ref holds the references this handle owns; the collector fallback
	// drops them through it. nil on internal layout-only handles
	// (layoutAs), which own nothing.
	ref     *tensorRef
	cleanup runtime.Cleanup

	// autograd
	requiresGrad bool
	gradMu       sync.Mutex // guards grad: backward passes on several goroutines may share a leaf
	grad         *Tensor
	gradFn       *node // also in ref.fn, for the collector fallback
	retainsGrad  bool
	// base is the tensor this one is a view of (nil if not a view).
	base *Tensor
	// inference is set on tensors created inside InferenceMode.
	inference bool
}

// tensorRef is what one Tensor handle owns: a reference to its storage
// and one to its grad_fn node. It is the argument of the handle's
// runtime.AddCleanup, so it must never point back to the Tensor (nor to
// anything that does), or the tensor could never be collected. Exactly
// one of Release and the cleanup drops it (done).
type tensorRef struct {
	st   *Storage
	fn   atomic.Pointer[node]
	done atomic.Bool
}

// drop gives the references back; only the first call does anything.
func (r *tensorRef) drop() bool {
	if !r.done.CompareAndSwap(false, true) {
		return false
	}
	if n := r.fn.Swap(nil); n != nil {
		n.drop()
	}
	r.st.drop()
	return true
}

// collectedRefs counts the tensor handles whose references the collector
// fallback dropped (see CollectGarbage).
var collectedRefs atomic.Int64

// collectRef is every tensor's cleanup: a plain function, so that it
// captures nothing.
func collectRef(r *tensorRef) {
	if r.drop() {
		collectedRefs.Add(1)
	}
}

// wrap makes a new tensor on st (taking a reference) with the given layout,
// with a collector fallback.
func wrap(st *Storage, offset int, shape, strides []int, dt Dtype) *Tensor {
	t := wrapOwned(st, offset, shape, strides, dt)
	t.cleanup = runtime.AddCleanup(t, collectRef, t.ref)
	return t
}

// wrapOwned is wrap without the collector fallback, for handles whose
// owner always releases them (tensors saved by an autograd node: the node
// is released when its last reference goes, by Release or by the
// collector fallback of the tensors that refer to it).
func wrapOwned(st *Storage, offset int, shape, strides []int, dt Dtype) *Tensor {
	st.retain()
	return &Tensor{st: st, offset: offset, shape: shape, strides: strides, dtype: dt, inference: inferenceModeOn(), ref: &tensorRef{st: st}}
}

// setGradFn makes n the node that produced t: t takes a reference to n and
// drops the one it held on its previous node (an in-place op records a new
// node whose edge keeps the previous one).
func (t *Tensor) setGradFn(n *node) {
	n.retain()
	old := t.gradFn
	t.gradFn = n
	if t.ref != nil {
		t.ref.fn.Store(n)
	}
	if old != nil {
		old.drop()
	}
}

// released reports whether t's references were given back.
func (t *Tensor) released() bool { return t.ref != nil && t.ref.done.Load() }

// live panics if t was released. Every op calls it on its operands.
func (t *Tensor) live(op string) {
	if t == nil {
		panicf("%s: nil tensor", op)
	}
	if t.released() {
		panicf("%s: use of a released tensor (shape %s, %s on %s)", op, fmtShape(t.shape), t.dtype, t.st.DeviceName())
	}
}

// Release returns the tensor's reference to its storage, and to its
// autograd node. When it was the last reference to the storage (no view,
// saved tensor or gradient shares it), the memory goes back to the
// allocator at once; when it was the last reference to the node (no other
// output of it, no later op's node refers to it), the node frees its
// saved tensors and lets go of the nodes before it, and so on: releasing
// a loss frees the graph behind it, as del loss does in PyTorch. Using t
// afterwards panics. Release is idempotent, and stops t's collector
// fallback, so nothing is counted twice. It does not release t's
// gradient; call t.Grad().Release() or t.SetGrad(nil) for that.
func (t *Tensor) Release() {
	if t == nil || t.ref == nil {
		return
	}
	if t.ref.drop() {
		t.cleanup.Stop()
	}
}

// Released reports whether Release was called on t.
func (t *Tensor) Released() bool { return t.released() }

// Shape returns a copy of the tensor's sizes.
func (t *Tensor) Shape() []int { return append([]int{}, t.shape...) }

// Size returns the size of dimension dim (negative counts from the end).
func (t *Tensor) Size(dim int) int { return t.shape[normDim(dim, len(t.shape), "Size")] }

// Dim is the number of dimensions (rank).
func (t *Tensor) Dim() int { return len(t.shape) }

// Numel is the number of elements.
func (t *Tensor) Numel() int { return numel(t.shape) }

// Dtype is the element type.
func (t *Tensor) Dtype() Dtype { return t.dtype }

// Stride returns a copy of the strides, in elements.
func (t *Tensor) Stride() []int { return append([]int{}, t.strides...) }

// StorageOffset is the element offset of t's first element in its storage.
func (t *Tensor) StorageOffset() int { return t.offset }

// Storage returns the storage the tensor views.
func (t *Tensor) Storage() *Storage { return t.st }

// SameStorage reports whether t and u view the same storage.
func (t *Tensor) SameStorage(u *Tensor) bool { return t.st == u.st }

// IsMeta reports whether t has no bytes (a meta device): ops on it compute
// shapes and allocate but do not compute values.
func (t *Tensor) IsMeta() bool { return !t.st.core.mem.hasBytes() }

// Nbytes is the number of bytes the tensor's elements span (numel·itemsize),
// not the size of its storage.
func (t *Tensor) Nbytes() int64 { return int64(t.Numel() * t.dtype.Size()) }

// DataPtr is the address of the first element: the storage's address plus
// StorageOffset()·itemsize, as torch.Tensor.data_ptr.
func (t *Tensor) DataPtr() uint64 {
	return t.st.addr + uint64(t.offset*t.dtype.Size())
}

// ElementOffset returns the storage offset, in elements, of the element at
// index idx: StorageOffset() + Σ idx[k]·Stride()[k]. It panics if idx is out
// of range.
func (t *Tensor) ElementOffset(idx ...int) int {
	if len(idx) != len(t.shape) {
		panicf("ElementOffset: %d indices for a tensor of rank %d", len(idx), len(t.shape))
	}
	off := t.offset
	for k, i := range idx {
		if i < 0 || i >= t.shape[k] {
			panicf("ElementOffset: index %d out of range for dimension %d of size %d", i, k, t.shape[k])
		}
		off += i * t.strides[k]
	}
	return off
}

// ElementAddr is the device address of the element at idx: the storage's
// address plus ElementOffset(idx...)·itemsize.
func (t *Tensor) ElementAddr(idx ...int) uint64 {
	return t.st.addr + uint64(t.ElementOffset(idx...)*t.dtype.Size())
}

// IsContiguous reports whether the elements are laid out row-major without
// gaps, so that the tensor can be read as one flat run of memory.
func (t *Tensor) IsContiguous() bool { return layout.IsContiguous(t.shape, t.strides) }

// Version is the version counter of t's storage (shared by all views).
func (t *Tensor) Version() int64 { return t.st.version.v.Load() }

// IsInference reports whether t was created inside InferenceMode.
func (t *Tensor) IsInference() bool { return t.inference }

// At returns element idx converted to float64 (a host read; on a sim
// device it reads the simulated memory directly and charges nothing, on a
// cuda device it copies the storage to the host).
func (t *Tensor) At(idx ...int) float64 {
	t.live("At")
	return load(t.dtype, t.hostBytes("At"), t.ElementOffset(idx...))
}

// Item returns the value of a one-element tensor as float64
// (torch.Tensor.item). It is how a loss is kept without keeping its graph.
func (t *Tensor) Item() float64 {
	t.live("Item")
	if t.Numel() != 1 {
		panicf("Item: a tensor with %d elements (shape %s) cannot be converted to a scalar", t.Numel(), fmtShape(t.shape))
	}
	return load(t.dtype, t.hostBytes("Item"), t.offset)
}

// Float64s returns all elements in row-major order, converted to float64.
func (t *Tensor) Float64s() []float64 {
	t.live("Float64s")
	data := t.hostBytes("Float64s")
	out := make([]float64, t.Numel())
	forEachOffset(t.shape, []int{t.offset}, [][]int{t.strides}, func(k int, o []int) {
		out[k] = load(t.dtype, data, o[0])
	})
	return out
}

// needBytes panics when the host cannot reach t's values: a meta tensor
// has none, and a cuda tensor's are in device memory.
func (t *Tensor) needBytes(op string) {
	if t.deviceOnly() {
		panicf("%s: tensor of shape %s lives in %s memory, which the host cannot write directly; build it on the host and use To", op, fmtShape(t.shape), t.DeviceName())
	}
	if !t.st.core.mem.hasBytes() {
		panicf("%s: tensor of shape %s on %s has no data (meta tensors carry shapes only)", op, fmtShape(t.shape), t.DeviceName())
	}
}

// SetAt writes v (converted to t's dtype) at index idx, in place: the
// in-place rules apply (refused on a leaf that requires grad outside
// NoGrad) and the version counter is bumped. It is not recorded by
// autograd. As PyTorch's t[idx] = v, which writes a 0-d view that cannot
// overlap itself, it may write into an expanded tensor (Note [Memory
// overlap of writes]).
func (t *Tensor) SetAt(v float64, idx ...int) {
	checkWritable("SetAt", t)
	t.needBytes("SetAt")
	store(t.dtype, t.st.data, t.ElementOffset(idx...), v)
	t.bump()
}

// outMem is where results of ops on t go: t's memory, except that results
// of ops on pinned host memory are pageable, as in PyTorch.
func (t *Tensor) outMem() memory {
	if h, ok := t.st.core.mem.(hostMem); ok && h.pinned {
		return hostMem{}
	}
	return t.st.core.mem
}

// sameDevice reports whether a and b live on the same device (all host
// memory, pinned or not, is one device: "cpu").
func sameDevice(a, b *Tensor) bool {
	_, ha := a.st.core.mem.(hostMem)
	_, hb := b.st.core.mem.(hostMem)
	if ha || hb {
		return ha && hb
	}
	return a.st.core.mem == b.st.core.mem
}
