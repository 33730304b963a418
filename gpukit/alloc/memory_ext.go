package alloc

// FreeBytesReporter is optionally implemented by a Memory that knows how many
// bytes the device has free (what cudaMemGetInfo reports). The allocator uses
// it for the "free" figure of an out-of-memory error; without it, the figure
// is the capacity minus the segments this allocator holds.
type FreeBytesReporter interface {
	FreeBytes() int64
}

// ProcessMemoryReporter is optionally implemented by a Memory that knows how
// much device memory this process holds: the allocator's segments plus what
// the process lost before its first tensor (the CUDA context). It is what
// NVML reports as the process's used GPU memory, and what PyTorch's
// out-of-memory message calls "Including non-PyTorch memory, this process
// has ... memory in use". Without it the message leaves that part out, as
// PyTorch does without NVML.
type ProcessMemoryReporter interface {
	ProcessUsedBytes() int64
}

// EventSynchronizer is optionally implemented by an Event that can be waited
// for (cudaEventSynchronize). EmptyCache, and the last-resort path of Malloc,
// synchronize on every outstanding record-stream event as PyTorch does; an
// Event without this method is then treated as complete.
type EventSynchronizer interface {
	Synchronize()
}
