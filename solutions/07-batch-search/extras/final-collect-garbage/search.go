// Extra: one final tensor.CollectGarbage() before returning, as the README recommends.

package batchsearch

import (
	"errors"
	"fmt"

	"github.com/gpumem/course/gpukit/device"
	"github.com/gpumem/course/gpukit/tensor"
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
	if maxBatch < 1 {
		return 0, fmt.Errorf("maxBatch must be at least 1, got %d", maxBatch)
	}
	tensor.CollectGarbage()
	base := dev.MemoryAllocated()
	emptyCache := true
	for _, seg := range dev.Snapshot().Segments {
		if seg.AllocatedSize == 0 {
			emptyCache = false // EmptyCache would drop segments cached before us
		}
	}
	fits := func(batch int) (bool, error) {
		err := tensor.Try(func() { step(batch) })
		if err != nil {
			cleanUp()
			tensor.CollectGarbage()
			if emptyCache {
				dev.EmptyCache()
			}
		}
		if left := dev.MemoryAllocated() - base; left != 0 {
			return false, fmt.Errorf("batch %d left %d bytes allocated", batch, left)
		}
		return err == nil, nil
	}
	lo, hi := 0, maxBatch+1 // lo fits (0: nothing yet), hi does not
	for b := 1; ; b = min(2*b, maxBatch) {
		ok, err := fits(b)
		if err != nil {
			return 0, err
		}
		if !ok {
			hi = b
			break
		}
		lo = b
		if b == maxBatch {
			break
		}
	}
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		ok, err := fits(mid)
		if err != nil {
			return 0, err
		}
		if ok {
			lo = mid
		} else {
			hi = mid
		}
	}
	if emptyCache {
		dev.EmptyCache()
	}
	tensor.CollectGarbage()
	if lo == 0 {
		return 0, errors.New("even batch 1 does not fit")
	}
	return lo, nil
}
