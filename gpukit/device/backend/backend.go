// Package backend defines what a device backend provides to gpukit/device:
// raw device memory (the alloc.Memory that the caching allocator sits on),
// copies between host and device and between devices, streams, events,
// a virtual or real clock, memory information and a Profile of the card.
//
// It is a separate package so that the backends (gpukit/device/sim and the
// cuda-tagged gpukit/device/cuda) and gpukit/device can share these types
// without an import cycle. gpukit/device re-exports every name here as an
// alias, so user code never needs to import this package.
package backend

import (
	"fmt"
	"sync"
	"time"

	"github.com/gpumem/course/gpukit/alloc"
	"github.com/gpumem/course/gpukit/device/profile"
)

// Kind is the family of a backend.
type Kind int

// The backend kinds.
const (
	Sim  Kind = iota // simulated device, device memory is host memory
	Meta             // simulated device with accounting and clocks but no bytes
	CUDA             // a real NVIDIA GPU through gorgonia.org/cu
)

// String returns "sim", "meta" or "cuda".
func (k Kind) String() string {
	switch k {
	case Sim:
		return "sim"
	case Meta:
		return "meta"
	case CUDA:
		return "cuda"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Event marks a point in a stream's queued work, like a CUDA event.
// It satisfies alloc.Event.
type Event interface {
	// Query reports whether the work queued before the event has completed
	// (cudaEventQuery).
	Query() bool
	// Synchronize blocks the host until the event has completed
	// (cudaEventSynchronize).
	Synchronize()
	// ElapsedSince returns the time between start and this event
	// (cudaEventElapsedTime(start, e)).
	ElapsedSince(start Event) time.Duration
}

// Backend is one device as seen by gpukit/device.
//
// Addresses are device addresses as returned by Malloc (the alloc.Memory
// part); a block of the caching allocator lies inside one such segment.
type Backend interface {
	alloc.Memory

	// Name is the device name, such as "sim:0".
	Name() string
	// Kind is the backend family.
	Kind() Kind
	// Index is the device ordinal.
	Index() int
	// Profile describes the card.
	Profile() profile.Profile

	// Owns reports whether [addr, addr+n) lies inside one live segment of
	// this backend.
	Owns(addr uint64, n int64) bool
	// Bytes returns the host-visible bytes of [addr, addr+n): the real
	// backing bytes on sim, nil on meta and cuda or when the range is not
	// inside a live segment.
	Bytes(addr uint64, n int64) []byte

	// HostAlloc returns host memory for copies, page-locked when pinned.
	HostAlloc(size int64, pinned bool) (*HostBuffer, error)

	// CopyHtoD copies src to device address dst on stream s. A pageable
	// (not pinned) source makes the copy synchronous even when async is
	// requested, as with cudaMemcpyAsync.
	CopyHtoD(dst uint64, src []byte, pinned bool, s alloc.Stream, async bool) error
	// CopyDtoH copies len(dst) bytes from device address src to dst.
	CopyDtoH(dst []byte, src uint64, pinned bool, s alloc.Stream, async bool) error
	// CopyDtoD copies n bytes within this device, asynchronously on s.
	CopyDtoD(dst, src uint64, n int64, s alloc.Stream) error
	// CopyPeer copies n bytes from src on srcB to dst on dstB, queued on
	// stream s of this backend (cudaMemcpyPeerAsync).
	CopyPeer(dst uint64, dstB Backend, src uint64, srcB Backend, n int64, s alloc.Stream) error

	// Launch queues the modelled cost of k on stream s. The cuda backend has
	// no cost model to run and ignores it.
	Launch(s alloc.Stream, k profile.Kernel)
	// NewStream creates a stream.
	NewStream() alloc.Stream
	// StreamSynchronize waits until the work queued on s has completed.
	StreamSynchronize(s alloc.Stream)
	// Synchronize waits until all work on the device has completed.
	Synchronize()
	// WaitEvent makes work queued on s after this call wait for e.
	WaitEvent(s alloc.Stream, e Event)
	// Now is the host clock.
	Now() time.Duration
	// StreamClock is the time at which the work queued on s completes.
	StreamClock(s alloc.Stream) time.Duration
	// MemInfo returns free and total device memory (cudaMemGetInfo).
	MemInfo() (free, total int64)
}

// HostBuffer is host memory to copy from or to. Pinned buffers are
// page-locked and can be copied asynchronously at full PCIe bandwidth.
type HostBuffer struct {
	Bytes  []byte
	Pinned bool

	once sync.Once
	free func()
}

// NewHostBuffer returns a HostBuffer over b; free, if not nil, is called once
// by Free (for instance cuMemFreeHost).
func NewHostBuffer(b []byte, pinned bool, free func()) *HostBuffer {
	return &HostBuffer{Bytes: b, Pinned: pinned, free: free}
}

// Free releases the buffer. Its Bytes must not be used afterwards. Free is
// idempotent.
func (h *HostBuffer) Free() {
	h.once.Do(func() {
		if h.free != nil {
			h.free()
		}
		h.Bytes = nil
	})
}
