//go:build cuda

package cuda

import (
	"fmt"
	"sync"
	"testing"

	"github.com/gpumem/course/gpukit/alloc"
	"github.com/gpumem/course/gpukit/alloc/alloctest"
	"github.com/gpumem/course/gpukit/device/computetest"
)

// capped is a CUDA device seen through a smaller capacity, as the
// conformance suite asks for.
type capped struct {
	*Backend
	capacity int64

	mu    sync.Mutex
	used  int64
	sizes map[uint64]int64
}

func (c *capped) Capacity() int64 { return c.capacity }

func (c *capped) Malloc(size int64) (uint64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if size > c.capacity-c.used {
		return 0, fmt.Errorf("cuda: capped at %d bytes, %d in use: %w", c.capacity, c.used, alloc.ErrDeviceFull)
	}
	addr, err := c.Backend.Malloc(size)
	if err != nil {
		return 0, err
	}
	c.used += size
	c.sizes[addr] = size
	return addr, nil
}

func (c *capped) Free(addr uint64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.Backend.Free(addr); err != nil {
		return err
	}
	c.used -= c.sizes[addr]
	delete(c.sizes, addr)
	return nil
}

// MapPages counts mapped pages against the cap, as Malloc counts segments.
func (c *capped) MapPages(addr uint64, pageSize int64, n int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if size := pageSize * int64(n); size > c.capacity-c.used {
		return fmt.Errorf("cuda: capped at %d bytes, %d in use: %w", c.capacity, c.used, alloc.ErrDeviceFull)
	}
	if err := c.Backend.MapPages(addr, pageSize, n); err != nil {
		return err
	}
	c.used += pageSize * int64(n)
	return nil
}

func (c *capped) UnmapPages(s alloc.Stream, addr uint64, pageSize int64, n int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.Backend.UnmapPages(s, addr, pageSize, n); err != nil {
		return err
	}
	c.used -= pageSize * int64(n)
	return nil
}

func (c *capped) FreeBytes() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.capacity - c.used
}

// TestConformance runs the caching allocator's conformance suite on GPU 0.
// It needs a GPU: run it with -tags cuda on a machine that has one.
func TestConformance(t *testing.T) {
	b, err := Open(0)
	if err != nil {
		t.Skip(err)
	}
	alloctest.Run(t, func(t *testing.T, capacity int64) alloc.Memory {
		if free, _ := b.MemInfo(); free < capacity {
			t.Skipf("GPU has %d bytes free, the test needs %d", free, capacity)
		}
		return &capped{Backend: b, capacity: capacity, sizes: map[uint64]int64{}}
	})
}

// TestComputeConformance runs the Compute conformance suite on the card;
// it logs the (method, dtype) pairs cuda has no kernel for and checks
// them against Backend.Capabilities.
func TestComputeConformance(t *testing.T) {
	b, err := Open(0)
	if err != nil {
		t.Skip(err)
	}
	computetest.Run(t, b, b)
}

func TestCopiesRoundTrip(t *testing.T) {
	b, err := Open(0)
	if err != nil {
		t.Skip(err)
	}
	addr, err := b.Malloc(1 << 20)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Free(addr)
	h, err := b.HostAlloc(1<<20, true)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Free()
	for i := range h.Bytes {
		h.Bytes[i] = byte(i * 7)
	}
	s := b.NewStream()
	start := b.RecordEvent(s).(*Event)
	if err := b.CopyHtoD(addr, h.Bytes, true, s, true); err != nil {
		t.Fatal(err)
	}
	out := make([]byte, 1<<20)
	if err := b.CopyDtoH(out, addr, false, s, false); err != nil {
		t.Fatal(err)
	}
	end := b.RecordEvent(s).(*Event)
	end.Synchronize()
	for i := range out {
		if out[i] != byte(i*7) {
			t.Fatalf("byte %d: got %d", i, out[i])
		}
	}
	if el := end.ElapsedSince(start); el <= 0 {
		t.Errorf("elapsed %v", el)
	}
}
