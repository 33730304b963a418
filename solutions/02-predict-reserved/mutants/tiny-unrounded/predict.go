// Mutant: requests below 512 B keep their size instead of taking a 512 B block.

// Package predict computes, from PyTorch's rules, what the caching allocator
// will do: how it rounds a request, which pool serves it, how large a
// segment it asks the device for, and how much memory a sequence of
// requests leaves allocated and reserved.
package predict

import (
	"errors"
	"fmt"
	"math"
)

const (
	minBlock       = 512               // every block is a multiple of 512 B
	smallSize      = 1 << 20           // blocks of at most 1 MiB come from the small pool
	smallSegment   = 2 << 20           // the small pool's segment
	largeSegment   = 20 << 20          // the large pool's segment for blocks below 10 MiB
	minLargeAlloc  = 10 << 20          // from here on, a segment per block...
	roundLarge     = 2 << 20           // ...rounded up to 2 MiB
	maxRequestSize = math.MaxInt64 / 2 // far beyond any device; keeps the arithmetic exact
)

// RoundSize is the block size the allocator gives a request of n bytes:
// n rounded up to a multiple of 512, and at least 512.
func RoundSize(n int64) int64 {
	if n < minBlock {
		return n
	}
	return roundUp(n, minBlock)
}

// IsSmall reports whether a block of the rounded size comes from the small
// pool.
func IsSmall(rounded int64) bool { return rounded <= smallSize }

// SegmentSize is the size of the segment the allocator asks the device for
// when no cached block fits a block of the rounded size.
func SegmentSize(rounded int64) int64 {
	switch {
	case IsSmall(rounded):
		return smallSegment
	case rounded < minLargeAlloc:
		return largeSegment
	default:
		return roundUp(rounded, roundLarge)
	}
}

func roundUp(n, m int64) int64 { return (n + m - 1) / m * m }

// Prediction is the allocator's state after a sequence of requests.
type Prediction struct {
	Allocated int64 // bytes of the blocks handed out (MemoryAllocated)
	Reserved  int64 // bytes of the segments taken from the device (MemoryReserved)
	Segments  int64 // number of segments
}

// Predict returns what a fresh allocator holds after serving requests, in
// order, on one stream, none of them freed, on a device large enough for
// all. A request takes the smallest free block of its pool that fits; a
// block larger than needed is split when the rest is at least 512 B (small
// pool) or more than 1 MiB (large pool), otherwise the whole block is
// handed out. A request that no free block fits gets a new segment.
// A request of 0 bytes or less is an error.
func Predict(requests []int64) (Prediction, error) {
	var p Prediction
	var free [2][]int64 // free blocks of the small [0] and large [1] pool
	for i, n := range requests {
		if n <= 0 || n > maxRequestSize {
			return Prediction{}, fmt.Errorf("predict: request %d is %d bytes; want 1 to %d", i, n, int64(maxRequestSize))
		}
		size := RoundSize(n)
		pool := 1
		if IsSmall(size) {
			pool = 0
		}
		best := -1
		for j, b := range free[pool] {
			if b >= size && (best < 0 || b < free[pool][best]) {
				best = j
			}
		}
		var blockSize int64
		if best >= 0 {
			blockSize = free[pool][best]
			free[pool] = append(free[pool][:best], free[pool][best+1:]...)
		} else {
			blockSize = SegmentSize(size)
			p.Reserved += blockSize
			p.Segments++
		}
		rest := blockSize - size
		if (pool == 0 && rest >= minBlock) || (pool == 1 && rest > smallSize) {
			free[pool] = append(free[pool], rest)
			blockSize = size
		}
		p.Allocated += blockSize
	}
	if p.Reserved < 0 {
		return Prediction{}, errors.New("predict: the requests overflow int64")
	}
	return p, nil
}
