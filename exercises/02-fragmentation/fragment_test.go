package fragment

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/gpumem/course/gpukit/alloc"
	"github.com/gpumem/course/gpukit/device"
	"github.com/gpumem/course/gpukit/device/simtest"
)

const MiB = 1 << 20

func TestFragmentSmallRequest(t *testing.T) {
	dev := simtest.Card(t, simtest.Capacity(256*MiB))
	kept, err := Fragment(dev, 4*MiB)
	if err != nil {
		t.Fatal(err)
	}
	_, capacity := dev.MemInfo()
	if free := capacity - dev.MemoryAllocated(); free < capacity/4 {
		t.Errorf("only %d of %d bytes are not allocated, want at least a quarter", free, capacity)
	}
	_, err = dev.Malloc(4*MiB, dev.DefaultStream())
	var oom *alloc.OutOfMemoryError
	if !errors.As(err, &oom) {
		t.Fatalf("asking for 4 MiB after Fragment: got %v, want an out-of-memory error", err)
	}
	for _, b := range kept {
		dev.Free(b)
	}
	if _, err := dev.Malloc(4*MiB, dev.DefaultStream()); err != nil {
		t.Errorf("after freeing the kept blocks, 4 MiB must fit: %v", err)
	}
}

func TestLargestFreeBlock(t *testing.T) {
	dev := simtest.Card(t, simtest.Capacity(256*MiB))
	var blocks []*alloc.Block
	for _, n := range []int64{4 * MiB, 6 * MiB, 2 * MiB} { // one 20 MiB segment, 8 MiB left at its end
		b, err := dev.Malloc(n, dev.DefaultStream())
		if err != nil {
			t.Fatal(err)
		}
		blocks = append(blocks, b)
	}
	dev.Free(blocks[1])
	if got := LargestFreeBlock(dev.Snapshot(), "large"); got != 8*MiB {
		t.Errorf("LargestFreeBlock = %d, want %d: the free 6 MiB block and the 8 MiB rest of the segment", got, 8*MiB)
	}
}

// newMetaDevice opens a private classroom card of the given capacity in
// meta mode: the allocator's accounting without backing bytes, all these
// tests read, so that filling it costs no host memory.
func newMetaDevice(t *testing.T, capacity int64) *device.Device {
	t.Helper()
	return simtest.Card(t, simtest.Meta(), simtest.Capacity(capacity))
}

// fragmentAndCheck runs Fragment on a fresh device and checks, through the
// allocator, every condition of the README: the kept blocks are all that
// is allocated, a quarter of the device and the request are not
// allocated, the large pool caches at least the request in free blocks,
// the request fails with an out-of-memory error, and fits once the kept
// blocks are freed.
func fragmentAndCheck(t *testing.T, capacity, request int64) {
	t.Helper()
	dev := newMetaDevice(t, capacity)
	at := func() string { return fmt.Sprintf("a %d MiB device, a request of %d bytes", capacity/MiB, request) }
	kept, err := Fragment(dev, request)
	if err != nil {
		t.Errorf("%s: Fragment: %v", at(), err)
		return
	}
	var keptBytes int64
	for _, b := range kept {
		if b == nil || b.Freed() {
			t.Errorf("%s: Fragment returned a freed or nil block", at())
			return
		}
		keptBytes += b.Size()
	}
	if got := dev.MemoryAllocated(); got != keptBytes {
		t.Errorf("%s: %d bytes allocated but the kept blocks hold %d: free what you do not return", at(), got, keptBytes)
	}
	if free := capacity - dev.MemoryAllocated(); free < capacity/4 || free < request {
		t.Errorf("%s: only %d bytes are not allocated, want at least a quarter of the device and the request", at(), free)
	}
	stats := dev.Stats()
	if cached := stats["reserved_bytes.large_pool.current"] - stats["allocated_bytes.large_pool.current"]; cached < request {
		t.Errorf("%s: the large pool caches only %d free bytes, want at least the request: fragment the pool that serves it", at(), cached)
	}
	if _, err := dev.Malloc(request, dev.DefaultStream()); err == nil {
		t.Errorf("%s: the request after Fragment was served, want an out-of-memory error", at())
		return
	} else if !errors.As(err, new(*alloc.OutOfMemoryError)) {
		t.Errorf("%s: the request after Fragment: %v, want an out-of-memory error", at(), err)
		return
	}
	for _, b := range kept {
		dev.Free(b)
	}
	if _, err := dev.Malloc(request, dev.DefaultStream()); err != nil {
		t.Errorf("%s: after freeing the kept blocks the request must fit: %v", at(), err)
	}
}

