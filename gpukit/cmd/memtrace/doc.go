// Command memtrace replays allocator traces on gpukit's caching allocator
// (gpukit/alloc, PyTorch's CUDA caching allocator policy) and writes what
// the allocator did, line by line, so that a trace from a lesson or an
// exercise can be checked against hand-computed PyTorch behaviour; and it
// replays PyTorch's own memory snapshots under other settings (whatif).
//
//	memtrace whatif SNAPSHOT [--alloc-conf STR]... [--device NAME | --capacity SIZE] [--memory-fraction F] [--gpu N] [--format text|json]
//
// whatif reads a pickle of torch.cuda.memory._dump_snapshot() (gzip
// compressed or not) as data only (gpukit/internal/pickle: no object is
// constructed, no code run; every length is checked before anything is
// made), and as it streams (snapread.go): it keeps each event (64 bytes)
// and one copy of each distinct frame and stack, not the file's frames, so
// that a snapshot of a gigabyte and 1.2 million events is replayed in about
// 220 MB of memory, in time linear in its size. It rebuilds the allocator's state at the trace's first event (the
// trace is a ring buffer and usually starts mid-run), replays the trace
// under the snapshot's own allocator_settings and checks every decision
// against PyTorch's (gpukit/alloc/snapshot's Check: the segments each
// request made or released, the address of each block), and prints the
// agreement and the first disagreement. It then replays the same requests
// once per --alloc-conf, in parallel, and prints one row per setting: peak
// allocated and reserved memory, reserved minus allocated memory and the
// largest cached block when allocated memory peaked, num_device_alloc and
// num_device_free (cudaMalloc and cudaFree, or page maps and unmaps with
// expandable segments), num_alloc_retries, and the first OOM with the
// Python frames PyTorch recorded for that request. Each replay stops at
// its first OOM. --alloc-conf takes PYTORCH_CUDA_ALLOC_CONF's syntax plus
// per_process_memory_fraction:F (c10/cuda/CUDAAllocatorConfig.h); without
// one, the row is the snapshot's own setting. --device takes a gpukit
// device profile (or a unique prefix: h100, a100, t4), whose CUDA context
// counts against the capacity; --capacity a size (40GiB); without either
// the device is unlimited. --memory-fraction is the cap the program set
// with torch.cuda.set_per_process_memory_fraction, which snapshots do not
// record (garbage_collection_threshold acts only under it). The output
// states what the replay does not model: requests are replayed as
// recorded; the timing of other streams, other processes, memory outside
// the allocator and cudaMalloc's addresses are not modelled. --format json
// writes the same as one JSON object. Exit status: 0 after a replay; 1 when
// the snapshot cannot be read (not a pickle, not a memory snapshot, a
// pickle that would construct objects, truncated, beyond the limits), with
// a "memtrace: " message; 2 for usage errors.
//
//	memtrace replay --device-memory BYTES [--alloc-conf STR] [--snapshot FILE.pickle] [--html FILE.html] [--strict] < trace.jsonl
//	memtrace replay --device NAME [--alloc-conf STR] ... < trace.jsonl
//
// Input is one JSON object per line:
//
//	{"op":"alloc","id":"a","size":4000000,"stream":0}
//	{"op":"free","id":"a"}
//	{"op":"empty_cache"}
//	{"op":"set_fraction","fraction":0.5}
//	{"op":"reset_peak"}
//
// Output is one JSON line per input line, in order:
//
//	{"i":0,"ok":true,"error":null,"offset":0,"stats":{...}}
//
// where i is the 0-based line index, offset the block's offset inside its
// segment (null when there is no block: a size-0 allocation and every
// operation other than alloc) and stats these allocator statistics, under
// PyTorch's names and in this order: allocated_bytes.all.current and .peak,
// reserved_bytes.all.current and .peak, active_bytes.all.current,
// requested_bytes.all.current, inactive_split_bytes.all.current,
// allocation.all.current, segment.all.current, inactive_split.all.current,
// allocated_bytes.small_pool.current and .large_pool.current,
// reserved_bytes.small_pool.current and .large_pool.current,
// num_device_alloc, num_device_free, num_alloc_retries, num_ooms.
//
// Errors, with "ok":false:
//
//	"oom"               the allocation failed (after the allocator released its
//	                    cache and retried, as PyTorch does)
//	"unknown id"        free of an id that is not live: never allocated, already
//	                    freed, or whose allocation failed
//	"duplicate id"      alloc of an id that is still live
//	"invalid fraction"  set_fraction outside [0, 1]
//	"bad op"            a malformed line: not JSON, unknown op, an unknown
//	                    or repeated key (keys are case-sensitive: "SIZE" and
//	                    "strem" are refused), missing or negative size,
//	                    missing or empty id, wrong types, a negative stream;
//	                    also written to standard error with its 1-based line
//	                    number and the reason
//
// A UTF-8 byte-order mark at the start of the input (common from Windows
// editors) is skipped; one on a later line makes that line a bad op.
//
// A failed operation changes nothing, except what the allocator itself does
// on an OOM (release cached segments, count the retry and the OOM). A size-0
// alloc succeeds without touching the allocator, and so does its free.
//
// With --device NAME the trace runs on the allocator of that gpukit device
// instead: "cuda:0" in a binary built with -tags cuda, which is how
// scripts/gpu-check.sh sets gpukit on a card beside PyTorch on the same
// card. Otherwise the device is a simulated one of exactly BYTES capacity:
// a raw segment allocation succeeds when the live segments plus the request
// fit. With --alloc-conf expandable_segments:True it also maps and unmaps
// pages of expandable segments, which count against the capacity like
// segments; an address range reserved for one takes addresses but no
// capacity.
// Segment addresses start at 0x7f0000000000, grow and are never reused;
// streams never have pending work; the snapshot's time_us is the 0-based
// line index of the operation that caused the event.
//
// With --snapshot or --html, history recording is on for the whole replay
// and the snapshot taken after the last line is written as a pickle that
// PyTorch's torch/cuda/_memory_viz.py and memory viewer read, and as
// gpukit's offline HTML viewer (gpukit/viz/memviewer). The paths are checked
// before the first line is read (their folders exist and accept files; one
// path for both outputs is refused), and each file is written to a
// temporary file beside it, synced and renamed over the destination only
// when complete, so a kill or a full disk never leaves half a file where a
// good one was.
//
// Exit status: 0 when every line was well-formed, whatever the operations
// answered (an OOM is the allocator's answer, not an error of the trace); 3
// when a line was malformed, so that scripts see bad input; with --strict,
// 3 also when any operation was refused (oom, unknown id, duplicate id,
// invalid fraction); 1 when input cannot be read or an output file cannot
// be written; 2 for usage errors. The output lines and files are written in
// every case but 1 and 2.
package main
