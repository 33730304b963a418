package computetest

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"unsafe"

	"github.com/gpumem/course/gpukit/alloc"
)

// Heap is a Memory of Go buffers, for running the suite on a Compute
// without device memory of its own. Its addresses are either made up
// (NewHeap), resolved by Bytes, which makes the Heap the
// cpucompute.Memory of a cpucompute.New; or the buffers' real addresses
// (NewPointerHeap), for a Compute that dereferences them, such as
// device.HostCompute. Either way the Heap keeps each buffer alive until
// it is freed.
type Heap struct {
	mu       sync.Mutex
	pointers bool   // addresses are the buffers' own
	next     uint64 // the next made-up address
	addrs    []uint64
	bufs     map[uint64][]byte
}

// NewHeap returns a Heap of made-up addresses, from 0x10000 up, each
// allocation 512-byte aligned.
func NewHeap() *Heap { return &Heap{next: 0x10000, bufs: map[uint64][]byte{}} }

// NewPointerHeap returns a Heap whose addresses are real pointers to its
// buffers (8-byte aligned).
func NewPointerHeap() *Heap { return &Heap{pointers: true, bufs: map[uint64][]byte{}} }

// Malloc allocates size zeroed bytes.
func (h *Heap) Malloc(size int64) (uint64, error) {
	words := make([]uint64, max((size+7)/8, 1)) // 8-byte aligned
	b := unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), len(words)*8)[:size:size]
	h.mu.Lock()
	defer h.mu.Unlock()
	a := h.next
	if h.pointers {
		a = uint64(uintptr(unsafe.Pointer(&words[0])))
	} else {
		h.next += uint64(size+511) &^ 511
	}
	h.bufs[a] = b
	i, _ := slices.BinarySearch(h.addrs, a)
	h.addrs = slices.Insert(h.addrs, i, a)
	return a, nil
}

// Free releases the allocation at addr.
func (h *Heap) Free(addr uint64) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	i, ok := slices.BinarySearch(h.addrs, addr)
	if !ok {
		return fmt.Errorf("free of %#x", addr)
	}
	h.addrs = slices.Delete(h.addrs, i, i+1)
	delete(h.bufs, addr)
	return nil
}

// Bytes returns the n bytes at addr, or nil when they are not inside one
// live allocation.
func (h *Heap) Bytes(addr uint64, n int64) []byte {
	h.mu.Lock()
	defer h.mu.Unlock()
	i, ok := slices.BinarySearch(h.addrs, addr)
	if !ok {
		i-- // the allocation before addr
	}
	if i < 0 {
		return nil
	}
	b := h.bufs[h.addrs[i]]
	off := addr - h.addrs[i]
	if off+uint64(n) > uint64(len(b)) {
		return nil
	}
	return b[off : off+uint64(n) : off+uint64(n)]
}

// CopyHtoD copies src to dst at once (the stream orders nothing).
func (h *Heap) CopyHtoD(dst uint64, src []byte, _ bool, _ alloc.Stream, _ bool) error {
	b := h.Bytes(dst, int64(len(src)))
	if b == nil {
		return errors.New("CopyHtoD outside memory")
	}
	copy(b, src)
	return nil
}

// CopyDtoH copies len(dst) bytes from src at once.
func (h *Heap) CopyDtoH(dst []byte, src uint64, _ bool, _ alloc.Stream, _ bool) error {
	b := h.Bytes(src, int64(len(dst)))
	if b == nil {
		return errors.New("CopyDtoH outside memory")
	}
	copy(dst, b)
	return nil
}
