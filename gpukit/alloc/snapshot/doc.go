// Package snapshot reads PyTorch memory snapshots
// (torch.cuda.memory._dump_snapshot()) and replays them on gpukit's caching
// allocator (gpukit/alloc).
//
// Read decodes the pickle with a data-only reader (gpukit/internal/pickle):
// a snapshot is untrusted input, and nothing in it is run. Its two halves,
// Decode and FromValue, and the readers of one event and one frame,
// EventOf and FrameOf, serve a reader that streams the pickle
// (gpukit/cmd/memtrace) with Read's checks and errors.
//
// Reconstruct finds the allocator's state at the first event of a device's
// trace, which is a ring buffer that usually starts mid-run: it walks the
// trace backwards from the final segments.
//
// Check replays the trace from that state with the snapshot's own settings
// and compares each decision with PyTorch's: the segment events of each
// request (size, order, stream) and the address of each block.
//
// WhatIf replays the same requests (the alloc and free_requested sequence,
// with its sizes and streams) under other settings and reports peaks,
// fragmentation, device calls and the first OOM.
package snapshot
