package alloc

import "errors"

// Stream identifies a queue of device work. Stream 0 is the default stream.
type Stream int

// Event marks a point in a stream's queued work.
type Event interface {
	// Query reports whether all work queued before the event has completed
	// (cudaEventQuery).
	Query() bool
}

// Memory is the raw device memory beneath the caching allocator: what
// cudaMalloc, cudaFree and CUDA events are to PyTorch's allocator. A device
// backend implements it; the allocator never touches bytes.
type Memory interface {
	// Malloc reserves a new segment of exactly size bytes. When the device
	// cannot hold it, Malloc returns an error that wraps ErrDeviceFull.
	Malloc(size int64) (addr uint64, err error)
	// Free releases a segment returned by Malloc. Like cudaFree, it
	// synchronizes the whole device first. When it fails, the allocator
	// takes the segment as still allocated: it stays cached and reserved,
	// and the next release (EmptyCache, Malloc's retry) frees it again.
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

// PageMemory is optionally implemented by a Memory that can reserve a range
// of device addresses and back it, page by page, with physical memory: CUDA's
// virtual memory management API (cuMemAddressReserve, then cuMemCreate,
// cuMemMap and cuMemSetAccess per page, cuMemUnmap and cuMemRelease, and
// cuMemAddressFree). Expandable segments need it; without it the allocator
// warns, as PyTorch does, and uses plain segments.
type PageMemory interface {
	// Reserve reserves size bytes of device addresses, backed by nothing.
	// An error wrapping ErrPagesUnsupported says the device has no virtual
	// memory management.
	Reserve(size int64) (addr uint64, err error)
	// MapPages backs n pages of pageSize bytes, from addr in a reserved
	// range, with new physical memory, one allocation per page. It maps all
	// of them or none: when the device cannot hold them, the error wraps
	// ErrDeviceFull.
	MapPages(addr uint64, pageSize int64, n int) error
	// UnmapPages waits for the work queued on stream s, then unmaps and
	// releases n pages mapped by MapPages. When it fails, the allocator
	// takes all n pages as still mapped, and a later release unmaps them
	// again.
	UnmapPages(s Stream, addr uint64, pageSize int64, n int) error
	// Unreserve frees a range returned by Reserve; no page in it may be
	// mapped. When it fails, the allocator keeps the range, to map pages
	// in or to free again.
	Unreserve(addr uint64, size int64) error
}

// ErrPagesUnsupported is wrapped by PageMemory.Reserve when the device has no
// virtual memory management (a driver without it, a host without mmap).
var ErrPagesUnsupported = errors.New("alloc: device does not support virtual memory management")
