// Package fragment makes the caching allocator fail although most of the
// device is free, and reads from a snapshot how large a request the cache
// can still serve.
package fragment

import (
	"errors"
	"fmt"

	"github.com/gpumem/course/gpukit/alloc"
	"github.com/gpumem/course/gpukit/device"
)

// piece is the size of the blocks the pattern is made of: the smallest
// large-pool block, so that the pieces share 20 MiB segments.
const piece = 1<<20 + 512

// Fragment allocates on dev, a fresh device, a pattern of live blocks after
// which a request of request bytes fails with *alloc.OutOfMemoryError
// although at least a quarter of the device, and at least request bytes,
// are not allocated and the large pool, which serves the request, caches
// at least request bytes in free blocks. It returns the blocks it keeps:
// freeing them makes the request possible again. request must be at least
// 2 MiB and at most a quarter of the device's capacity; otherwise, or when dev already has
// memory allocated, it returns an error and allocates nothing.
func Fragment(dev *device.Device, request int64) ([]*alloc.Block, error) {
	_, capacity := dev.MemInfo()
	if request < 2<<20 || request > capacity/4 {
		return nil, fmt.Errorf("fragment: request %d B; want at least 2 MiB and at most a quarter of the device (%d B)", request, capacity/4)
	}
	if dev.MemoryAllocated() != 0 {
		return nil, errors.New("fragment: Fragment needs a fresh device, with nothing allocated")
	}
	rounded := dev.AllocConfig().RoundSize(request)

	// Fill the device with pieces, segment after segment, until it is full.
	var all []*alloc.Block
	for {
		b, err := dev.Malloc(piece, dev.DefaultStream())
		var oom *alloc.OutOfMemoryError
		if errors.As(err, &oom) {
			break
		}
		if err != nil {
			return nil, err
		}
		all = append(all, b)
	}

	// The device memory no 20 MiB segment fits in (16 MiB on a 256 MiB
	// card) could still hold a segment of its own for a request of 10 MiB
	// or more: one block of its size, rounded down to the 2 MiB that such
	// segments are rounded to, takes it. What is left is under 2 MiB, and
	// no request of 2 MiB or more fits there.
	if rest := (capacity - dev.MemoryReserved()) / (2 << 20) * (2 << 20); rest >= 10<<20 {
		b, err := dev.Malloc(rest, dev.DefaultStream())
		if err != nil {
			for _, b := range all {
				dev.Free(b)
			}
			return nil, err
		}
		all = append(all, b)
	}

	// In each segment keep the first piece, so that no segment is entirely
	// free (the allocator would give it back and retry), and then just
	// enough pieces that no run of freed neighbours, which merge, reaches
	// the request.
	var kept []*alloc.Block
	var segment uint64
	var run int64
	for i, b := range all {
		switch {
		case i == 0 || b.Segment() != segment:
			segment, run = b.Segment(), 0
			kept = append(kept, b)
		case run+b.Size() >= rounded:
			run = 0
			kept = append(kept, b)
		default:
			run += b.Size()
			dev.Free(b)
		}
	}
	return kept, nil
}

// LargestFreeBlock is the size of the largest cached (inactive) block of
// the pool ("small" or "large") in the snapshot: the largest block that pool
// can hand out without asking the device for a segment. 0 when there is none.
func LargestFreeBlock(s alloc.Snapshot, pool string) int64 {
	var largest int64
	for _, seg := range s.Segments {
		if seg.SegmentType != pool {
			continue
		}
		for _, b := range seg.Blocks {
			if b.State == alloc.StateInactive && b.Size > largest {
				largest = b.Size
			}
		}
	}
	return largest
}
