package alloc

import (
	"fmt"
	"strings"
)

// OutOfMemoryError is returned by Malloc when the device cannot hold a new
// segment even after the allocator has released its cache and retried.
// errors.As finds it.
//
// Its message follows PyTorch's (c10/cuda/CUDACachingAllocator.cpp, 2.9 and
// later) field for field, "CUDA" aside:
//
//	alloc: out of memory. Tried to allocate 300.00 MiB. GPU 0 has a total
//	capacity of 2.00 GiB of which 118.00 MiB is free. Including non-PyTorch
//	memory, this process has 1.88 GiB memory in use. 1024.00 MiB allowed; Of
//	the allocated memory 1.76 GiB is allocated by PyTorch, and 2.00 MiB is
//	reserved by PyTorch but unallocated. If reserved but unallocated memory
//	is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to
//	avoid fragmentation.
//
// The "this process has" part appears when the Memory reports the process's
// use (ProcessMemoryReporter; PyTorch needs NVML for it), the "allowed" part
// while a memory fraction below 1 caps the allocator. PyTorch prints the
// expandable-segments hint on every out-of-memory error, whatever the
// fragmentation and even when expandable segments are on; so does gpukit.
type OutOfMemoryError struct {
	Requested           int64   // bytes asked of Malloc
	RoundedSize         int64   // the request rounded to a block size
	AllocSize           int64   // the segment size the device was asked for ("Tried to allocate")
	Capacity            int64   // total device memory
	DeviceFree          int64   // device memory free, as the device reports it
	ProcessUsed         int64   // device memory this process holds, context included; valid when ProcessUsedKnown
	ProcessUsedKnown    bool    // whether the Memory reported ProcessUsed
	Allocated           int64   // bytes allocated by this allocator
	ReservedUnallocated int64   // bytes reserved by this allocator but not allocated
	Allowed             int64   // cap from the memory fraction; 0 when no fraction below 1 is set
	Fraction            float64 // memory fraction; 0 when no fraction below 1 is set
	FractionSet         bool    // whether a memory fraction below 1 caps the allocator
	Device              int
	Stream              Stream
}

// NonPyTorch is the device memory this process holds outside the allocator
// (the CUDA context, on a real card also library workspaces): ProcessUsed
// minus everything the allocator reserved. It is 0 when ProcessUsed is not
// known.
func (e *OutOfMemoryError) NonPyTorch() int64 {
	if !e.ProcessUsedKnown {
		return 0
	}
	return e.ProcessUsed - e.Allocated - e.ReservedUnallocated
}

func (e *OutOfMemoryError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "alloc: out of memory. Tried to allocate %s. GPU %d has a total capacity of %s of which %s is free. ",
		FormatSize(e.AllocSize), e.Device, FormatSize(e.Capacity), FormatSize(e.DeviceFree))
	if e.ProcessUsedKnown {
		fmt.Fprintf(&b, "Including non-PyTorch memory, this process has %s memory in use. ", FormatSize(e.ProcessUsed))
	}
	if e.FractionSet {
		fmt.Fprintf(&b, "%s allowed; ", FormatSize(e.Allowed))
	}
	fmt.Fprintf(&b, "Of the allocated memory %s is allocated by PyTorch, and %s is reserved by PyTorch but unallocated. ",
		FormatSize(e.Allocated), FormatSize(e.ReservedUnallocated))
	b.WriteString("If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.")
	return b.String()
}

// FormatSize formats a byte count as PyTorch's messages do: "512 bytes",
// "1.50 KiB", "20.00 MiB", "2.00 GiB".
func FormatSize(n int64) string {
	switch {
	case n <= 1024:
		return fmt.Sprintf("%d bytes", n)
	case n <= 1<<20:
		return fmt.Sprintf("%.2f KiB", float64(n)/1024)
	case n <= 1<<30:
		return fmt.Sprintf("%.2f MiB", float64(n)/(1<<20))
	default:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	}
}

func (a *Allocator) deviceFree() int64 {
	if r, ok := a.mem.(FreeBytesReporter); ok {
		return r.FreeBytes()
	}
	return a.mem.Capacity() - a.totalReserved
}

func (a *Allocator) outOfMemory(req, rounded, allocSize int64, s Stream, frames []Frame) error {
	free := a.deviceFree()
	a.traceOOM(free, rounded, s, frames)
	a.stats.numOOMs++
	allocated := a.stats.allocatedBytes[statAll].Current
	reserved := a.stats.reservedBytes[statAll].Current
	e := &OutOfMemoryError{
		Requested:           req,
		RoundedSize:         rounded,
		AllocSize:           allocSize,
		Capacity:            a.mem.Capacity(),
		DeviceFree:          free,
		Allocated:           allocated,
		ReservedUnallocated: reserved - allocated,
		Device:              a.device,
		Stream:              s,
	}
	if r, ok := a.mem.(ProcessMemoryReporter); ok {
		e.ProcessUsed, e.ProcessUsedKnown = r.ProcessUsedBytes(), true
	}
	if a.limited { // PyTorch's allowed_memory_maximum.has_value()
		e.FractionSet = true
		e.Fraction = a.fraction
		e.Allowed = a.allowedMax
	}
	return e
}
