// Package fragment makes the caching allocator fail although most of the
// device is free, and reads from a snapshot how large a request the cache
// can still serve.
package fragment

import (
	"errors"

	"github.com/gpumem/course/gpukit/alloc"
	"github.com/gpumem/course/gpukit/device"
)

// Fragment allocates on dev, a fresh device, a pattern of live blocks after
// which a request of request bytes fails with *alloc.OutOfMemoryError
// although at least a quarter of the device, and at least request bytes,
// are not allocated and the large pool, which serves the request, caches
// at least request bytes in free blocks. It returns the blocks it keeps:
// freeing them makes the request possible again. request must be at least
// 2 MiB and at most a quarter of the device's capacity; otherwise, or when dev already has
// memory allocated, it returns an error and allocates nothing.
//
// TODO: write it. Lesson 02's fragmentation cell is a start, but it only
// works for requests larger than a segment's free rest.
func Fragment(dev *device.Device, request int64) ([]*alloc.Block, error) {
	return nil, errors.New("fragment: Fragment is not implemented yet")
}

// LargestFreeBlock is the size of the largest cached (inactive) block of
// the pool ("small" or "large") in the snapshot: the largest block that pool
// can hand out without asking the device for a segment. 0 when there is none.
//
// TODO: write it.
func LargestFreeBlock(s alloc.Snapshot, pool string) int64 {
	return 0
}
