package tensor

import (
	"sync"
	"sync/atomic"

	"github.com/gpumem/course/gpukit/alloc"
	"github.com/gpumem/course/gpukit/device/backend"
)

// memory is the seam between tensor and the place bytes live: a device
// (through its caching allocator) or host memory. Everything that tensor
// asks of gpukit/device goes through it (see device.go), so a new backend
// or a fake for tests is one small type.
type memory interface {
	// name is the PyTorch-style device string: "sim:0", "meta:0", "cpu".
	name() string
	// alloc returns a handle to n bytes, their address and, when the bytes
	// are host-visible, the bytes themselves (nil on meta devices).
	alloc(n int64) (h any, addr uint64, data []byte, err error)
	// free returns the memory of h. It may be called from the collector's
	// cleanup goroutine.
	free(h any)
	// hasBytes is false on devices whose memory the host cannot read
	// (meta): tensors there have shapes and accounting but no values.
	hasBytes() bool
	// launch charges the modelled cost of a kernel (no-op on the host).
	launch(k kernelCost)
	// compute is the kernels of this memory and the stream they run on:
	// the device's Compute (CPU kernels on sim, no-ops on meta, the GPU's
	// on cuda) or, on the host, the CPU kernels over real pointers. nil
	// when the device does not compute.
	compute() (backend.Compute, alloc.Stream)
	// blasWorkspace makes sure the stream that kernels run on has its
	// cuBLAS workspace before a matrix product (device.BlasWorkspace; nil
	// on the host).
	blasWorkspace() error
}

// kernelCost is the modelled cost of one kernel, charged to the device.
type kernelCost struct {
	name  string
	flops int64
	bytes int64
	half  bool
}

// storageCore is the memory of a storage: the handle to free, once.
type storageCore struct {
	mu    sync.Mutex
	mem   memory
	h     any
	freed bool
}

func (c *storageCore) free() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.freed {
		return
	}
	c.freed = true
	c.mem.free(c.h)
	c.h = nil
}

// versionCounter counts in-place modifications of a storage. Saved tensors
// remember the version they were saved at; backward compares. It is a
// separate object so that a saved-tensor record can check it without
// keeping the Storage (and its memory) reachable.
type versionCounter struct{ v atomic.Int64 }

// Storage is one contiguous piece of memory: exactly one allocator block on
// one device, or a host buffer (optionally pinned). Tensors are views into a
// Storage; several tensors may share one.
//
// A Storage counts the tensor handles that refer to it (Refs). Each
// Tensor holds one reference, dropped by Tensor.Release or, for a tensor
// that is dropped without Release, by that tensor's collector fallback
// (see Tensor and CollectGarbage). The last reference returns the block
// to the allocator at once. The Storage itself has no cleanup: its count
// is exact as long as every tensor handle is released or collected.
type Storage struct {
	core    storageCore // in the Storage: one allocation fewer a tensor
	nbytes  int64
	addr    uint64
	data    []byte
	version *versionCounter

	mu   sync.Mutex
	refs int
}

// newStorage allocates nbytes of mem and reports the storage to the
// observer (see memorySeam).
func newStorage(mem memory, nbytes int64) (*Storage, error) {
	b := lockMemory()
	defer unlockMemory(b)
	h, addr, data, err := mem.alloc(nbytes)
	if err != nil {
		return nil, err
	}
	st := &Storage{core: storageCore{mem: mem, h: h}, nbytes: nbytes, addr: addr, data: data, version: new(versionCounter)}
	if b != nil {
		b.o.Allocated(st)
	}
	return st, nil
}

// retain adds a reference (a new tensor on this storage). Reviving a
// storage whose memory is already gone would hand out freed memory, so it
// is an internal error.
func (s *Storage) retain() {
	s.mu.Lock()
	if s.refs == 0 && s.core.isFreed() {
		s.mu.Unlock()
		panic("tensor: internal error: new reference to a freed storage")
	}
	s.refs++
	s.mu.Unlock()
}

// drop removes a reference and frees the memory with the last one.
func (s *Storage) drop() {
	s.mu.Lock()
	s.refs--
	n := s.refs
	s.mu.Unlock()
	if n < 0 {
		panic("tensor: internal error: storage reference count below zero")
	}
	if n == 0 {
		freeObserved(s)
	}
}

// Nbytes is the size of the storage in bytes (what was requested from the
// allocator; the block may be rounded up).
func (s *Storage) Nbytes() int64 { return s.nbytes }

// DataPtr is the address of the first byte of the storage (the block's
// address on a device).
func (s *Storage) DataPtr() uint64 { return s.addr }

// Refs is the number of tensor handles (including views and tensors saved
// for backward) that hold a reference to this storage: live ones, and
// dropped ones whose collector fallback has not run yet.
func (s *Storage) Refs() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refs
}

// Freed reports whether the storage's memory has been returned.
func (s *Storage) Freed() bool { return s.core.isFreed() }

func (c *storageCore) isFreed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.freed
}

// Version is the storage's version counter: the number of in-place
// modifications so far.
func (s *Storage) Version() int64 { return s.version.v.Load() }

// Bytes returns the storage's bytes: the real backing memory on a sim
// device or the host, nil on a meta device. Writing to them bypasses
// autograd's version counter.
func (s *Storage) Bytes() []byte { return s.data }