// The public twin of the grader's TestFragmentRequests, on other requests
// and another device: from 2 MiB to a quarter of the device, below and
// above a segment, 10 to 16 MiB (a segment of their own), and whole
// multiples of the smallest large-pool block (1 MiB + 512 B).
func TestFragmentOtherRequests(t *testing.T) {
	for _, c := range []struct{ capacity, request int64 }{
		{256 * MiB, 3*MiB + 512},
		{256 * MiB, 9 * MiB},
		{256 * MiB, 11 * MiB},
		{256 * MiB, 15*MiB + 5},
		{256 * MiB, 25 * MiB},
		{256 * MiB, 50 * MiB},
		{128 * MiB, 2 * MiB},
		{128 * MiB, 14 * MiB},
		{128 * MiB, 21 * MiB},
		{256 * MiB, 3 * (MiB + 512)},
		{128 * MiB, 4 * (MiB + 512)},
	} {
		fragmentAndCheck(t, c.capacity, c.request)
	}
}

// The public twin of the grader's TestFragmentRejects, on another device:
// requests out of range, and a device with memory allocated, are refused
// before anything is allocated; the largest valid request is not.
func TestFragmentRefuses(t *testing.T) {
	for _, request := range []int64{-MiB, 1, 2*MiB - 512, 32*MiB + 512} {
		dev := newMetaDevice(t, 128*MiB)
		if _, err := Fragment(dev, request); err == nil {
			t.Errorf("a request of %d bytes on a 128 MiB device: no error, want one (from 2 MiB to a quarter of the device)", request)
		}
		if n := dev.Stats()["allocation.all.allocated"]; n != 0 {
			t.Errorf("a request of %d bytes: %d allocations made before refusing, want 0", request, n)
		}
	}
	dev := newMetaDevice(t, 128*MiB)
	if _, err := dev.Malloc(300_000, dev.DefaultStream()); err != nil {
		t.Fatal(err)
	}
	if _, err := Fragment(dev, 6*MiB); err == nil {
		t.Error("a device with memory allocated: no error, want one")
	}
	if n := dev.Stats()["allocation.all.allocated"]; n != 1 {
		t.Errorf("%d allocations on the used device, want 1 (the test's own): refuse before allocating", n)
	}
	fragmentAndCheck(t, 128*MiB, 32*MiB) // the largest valid request
}

// The public twin of the grader's TestLargestFreeBlockMeasured, with
// another seed, fewer patterns and another block in use: random large
// blocks, some freed, beside a 40 MiB block in use; a request of the
// answer is served from the cache, 512 B more needs a new segment. The
// small pool is apart, and an empty snapshot has no free block.
func TestLargestFreeBlockServed(t *testing.T) {
	if got := LargestFreeBlock(alloc.Snapshot{}, "small"); got != 0 {
		t.Errorf("an empty snapshot: LargestFreeBlock = %d, want 0", got)
	}
	r := rand.New(rand.NewPCG(41, 3))
	for pattern := range 5 {
		dev := newMetaDevice(t, 512*MiB)
		var blocks []*alloc.Block
		for range 4 + r.IntN(20) {
			b, err := dev.Malloc(MiB+1+r.Int64N(8*MiB), dev.DefaultStream())
			if err != nil {
				t.Fatal(err)
			}
			blocks = append(blocks, b)
		}
		if _, err := dev.Malloc(3000, dev.DefaultStream()); err != nil { // a 2 MiB small-pool segment, all but 3072 B free
			t.Fatal(err)
		}
		if _, err := dev.Malloc(40*MiB, dev.DefaultStream()); err != nil { // in use: not a free block
			t.Fatal(err)
		}
		for _, b := range blocks {
			if r.IntN(2) == 0 {
				dev.Free(b)
			}
		}
		snap := dev.Snapshot()
		if got, want := LargestFreeBlock(snap, "small"), int64(2*MiB-3072); got != want {
			t.Errorf("pattern %d: the small pool's largest free block %d, want %d", pattern, got, want)
		}
		largest := LargestFreeBlock(snap, "large")
		if largest <= MiB {
			t.Errorf("pattern %d: the large pool's largest free block %d, want more than 1 MiB (every segment has a free rest)", pattern, largest)
			continue
		}
		segments := dev.Stats()["num_device_alloc"]
		if _, err := dev.Malloc(largest, dev.DefaultStream()); err != nil {
			t.Fatal(err)
		}
		if n := dev.Stats()["num_device_alloc"] - segments; n != 0 {
			t.Errorf("pattern %d: a request of LargestFreeBlock = %d bytes needed a new segment: there is no free block that large", pattern, largest)
		}
		segments = dev.Stats()["num_device_alloc"]
		if _, err := dev.Malloc(largest+512, dev.DefaultStream()); err != nil {
			t.Fatal(err)
		}
		if n := dev.Stats()["num_device_alloc"] - segments; n != 1 {
			t.Errorf("pattern %d: a request of LargestFreeBlock + 512 bytes was served from the cache: a larger free block exists", pattern)
		}
	}
}
