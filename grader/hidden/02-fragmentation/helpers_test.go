package fragment

import (
	"errors"
	"testing"

	"github.com/gpumem/course/gpukit/alloc"
	"github.com/gpumem/course/gpukit/device"
	"github.com/gpumem/course/gpukit/device/simtest"
)

const MiB = 1 << 20

// newDevice opens a private classroom card of the given capacity (smaller
// than the real 2 GiB, so that filling it is quick), in meta mode: the
// allocator's accounting without backing bytes, which is all these tests
// read, so that filling it costs no host memory.
func newDevice(t *testing.T, capacity int64) *device.Device {
	t.Helper()
	return simtest.Card(t, simtest.Meta(), simtest.Capacity(capacity))
}

// checkFragmented runs Fragment on a fresh device and checks, through the
// allocator, that the request fails for fragmentation only: the kept blocks
// are all that is allocated, a quarter of the device and the request are
// free, the large pool caches at least the request in free blocks, the request fails with an out-of-memory error, and succeeds once the
// kept blocks are freed.
func checkFragmented(t *testing.T, capacity, request int64) {
	t.Helper()
	dev := newDevice(t, capacity)
	kept, err := Fragment(dev, request)
	if err != nil {
		t.Errorf("capacity %d, request %d: %v", capacity, request, err)
		return
	}
	var keptBytes int64
	for _, b := range kept {
		if b == nil || b.Freed() {
			t.Errorf("capacity %d, request %d: Fragment returned a freed or nil block", capacity, request)
			return
		}
		keptBytes += b.Size()
	}
	if got := dev.MemoryAllocated(); got != keptBytes {
		t.Errorf("capacity %d, request %d: %d bytes allocated but the kept blocks hold %d: free what you do not return", capacity, request, got, keptBytes)
	}
	free := capacity - dev.MemoryAllocated()
	if free < capacity/4 || free < request {
		t.Errorf("capacity %d, request %d: only %d bytes are not allocated, want at least a quarter of the device and the request", capacity, request, free)
	}
	stats := dev.Stats()
	if cached := stats["reserved_bytes.large_pool.current"] - stats["allocated_bytes.large_pool.current"]; cached < request {
		t.Errorf("capacity %d, request %d: the large pool caches only %d free bytes, want at least the request: fragment the pool that serves it", capacity, request, cached)
	}
	_, err = dev.Malloc(request, dev.DefaultStream())
	var oom *alloc.OutOfMemoryError
	if !errors.As(err, &oom) {
		t.Errorf("capacity %d, request %d: got %v, want an out-of-memory error", capacity, request, err)
		return
	}
	if oom.ReservedUnallocated+oom.DeviceFree < request {
		t.Errorf("capacity %d, request %d: the error reports %d B reserved but unallocated and %d B free on the device, want together at least the request",
			capacity, request, oom.ReservedUnallocated, oom.DeviceFree)
	}
	for _, b := range kept {
		dev.Free(b)
	}
	b, err := dev.Malloc(request, dev.DefaultStream())
	if err != nil {
		t.Errorf("capacity %d, request %d: after freeing the kept blocks the request must fit: %v", capacity, request, err)
		return
	}
	dev.Free(b)
	dev.EmptyCache() // give the simulated memory back before the next case
}
