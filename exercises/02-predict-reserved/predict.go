// Package predict computes, from PyTorch's rules, what the caching allocator
// will do: how it rounds a request, which pool serves it, how large a
// segment it asks the device for, and how much memory a sequence of
// requests leaves allocated and reserved.
//
// Compute each answer from the rules of lesson 02; do not call gpukit's
// allocator (alloc.Config.RoundSize, alloc.SegmentSize, a device) to find
// it: the point is to know the rules.
package predict

import "errors"

// RoundSize is the block size the allocator gives a request of n bytes:
// n rounded up to a multiple of 512, and at least 512.
//
// TODO: write it.
func RoundSize(n int64) int64 { return 0 }

// IsSmall reports whether a block of the rounded size comes from the small
// pool.
//
// TODO: write it.
func IsSmall(rounded int64) bool { return false }

// SegmentSize is the size of the segment the allocator asks the device for
// when no cached block fits a block of the rounded size.
//
// TODO: write it.
func SegmentSize(rounded int64) int64 { return 0 }

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
//
// TODO: write it.
func Predict(requests []int64) (Prediction, error) {
	return Prediction{}, errors.New("predict: Predict is not implemented yet")
}
