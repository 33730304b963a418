package batchsearch

import (
	"errors"

	"github.com/gpumem/course/gpukit/device"
)

// LargestBatch returns the largest batch size in [1, maxBatch] for which
// step(batch) runs on dev without running out of memory.
//
//   - step panics with *alloc.OutOfMemoryError when a batch does not fit
//     (tensor.Try turns that into an error); after a failed try, call
//     cleanUp, and make sure everything the try allocated is freed
//     before the next one (tensor.CollectGarbage returns what the op
//     that failed had allocated).
//   - Do not try every batch: grow and then bisect.
//   - Leave the allocator's cache as you found it: if the cache held no
//     free segment when you started, it must hold none when you return.
//
// It returns an error if even batch 1 does not fit, or if maxBatch < 1.
func LargestBatch(dev *device.Device, maxBatch int, step func(batch int), cleanUp func()) (int, error) {
	return 0, errors.New("not implemented yet")
}
