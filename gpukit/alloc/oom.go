package alloc

import (
	"fmt"
	"strings"
)

// OutOfMemoryError is returned by Malloc when the device cannot hold a new
// segment even after the allocator has released its cache and retried.
// errors.As finds it.
type OutOfMemoryError struct {
	Requested           int64   // bytes asked of Malloc
	RoundedSize         int64   // the request rounded to a block size
	AllocSize           int64   // the segment size the device was asked for ("Tried to allocate")
	Capacity            int64   // total device memory
	DeviceFree          int64   // device memory free, as the device reports it
	Allocated           int64   // bytes allocated by this allocator
	ReservedUnallocated int64   // bytes reserved by this allocator but not allocated
	Allowed             int64   // cap from the memory fraction; 0 when no fraction is set
	Fraction            float64 // memory fraction; 0 when none is set
	FractionSet         bool    // whether SetMemoryFraction capped memory
	Device              int
	Stream              Stream
}

func (e *OutOfMemoryError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "alloc: out of memory. Tried to allocate %s. Device %d has a total capacity of %s of which %s is free. ",
		FormatSize(e.AllocSize), e.Device, FormatSize(e.Capacity), FormatSize(e.DeviceFree))
	if e.FractionSet {
		fmt.Fprintf(&b, "%s allowed (memory fraction %g); ", FormatSize(e.Allowed), e.Fraction)
	}
	fmt.Fprintf(&b, "Of the allocated memory %s is allocated by the allocator, and %s is reserved but unallocated. ",
		FormatSize(e.Allocated), FormatSize(e.ReservedUnallocated))
	b.WriteString("If reserved but unallocated memory is large, try setting max_split_size_mb to avoid fragmentation.")
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
	if a.setFraction {
		e.FractionSet = true
		e.Fraction = a.fraction
		e.Allowed = a.allowedMax
	}
	return e
}
