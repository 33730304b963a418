// Package alloc is gpukit's caching allocator: the policy of PyTorch's CUDA
// caching allocator (c10/cuda/CUDACachingAllocator.cpp), reproduced so that
// the same requests give the same blocks, segments and statistics as
// torch.cuda shows on a real card.
//
// It follows the allocator of PyTorch 2.9 and later, where the cap of the
// memory fraction (allowed_memory_maximum) is optional: it exists only while
// the fraction is below 1, and garbage collection and the age counting
// behind it run only while it exists. Older releases kept the cap, and the
// collector, after set_per_process_memory_fraction(1.0). The version read
// for expandable segments is pytorch/pytorch commit
// b944315b93d36f842ef94d67a041371993234a74 of
// c10/cuda/CUDACachingAllocator.cpp (Note [Expandable Segments],
// ExpandableSegment, find_expandable_block, map_block,
// try_allocate_expandable_block, unmap_block, release_blocks,
// release_expandable_segment, and the expandable branches of
// get_free_block, should_split, alloc_block,
// release_available_cached_blocks and garbage_collect_cached_blocks).
//
// The allocator sits on a Memory, the raw device memory (cudaMalloc,
// cudaFree and events to PyTorch). Asking the device for memory is slow and
// freeing it synchronizes the device, so the allocator keeps freed blocks in
// a cache and reuses them:
//
//   - Sizes are rounded up to a multiple of 512 bytes (or, with
//     roundup_power2_divisions:N, to the next of N divisions between two
//     powers of two).
//   - Blocks of at most 1 MiB come from the small pool, whose segments are
//     2 MiB; larger blocks from the large pool, whose segments are 20 MiB for
//     blocks below 10 MiB and the block size rounded up to 2 MiB otherwise.
//   - A request takes the smallest cached block of its pool and stream that
//     fits (lowest address on ties). A block larger than needed is split:
//     in the small pool when at least 512 bytes remain, in the large pool
//     when more than 1 MiB remains and the request is below max_split_size.
//     Blocks of at least max_split_size are never split, and only requests
//     of at least that size (and less than 20 MiB smaller) may take them.
//   - A freed block merges with the free blocks next to it in its segment.
//   - When no cached block fits: garbage collection of old cached segments
//     (garbage_collection_threshold, only under a memory fraction below 1), a device
//     malloc (refused beyond the memory fraction), then release of oversize
//     cached segments (with max_split_size), then release of every cached
//     whole segment and one retry (num_alloc_retries), and finally an
//     *OutOfMemoryError (num_ooms), whose message is PyTorch's. A request
//     above MaxRequest (4 EiB) is an *OutOfMemoryError at once.
//   - EmptyCache returns to the device only segments that are entirely free.
//   - With expandable_segments:True (expandable.go), each pool of each
//     stream grows one segment instead: a range of addresses for 1 1/8 of
//     the device, reserved once, into which pages (2 MiB for the small
//     pool, 20 MiB for the large one) are mapped at the lowest address that
//     makes room, so that blocks of slightly different sizes tile. Best fit
//     counts a free block followed by unmapped pages at the size it could
//     grow to; every pool splits with the small pool's rule. EmptyCache and
//     the out-of-memory retry unmap only pages that are entirely free, and
//     release a range once none of it is mapped. Each map counts in
//     num_device_alloc and each unmap in num_device_free; reserved_bytes
//     counts mapped pages; segment and inactive_split do not count
//     expandable segments; the snapshot shows each run of mapped pages as a
//     segment with is_expandable, and the history has segment_map and
//     segment_unmap entries. The Memory must implement PageMemory;
//     otherwise the allocator warns "expandable_segments not supported on
//     this platform" once and uses plain segments, as PyTorch does without
//     the CUDA driver API. SetExpandableSegments switches it between
//     allocations, like torch.cuda.memory._set_allocator_settings.
//   - RecordStream(b, s) marks a block as used on another stream: when it is
//     freed, the allocator records an event on s and does not reuse the
//     block ("active_pending_free") until the event is done.
//
// Statistics use the key names of torch.cuda.memory_stats(), Summary the
// layout of torch.cuda.memory_summary(), and Snapshot the structure of
// torch.cuda.memory._snapshot(), with the history that RecordHistory keeps.
//
// Settings come in the PYTORCH_CUDA_ALLOC_CONF syntax, from ParseConfig or
// the GPUKIT_ALLOC_CONF environment variable (ConfigFromEnv).
//
// Two methods serve the replay of PyTorch's own snapshots
// (gpukit/alloc/snapshot, memtrace whatif): Adopt takes over a segment made
// before a trace began, with its blocks in use at their offsets, and
// CachedFit asks get_free_block's question without taking the block.
//
// Replayed against PyTorch. Every decision of PyTorch 2.11's allocator in
// the course's 14 H200 recordings (cmd/memtrace/testdata/h200: 4,557 to
// 6,287 allocations each under the default, expandable_segments:True,
// max_split_size_mb:64, roundup_power2_divisions:4 and
// garbage_collection_threshold:0.6 with set_per_process_memory_fraction,
// OOMs included, two streams, a ring that starts mid-run) and in 12
// third-party snapshots from public repositories (14 device traces, up to
// 22,332 events, ten streams, expandable segments on three devices) is made
// the same by this package: each segment_alloc, segment_free, segment_map
// and segment_unmap, in order, and each block at PyTorch's address. What
// the replay cannot know, and how it decides:
//
//   - a snapshot does not record set_per_process_memory_fraction, under
//     which alone garbage_collection_threshold acts (malloc in
//     CUDACachingAllocator.cpp: "if (C10_UNLIKELY(set_fraction &&
//     CUDAAllocatorConfig::garbage_collection_threshold() > 0.0))"):
//     without the cap, the check of the garbage-collection recording
//     disagrees from its first collection (event 576);
//   - a failed cudaMalloc leaves no trace event, so releases before a
//     request are either PyTorch's release after a failed cudaMalloc or an
//     empty_cache() the program called (torch/cuda/memory.py), and a
//     free_completed before it either process_events or the
//     synchronize_and_free_events of that release: the replay asks the
//     cache (CachedFit) and holds such completions until the retry waits;
//     on snapshots this package recorded itself, with random record_stream
//     frees under garbage collection or max_split_size and an OOM every
//     few requests, up to 8 requests in 2,297 still take the other
//     branch;
//   - a block in use at the first event and freed in the trace has only
//     its requested size: the size should_split left it is inferred from
//     where the trace next allocates after it; when the trace never does,
//     a block that kept up to 1 MiB of a split is taken at its rounded
//     size (a random workload of gpukit's, 60,000 operations into a
//     20,000-entry ring, disagrees from event 27 because of it);
//   - cudaMalloc's addresses break ties in best fit. A replay under other
//     settings gives the k-th segment of a size the address of PyTorch's
//     k-th: gpt-default's requests under roundup_power2_divisions:4 reserve
//     1520.0 MiB, while PyTorch, with the same requests but its own
//     addresses, reserved 1544.0 MiB (and so does the replay of that
//     recording).
//
// Differences from PyTorch: one Allocator serves one device; Malloc holds the
// allocator's lock while it calls Memory; CUDA graph pools and memory pools,
// IPC (of expandable segments too), peer access to expandable segments,
// max_non_split_rounding_mb and the per_process_memory_fraction key of the
// configuration do not exist here;
// memory outside the allocator (NCCL's buffers, lazily loaded kernels) is not
// modelled, except for what a device reports as lost before the first
// tensor (ProcessMemoryReporter). Library workspaces are not outside it:
// PyTorch allocates cuBLAS's through the caching allocator
// (CublasHandlePool.cpp), and so do gpukit's devices (device.BlasWorkspace).
// A release the device fails (Memory.Free, UnmapPages, Unreserve) is an
// error from Malloc or TryEmptyCache, where PyTorch's C10_CUDA_CHECK
// throws; the segment stays cached, reserved and counted, and unlike
// PyTorch's release_block the failure counts no num_device_free and
// records no segment_free.
//
// Package alloctest holds a conformance suite that every Memory backend runs.
package alloc
