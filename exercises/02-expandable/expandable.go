// Package expandable predicts what the caching allocator does with
// expandable segments, reads the largest cached block from a snapshot, and
// shows when expandable segments do not prevent an out-of-memory error.
//
// Compute Predict from the rules of lesson 02's last section; do not run
// an allocator to find the answer: the tests compare yours with one.
package expandable

import (
	"errors"

	"github.com/gpumem/course/gpukit/alloc"
	"github.com/gpumem/course/gpukit/device"
)

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
//
// TODO: write it.
func Predict(iterations [][]int64) (Usage, error) {
	return Usage{}, errors.New("expandable: Predict is not implemented yet")
}

// LargestFree is the size of the largest cached block of the snapshot: the
// largest request the allocator can serve without asking the device for
// memory. Blocks waiting for another stream are not free yet.
//
// TODO: write it.
func LargestFree(s alloc.Snapshot) int64 { return 0 }

// Pin allocates on dev, a fresh device whose allocator has expandable
// segments on, a pattern of live blocks after which a request of request
// bytes fails with *alloc.OutOfMemoryError although at least a quarter of
// the device is not allocated. It returns the blocks it keeps: freeing them
// makes the request possible again. request must be at least 2 MiB and at
// most a quarter of the device's capacity; otherwise, or when dev has no
// expandable segments or memory allocated already, it returns an error and
// allocates nothing.
//
// TODO: write it.
func Pin(dev *device.Device, request int64) ([]*alloc.Block, error) {
	return nil, errors.New("expandable: Pin is not implemented yet")
}
