package sim

import (
	"fmt"
	"sync"
	"syscall"
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
