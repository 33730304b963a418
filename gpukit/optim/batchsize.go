package optim

import (
	"errors"
	"fmt"

	"github.com/gpumem/course/gpukit/alloc"
	"github.com/gpumem/course/gpukit/device"
	"github.com/gpumem/course/gpukit/tensor"
)

// BatchTry is one try of FindBatchSize.
type BatchTry struct {
	Batch int
	Peak  int64 // the allocator's peak allocated bytes during the try
	OK    bool  // ran without running out of memory, with the peak within the budget
	Err   error // the out-of-memory error, if any
}

// BatchResult is what FindBatchSize found.
type BatchResult struct {
	Batch int   // the largest batch that passed (0 if none)
	Peak  int64 // its peak
	Tries []BatchTry
}

// FindBatchSize searches the largest batch in [1, maxBatch] for which
// step(batch) (one full training step: forward, backward, optimizer step)
// runs on dev with a peak of at most budget bytes above the memory
// allocated when the search starts (budget ≤ 0: no budget beyond the
// device's own limit). It doubles the batch until a try fails, then
// bisects between the last success and the first failure.
//
// A try is judged by the allocator's peak (MaxMemoryAllocated after
// ResetPeakStats), never by the memory allocated after the step: the
// peak happens inside backward, and what remains afterwards says nothing
// about it. step must release every tensor it makes (including on
// error); after each try, also a failed one, FindBatchSize collects what
// an out-of-memory panic left to the collector (tensor.CollectGarbage)
// and checks that allocated memory is back where it started, so a failed
// try cannot shrink the next one. When the cache held no wholly free
// segment at the start (as after EmptyCache), the cache is emptied after
// each failed try and at the end, so reserved memory is left as found;
// otherwise EmptyCache would also drop segments cached before the search,
// and FindBatchSize leaves the cache alone. Errors other than
// out-of-memory, returned by step or panicked as a *tensor.Error, stop the
// search and are returned, wrapped, with the result so far.
func FindBatchSize(dev *device.Device, maxBatch int, budget int64, step func(batch int) error) (BatchResult, error) {
	var res BatchResult
	switch {
	case dev == nil:
		return res, errors.New("optim: FindBatchSize: dev is nil")
	case maxBatch < 1:
		return res, fmt.Errorf("optim: FindBatchSize: maxBatch must be at least 1, got %d", maxBatch)
	case step == nil:
		return res, errors.New("optim: FindBatchSize: step is nil")
	}
	tensor.CollectGarbage() // tensors dropped without Release would blur the baseline
	base := dev.MemoryAllocated()
	emptyAtStart := noFreeSegments(dev)
	defer func() {
		if emptyAtStart {
			dev.EmptyCache()
		}
	}()
	try := func(batch int) (bool, error) {
		dev.ResetPeakStats()
		var stepErr error
		err := tensor.Try(func() { stepErr = step(batch) })
		if err == nil {
			err = stepErr
		}
		peak := dev.MaxMemoryAllocated() - base
		var oom *alloc.OutOfMemoryError
		isOOM := errors.As(err, &oom)
		if err != nil && !isOOM {
			return false, fmt.Errorf("optim: FindBatchSize: batch %d: %w", batch, err)
		}
		if dev.MemoryAllocated() != base {
			tensor.CollectGarbage()
		}
		if left := dev.MemoryAllocated() - base; left != 0 {
			return false, fmt.Errorf("optim: FindBatchSize: batch %d left %d bytes allocated; step must release every tensor it makes", batch, left)
		}
		if isOOM && emptyAtStart {
			dev.EmptyCache() // a failed try's cached segments would fragment the next one
		}
		ok := err == nil && (budget <= 0 || peak <= budget)
		res.Tries = append(res.Tries, BatchTry{Batch: batch, Peak: peak, OK: ok, Err: err})
		if ok {
			res.Batch, res.Peak = batch, peak
		}
		return ok, nil
	}
	// grow: 1, 2, 4, ... up to maxBatch (doubling without overflow, even
	// for maxBatch = math.MaxInt)
	lo, hi := 0, 0 // lo passed (0: none yet), hi failed (0: none yet)
	for b := 1; ; {
		ok, err := try(b)
		if err != nil {
			return res, err
		}
		if !ok {
			hi = b
			break
		}
		lo = b
		if b == maxBatch {
			break
		}
		if b > maxBatch/2 {
			b = maxBatch
		} else {
			b *= 2
		}
	}
	// bisect between the last success and the first failure
	for hi != 0 && hi-lo > 1 {
		mid := lo + (hi-lo)/2
		ok, err := try(mid)
		if err != nil {
			return res, err
		}
		if ok {
			lo = mid
		} else {
			hi = mid
		}
	}
	return res, nil
}

// noFreeSegments reports whether every segment dev reserves holds a live
// block, i.e. EmptyCache would release nothing.
func noFreeSegments(dev *device.Device) bool {
	for _, seg := range dev.Snapshot().Segments {
		if seg.AllocatedSize == 0 {
			return false
		}
	}
	return true
}
