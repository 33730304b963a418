package sim

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"
)

// Host memory of sim reservations: anonymous private mappings reserved with
// MAP_NORESERVE, so that only touched pages take memory. A released
// reservation's mapping is kept, its memory discarded, and reused by the
// next reservation of the same size: a stale slice of a freed block then
// reads zeros instead of faulting, and the process's address space does not
// fill up with ranges that EmptyCache released.

var hostPool = struct {
	sync.Mutex
	free map[int64][][]byte
}{free: map[int64][][]byte{}}

func hostReserve(size int64) ([]byte, error) {
	hostPool.Lock()
	if l := hostPool.free[size]; len(l) > 0 {
		b := l[len(l)-1]
		hostPool.free[size] = l[:len(l)-1]
		hostPool.Unlock()
		return b, nil
	}
	hostPool.Unlock()
	if int64(int(size)) != size {
		return nil, fmt.Errorf("%d bytes do not fit the host's address space", size)
	}
	b, err := syscall.Mmap(-1, 0, int(size), syscall.PROT_READ|syscall.PROT_WRITE,
		syscall.MAP_PRIVATE|syscall.MAP_ANON|syscall.MAP_NORESERVE)
	if err != nil {
		return nil, fmt.Errorf("mmap: %w", err)
	}
	return b, nil
}

// hostDiscard gives the memory of b back to the host; b reads as zeros
// afterwards.
func hostDiscard(b []byte) {
	if len(b) > 0 {
		_ = syscall.Madvise(b, syscall.MADV_DONTNEED) // best effort: only memory use depends on it
	}
}

func hostRelease(b []byte) {
	if b == nil {
		return
	}
	hostDiscard(b)
	hostPool.Lock()
	defer hostPool.Unlock()
	hostPool.free[int64(len(b))] = append(hostPool.free[int64(len(b))], b)
}

// Segments of hostSegmentFrom bytes and more live outside the Go heap, in
// mappings of their own (hostReserve's, padded to start on a 2 MiB
// boundary), for two reasons, both about the first touch of fresh memory:
//
//   - The mapping is advised to use transparent huge pages (MADV_HUGEPAGE;
//     this host's setting is usually "madvise", where only advised ranges
//     get them), so that the first kernel that writes a new segment takes
//     one page fault per 2 MiB instead of one per 4 KiB, 512 times fewer;
//     on a virtual machine each costs from one to tens of microseconds.
//   - The Go heap stays the size of the program, not of the simulated
//     card's memory: in the heap, gigabytes of segments set the garbage
//     collector's goal that far up, so that the kernels' own scratch
//     arrays (LayerNorm's backward allocates two of 2 MiB per call) were
//     fresh memory from the OS, page faults included, call after call,
//     until the heap had grown by as much again.
//
// Only where the bytes live changes: a segment reads zeros when new, as
// make's did, and the device's accounting is the same. A freed segment's
// mapping goes back to the pool (hostRelease: its memory discarded, a
// stale slice reads zeros), and so does that of a segment still live when
// its Backend is collected (runtime.AddCleanup).
const hostSegmentFrom = 4 << 20

const hugePage = 2 << 20

// hostSegment is the mapping behind one segment; release gives it back
// once, by Free or by the cleanup.
type hostSegment struct {
	whole []byte
	freed *atomic.Bool
}

type hostSegmentState struct {
	whole []byte
	freed *atomic.Bool
}

func (h *hostSegment) release() { releaseHostSegment(hostSegmentState{h.whole, h.freed}) }

func releaseHostSegment(s hostSegmentState) {
	if s.freed.CompareAndSwap(false, true) {
		hostRelease(s.whole)
	}
}

// segmentMemory returns size bytes of zeros for a new segment and, for one
// outside the Go heap, its mapping (nil otherwise).
func segmentMemory(size int64) ([]byte, *hostSegment) {
	if size < hostSegmentFrom {
		return make([]byte, size), nil
	}
	whole, err := hostReserve(size + hugePage)
	if err != nil {
		return make([]byte, size), nil // no mapping: the Go heap, as before
	}
	p := uintptr(unsafe.Pointer(unsafe.SliceData(whole)))
	off := int64((p+hugePage-1)&^(hugePage-1) - p)
	data := whole[off : off+size : off+size]
	_, _, _ = syscall.Syscall(syscall.SYS_MADVISE, p+uintptr(off), uintptr(size)&^(hugePage-1), syscall.MADV_HUGEPAGE)
	h := &hostSegment{whole: whole, freed: new(atomic.Bool)}
	runtime.AddCleanup(h, releaseHostSegment, hostSegmentState{whole, h.freed})
	return data, h
}
