// Extra: Go's collector runs before Pin allocates, and an unused helper.

// Package expandable predicts what the caching allocator does with
// expandable segments, reads the largest cached block from a snapshot, and
// shows when expandable segments do not prevent an out-of-memory error.
package expandable

import (
	"errors"
	"fmt"
	"runtime"

	"github.com/gpumem/course/gpukit/alloc"
	"github.com/gpumem/course/gpukit/device"
)

const mib = 1 << 20

// Usage is what an allocator with expandable_segments:True holds.
type Usage struct {
	Reserved int64 // bytes of mapped pages (MemoryReserved)
	Segments int   // segments in the snapshot: runs of mapped pages
	Maps     int64 // how many times pages were mapped (num_device_alloc)
}

// Predict returns what a fresh allocator with expandable_segments:True
// holds after the iterations, on one stream of a device large enough for
// all: each iteration allocates its requests in order, keeps them, and
// frees them all at its end. A request of 0 bytes or less is an error.
func Predict(iterations [][]int64) (Usage, error) {
	type pool struct{ page, mapped, maps int64 }
	small := pool{page: 2 * mib}  // requests of at most 1 MiB
	large := pool{page: 20 * mib} // larger requests
	for _, it := range iterations {
		var smallUsed, largeUsed int64 // blocks are carved one after the other from the free pages
		for _, n := range it {
			if n <= 0 {
				return Usage{}, fmt.Errorf("expandable: request of %d bytes", n)
			}
			size := (n + 511) / 512 * 512
			p, used := &large, &largeUsed
			if size <= mib {
				p, used = &small, &smallUsed
			}
			*used += size
			if *used > p.mapped { // one map call for the pages that are missing
				p.mapped = (*used + p.page - 1) / p.page * p.page
				p.maps++
			}
		}
	}
	var u Usage
	for _, p := range []pool{small, large} {
		u.Reserved += p.mapped
		u.Maps += p.maps
		if p.mapped > 0 {
			u.Segments++
		}
	}
	return u, nil
}

// pagesFor is the number of pages of page bytes that hold n bytes.
func pagesFor(n, page int64) int64 { return (n + page - 1) / page }

// LargestFree is the size of the largest cached block of the snapshot: the
// largest request the allocator can serve without asking the device for
// memory. Blocks waiting for another stream are not free yet.
func LargestFree(s alloc.Snapshot) int64 {
	var largest int64
	for _, seg := range s.Segments {
		for _, b := range seg.Blocks {
			if b.State == alloc.StateInactive {
				largest = max(largest, b.Size)
			}
		}
	}
	return largest
}

// Pin allocates on dev, a fresh device whose allocator has expandable
// segments on, a pattern of live blocks after which a request of request
// bytes fails with *alloc.OutOfMemoryError although at least a quarter of
// the device is not allocated. It returns the blocks it keeps: freeing them
// makes the request possible again. request must be at least 2 MiB and at
// most a quarter of the device's capacity; otherwise, or when dev has no
// expandable segments or memory allocated already, it returns an error and
// allocates nothing.
func Pin(dev *device.Device, request int64) ([]*alloc.Block, error) {
	_, capacity := dev.MemInfo()
	switch {
	case !dev.AllocConfig().ExpandableSegments:
		return nil, errors.New("expandable: the device's allocator has no expandable segments")
	case dev.MemoryAllocated() != 0:
		return nil, errors.New("expandable: the device already has memory allocated")
	case request < 2*mib || request > capacity/4:
		return nil, fmt.Errorf("expandable: request of %d bytes outside [2 MiB, %d]", request, capacity/4)
	}
	// Pieces of the large pool (the request's), packed one after the other
	// in the expandable segment. One kept out of every k: the free run
	// between two kept pieces, (k-1) pieces, is shorter than the request,
	// and the stride, k pieces, is at most a 20 MiB page, so every page
	// holds a live piece and none can be unmapped.
	runtime.GC()
	const piece = mib + 512
	k := int64(2)
	for (k)*piece < request && (k+1)*piece <= 20*mib {
		k++
	}
	var all []*alloc.Block
	for {
		b, err := dev.Malloc(piece, dev.DefaultStream())
		if err != nil {
			if errors.As(err, new(*alloc.OutOfMemoryError)) {
				break
			}
			for _, b := range all {
				dev.Free(b)
			}
			return nil, err
		}
		all = append(all, b)
	}
	var kept []*alloc.Block
	for i, b := range all {
		if int64(i)%k == 0 {
			kept = append(kept, b)
		} else {
			dev.Free(b)
		}
	}
	return kept, nil
}
