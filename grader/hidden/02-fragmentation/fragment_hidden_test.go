package fragment

import (
	"math/rand/v2"
	"testing"

	"github.com/gpumem/course/gpukit/alloc"
	"github.com/gpumem/course/gpukit/tensor/tensortest"
)

func TestFragmentSmallRequest(t *testing.T) {
	tensortest.NoCollector(t)
	checkFragmented(t, 256*MiB, 4*MiB)
}

// Requests from 2 MiB to a quarter of the device,
// below and above a segment's size, on two capacities.
func TestFragmentRequests(t *testing.T) {
	tensortest.NoCollector(t)
	for _, c := range []struct{ capacity, request int64 }{
		{256 * MiB, 2 * MiB},
		{256 * MiB, 2*MiB + 1},
		{256 * MiB, 7*MiB + 3},
		{256 * MiB, 19 * MiB},
		{256 * MiB, 30 * MiB},
		{256 * MiB, 64 * MiB},
		{96 * MiB, 3 * MiB},
		{96 * MiB, 24 * MiB},
		// Multiples of the smallest large-pool block (1 MiB + 512 B): a
		// run of freed neighbours can be exactly the request.
		{256 * MiB, 2 * (MiB + 512)},
		{96 * MiB, 5 * (MiB + 512)},
		// 10 MiB and more get a segment of their own: the device memory
		// that filling 20 MiB segments leaves (16 MiB on both cards) must
		// not hold one.
		{256 * MiB, 10 * MiB},
		{256 * MiB, 13*MiB + 7},
		{256 * MiB, 16 * MiB},
		{96 * MiB, 10 * MiB},
		{96 * MiB, 12 * MiB},
		{96 * MiB, 16 * MiB},
		// Cards whose 20 MiB segments leave exactly 10 MiB, and 8 MiB.
		{90 * MiB, 10 * MiB},
		{88 * MiB, 4 * MiB},
	} {
		checkFragmented(t, c.capacity, c.request)
	}
}

// Requests outside the range, or a device already in use, are refused
// without allocating.
func TestFragmentRejects(t *testing.T) {
	tensortest.NoCollector(t)
	for _, request := range []int64{0, -5, MiB, 2*MiB - 1, 65*MiB + 1} {
		dev := newDevice(t, 256*MiB)
		if _, err := Fragment(dev, request); err == nil {
			t.Errorf("request %d on a 256 MiB device: got no error", request)
		}
		if n := dev.Stats()["allocation.all.allocated"]; n != 0 {
			t.Errorf("request %d: %d allocations made before refusing, want 0", request, n)
		}
	}
	dev := newDevice(t, 256*MiB)
	if _, err := dev.Malloc(5*MiB, dev.DefaultStream()); err != nil {
		t.Fatal(err)
	}
	if _, err := Fragment(dev, 4*MiB); err == nil {
		t.Error("a device with memory allocated: got no error")
	}
	if n := dev.Stats()["allocation.all.allocated"]; n != 1 {
		t.Errorf("%d allocations on the used device, want 1: refuse before allocating", n)
	}
	checkFragmented(t, 256*MiB, 64*MiB) // the largest valid request
}

func TestLargestFreeBlock(t *testing.T) {
	tensortest.NoCollector(t)
	dev := newDevice(t, 256*MiB)
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

// Random patterns of large blocks, some freed (they merge with free
// neighbours), beside a 30 MiB block in use, larger than any of them: the
// largest free block is exactly what the allocator can serve without a
// new segment, and 512 B more needs one. The small pool is apart, and an
// empty snapshot has nothing.
func TestLargestFreeBlockMeasured(t *testing.T) {
	tensortest.NoCollector(t)
	if got := LargestFreeBlock(alloc.Snapshot{}, "large"); got != 0 {
		t.Errorf("empty snapshot: %d, want 0", got)
	}
	r := rand.New(rand.NewPCG(5, 5))
	for pattern := range 12 {
		dev := newDevice(t, 512*MiB)
		var blocks []*alloc.Block
		for range 4 + r.IntN(20) {
			b, err := dev.Malloc(MiB+1+r.Int64N(8*MiB), dev.DefaultStream())
			if err != nil {
				t.Fatal(err)
			}
			blocks = append(blocks, b)
		}
		small, err := dev.Malloc(1000, dev.DefaultStream()) // a small-pool segment: 2 MiB, all but 1024 B free
		if err != nil {
			t.Fatal(err)
		}
		if _, err := dev.Malloc(30*MiB, dev.DefaultStream()); err != nil { // in use: not a free block
			t.Fatal(err)
		}
		for _, b := range blocks {
			if r.IntN(2) == 0 {
				dev.Free(b)
			}
		}
		snap := dev.Snapshot()
		if got, want := LargestFreeBlock(snap, "small"), int64(2*MiB-1024); got != want {
			t.Errorf("pattern %d: small pool %d, want %d", pattern, got, want)
		}
		largest := LargestFreeBlock(snap, "large")
		if largest <= MiB {
			t.Errorf("pattern %d: largest free large-pool block %d, want more than 1 MiB (every segment has a free rest)", pattern, largest)
			continue
		}
		segments := dev.Stats()["num_device_alloc"]
		if _, err := dev.Malloc(largest, dev.DefaultStream()); err != nil {
			t.Fatal(err)
		}
		if n := dev.Stats()["num_device_alloc"] - segments; n != 0 {
			t.Errorf("pattern %d: a request of LargestFreeBlock = %d B needed a new segment: there is no such free block", pattern, largest)
		}
		segments = dev.Stats()["num_device_alloc"]
		if _, err := dev.Malloc(largest+512, dev.DefaultStream()); err != nil {
			t.Fatal(err)
		}
		if n := dev.Stats()["num_device_alloc"] - segments; n != 1 {
			t.Errorf("pattern %d: a request of LargestFreeBlock+512 B was served from the cache: a larger free block exists", pattern)
		}
		dev.Free(small)
	}
}
