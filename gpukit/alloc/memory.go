package alloc

import "errors"

// Stream identifies a queue of device work. Stream 0 is the default stream.
type Stream int

// Event marks a point in a stream's queued work.
type Event interface {
	// Done reports whether all work queued before the event has completed.
	Done() bool
}

// Memory is the raw device memory beneath the caching allocator: what
// cudaMalloc, cudaFree and CUDA events are to PyTorch's allocator. A device
// backend implements it; the allocator never touches bytes.
type Memory interface {
	// Malloc reserves a new segment of exactly size bytes. When the device
	// cannot hold it, Malloc returns an error that wraps ErrDeviceFull.
	Malloc(size int64) (addr uint64, err error)
	// Free releases a segment returned by Malloc. Like cudaFree, it
	// synchronizes the whole device first.
	Free(addr uint64) error
	// RecordEvent records an event at the end of the work queued on s so far.
	RecordEvent(s Stream) Event
	// Capacity is the device's total memory in bytes.
	Capacity() int64
	// NowMicros is the device clock in microseconds, used to stamp history.
	NowMicros() float64
}

// ErrDeviceFull is wrapped by Memory.Malloc when the device has no room for
// a new segment. The allocator turns it into an *OutOfMemoryError after it
// has freed its cache and retried.
var ErrDeviceFull = errors.New("alloc: device memory exhausted")
