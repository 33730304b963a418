package tensor

import (
	"runtime"
	"sync"
	"sync/atomic"
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
}

// kernelCost is the modelled cost of one kernel, charged to the device.
type kernelCost struct {
	name  string
	flops int64
	bytes int64
	half  bool
}

// storageCore is what the collector fallback frees. It must never point
// back to the Storage or to a Tensor, or the cleanup would keep them
// reachable forever.
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
// A Storage counts the live tensors that refer to it. Tensor.Release drops
// one reference; the last one returns the block to the allocator at once.
// Tensors that are dropped without Release are found by the garbage
// collector: a cleanup attached to the Storage returns the block after the
// Storage becomes unreachable (see runtime.AddCleanup).
type Storage struct {
	core    *storageCore
	nbytes  int64
	addr    uint64
	data    []byte
	version *versionCounter

	mu      sync.Mutex
	refs    int
	cleanup runtime.Cleanup
}

func newStorage(mem memory, nbytes int64) (*Storage, error) {
	h, addr, data, err := mem.alloc(nbytes)
	if err != nil {
		return nil, err
	}
	core := &storageCore{mem: mem, h: h}
	s := &Storage{core: core, nbytes: nbytes, addr: addr, data: data, version: new(versionCounter)}
	s.cleanup = runtime.AddCleanup(s, func(c *storageCore) { c.free() }, core)
	return s, nil
}

// retain adds a reference (a new tensor on this storage).
func (s *Storage) retain() {
	s.mu.Lock()
	s.refs++
	s.mu.Unlock()
}

// drop removes a reference and frees the memory with the last one.
func (s *Storage) drop() {
	s.mu.Lock()
	s.refs--
	last := s.refs == 0
	s.mu.Unlock()
	if last {
		s.cleanup.Stop()
		s.core.free()
	}
}

// Nbytes is the size of the storage in bytes (what was requested from the
// allocator; the block may be rounded up).
func (s *Storage) Nbytes() int64 { return s.nbytes }

// DataPtr is the address of the first byte of the storage (the block's
// address on a device).
func (s *Storage) DataPtr() uint64 { return s.addr }

// Refs is the number of live tensors (including views and tensors saved
// for backward) that share this storage.
func (s *Storage) Refs() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refs
}

// Freed reports whether the storage's memory has been returned.
func (s *Storage) Freed() bool {
	s.core.mu.Lock()
	defer s.core.mu.Unlock()
	return s.core.freed
}

// Version is the storage's version counter: the number of in-place
// modifications so far.
func (s *Storage) Version() int64 { return s.version.v.Load() }

// Bytes returns the storage's bytes: the real backing memory on a sim
// device or the host, nil on a meta device. Writing to them bypasses
// autograd's version counter.
func (s *Storage) Bytes() []byte { return s.data }
