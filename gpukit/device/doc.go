// Package device is where gpukit meets a GPU: a Device pairs a backend (raw
// device memory, copies, streams, events, a clock) with the caching
// allocator of gpukit/alloc, which reproduces PyTorch's.
//
//	d := device.Default()                       // "sim:0", classroom profile (GPUKIT_DEVICE, GPUKIT_PROFILE)
//	b, err := d.Malloc(1<<20, d.DefaultStream()) // through the caching allocator
//	copy(d.Bytes(b), data)                      // sim: the block's real bytes
//
// # Devices and backends
//
// Open names a device: "sim:N" (the default, everywhere), "meta:N" and
// "cuda:N"; the same name always returns the same *Device.
//
//   - sim (gpukit/device/sim): device memory is real host memory (each raw
//     segment a Go []byte), so values are real and computed on the CPU.
//     Addresses are virtual: device N's segments start at 0x7f0000000000 +
//     N*2^44, each new segment lies above every earlier one (addresses are
//     never reused) and is aligned to 512 B. A raw malloc succeeds exactly
//     when the live segments plus the request fit the capacity. For
//     expandable segments (expandable_segments:True) it also reserves
//     address ranges and maps pages into them (alloc.PageMemory): mapped
//     pages count against the capacity like segments, and a released
//     range's addresses serve the next range of its size.
//   - meta: the same accounting and clocks without backing bytes (Bytes is
//     nil, copies move no data), so a lesson can "allocate" 80 GB in
//     microseconds. Its default profile is h100-80gb.
//   - cuda (gpukit/device/cuda, build tag cuda): a real GPU through
//     gorgonia.org/cu v0.9.6. Without the tag, Open("cuda:0") says how to
//     rebuild. cu's package initialisation exits the process when no GPU is
//     present, so only cuda-tagged files import it. GPUKIT_DEVICE=cuda:0
//     makes Default, and so the tensors of lessons and tests, use it.
//
// The Backend interface (package backend, re-exported here) is alloc.Memory
// plus what the rest of gpukit needs from a device.
//
// # Compute
//
// Every backend computes through the Compute interface (Device.Compute;
// HostCompute for host memory), which gpukit/tensor calls for every kernel
// of every op on every device: Fill,
// Copy (converting dtypes), Unary, Binary and BinaryScalar over N-d strided
// operands (stride 0 broadcasts), Reduce and ArgReduce over a contiguous
// [outer, n, inner] array, ReduceStrided for other layouts, a row-major
// Gemm and GemmBatched, and the fused row kernels (Softmax, LayerNorm and
// BatchNorm forward and backward, NLLLoss, Gather, ScatterAdd, Adam). The
// ops are gpukit/ops', the dtypes gpukit/dtypes', the semantics those of
// gpukit/kernels, so a GPU result can be checked against the CPU kernel (gpukit/device/computetest checks every method
// and lists those a backend lacks). Operands are device addresses with
// the storage offset already applied; every call is queued on a stream.
// sim implements it with the CPU kernels on its memory
// (gpukit/device/cpucompute), meta with no-ops, cuda with its own kernels;
// a method a backend lacks returns a *backend.UnsupportedError, which
// gpukit/tensor reports naming the op, the dtype and the device. Its
// Capabilities table says so before the call (computetest checks that it
// agrees with the calls).
//
// # The cost model (sim and meta)
//
// Time is virtual and deterministic: nothing reads the wall clock. There is
// a host clock (Now) and, per stream, the time its queued work completes
// (StreamClock). With p the device's Profile:
//
//	kernel          p.LaunchOverhead + max(Flops/rate, Bytes/p.HBMBandwidth)    rate = p.FP16 if Half else p.FP32
//	host<->device   p.LaunchOverhead + n/p.PCIePinned   (pageable: n/p.PCIePageable)
//	device copy     p.LaunchOverhead + 2n/p.HBMBandwidth (read and write)
//	peer copy       p.LaunchOverhead + n/bw  bw = the slower p.NVLink when both cards have NVLink, else the slower p.PeerBandwidth (PCIe pinned)
//	                (CopyDevice knows no nodes; gpukit/distributed's collectives do, see Nodes)
//	raw malloc      p.MallocLatency + p.MallocPerGiB * n/GiB  (host time)
//	raw free        synchronize the device, then p.FreeLatency  (host time)
//	map n pages     as a raw malloc of their bytes
//	unmap n pages   synchronize the segment's stream, then p.FreeLatency
//
// An operation queued on stream s starts at max(host clock, clock of s) and
// ends its cost later; the clock of s becomes that end. An asynchronous
// operation (Launch, an async copy from or to pinned memory, CopyDevice)
// advances the host clock only by p.LaunchOverhead, so the host runs ahead
// and copies on one stream overlap kernels on another. A synchronous copy,
// and every copy from or to pageable memory even when async is requested
// (the driver stages it through a pinned buffer, and cudaMemcpyAsync then
// returns only when it is done), make the host wait for the end.
// Synchronize and StreamSynchronize bring the host clock up to the streams;
// a raw free synchronizes the whole device, which is why EmptyCache is
// expensive and the caching allocator exists. A raw malloc costs the host
// its latency; a cached allocation costs nothing.
//
// An event records max(host clock, clock of s). Query reports whether the
// host clock has reached it; Synchronize advances the host clock to it;
// ElapsedSince is the difference of two timestamps; WaitEvent makes later
// work on a stream start no earlier than the event. Stream 0 behaves like any
// other stream (as a per-thread default stream does), not like CUDA's legacy
// default stream. Each device has its own host clock: sim:0 and sim:1 are
// independent.
//
// # When bytes move (sim)
//
// Clocks say when work runs; values must agree with them, or a stream
// ordering bug could never show. gpukit/tensor computes eagerly on stream 0,
// so sim moves the bytes of the work it performs itself in virtual-time
// order: an asynchronous copy (pinned host<->device, device<->device) on a
// stream other than 0 is deferred to its virtual start. It is applied, in
// order of start time, once its start is at or before max(host clock,
// clock of stream 0), which every later host or stream-0 operation starts
// after: that happens when its stream, the device or an event after it is
// synchronized, when stream 0 waits for it (WaitEvent), on a raw free, and
// at once when its stream was idle. A synchronous copy, or any copy on
// stream 0, first applies the pending copies that start before it. A copy
// on a busy side stream therefore stays pending while stream 0 goes on; if
// its block is freed without RecordStream and handed out again, stream 0
// writes the block's new contents first and the late copy reads (or
// overwrites) them: the corruption of COURSE.md's mistake 9, visible in the
// values. With RecordStream the allocator keeps the block until the side
// stream's event has passed, by which time the copy has been applied.
// Not modelled: a copy that overwrites memory a stream-0 kernel is still
// reading in virtual time (stream-0 compute has already run eagerly), and a
// copy applied in part. Peer copies move their bytes at once. Meta devices
// have no bytes to move.
//
// # Profiles and where the figures come from
//
//	profile    capacity  memory bw    PCIe      pinned      pageable   FP32        FP16 (dense tensor)
//	classroom  2 GiB     112 GB/s     3.0 x16   12.6 GB/s   5.04 GB/s  2 TFLOPS    4 TFLOPS
//	t4         16 GiB    320 GB/s     3.0 x16   12.6 GB/s   5.04 GB/s  8.1 TFLOPS  65 TFLOPS
//	a100-40gb  40 GiB    1555 GB/s    4.0 x16   25.2 GB/s   10.08 GB/s 19.5 TFLOPS 312 TFLOPS
//	h100-80gb  80 GiB    3350 GB/s    5.0 x16   50.4 GB/s   20.16 GB/s 67 TFLOPS   989 TFLOPS
//
// The figures come from:
//
//   - Published (NVIDIA datasheets): capacity, memory bandwidth, PCIe
//     generation, FP32 and FP16 tensor-core rates of the T4, the A100 40GB and
//     the H100 SXM 80GB. Capacities are the nominal 16/40/80 GB taken as GiB;
//     real cards report a little less (ECC and driver reservations).
//   - From the PCI-SIG specifications: the x16 link rate per direction,
//     15.75 GB/s (3.0), 31.5 GB/s (4.0) and 63 GB/s (5.0).
//   - Modelled, not published: pinned copies reach 80% of the link rate
//     (typical of CUDA's bandwidthTest), pageable copies 40% of the pinned
//     figure; peer copies between cards without NVLink run at the pinned
//     rate; NVLink (a100-40gb, h100-80gb) at half the datasheet's figure,
//     which counts both directions (300 and 450 GB/s each way), without
//     the share PCIe copies lose; kernel launch overhead 5 µs; cudaMalloc
//     20 µs + 40 µs per GiB; cudaFree 15 µs after its device
//     synchronization.
//   - Made up: the whole "classroom" card, a plausible entry-level 2 GiB card
//     that makes out-of-memory errors easy to reach.
//
// # Nodes
//
// A Profile describes one card; a Node describes the machine that holds
// several: how many cards (CardsPerNode), whether it wires their NVLink
// together (NVLink; otherwise they talk over PCIe, Node.IntraPath), and
// the NICs that join it to other nodes (NICs of NICBandwidth each,
// NetLatency per ring step between nodes). gpukit/distributed places a
// process group's ranks on nodes with them.
//
//	node       cards  inside         NICs (each way)        between nodes
//	dgx-h100   8      NVLink 450     8 × 400 Gb/s (50 GB/s)  400 GB/s
//	pcie-node  8      PCIe           1 × 100 Gb/s            12.5 GB/s
//
// dgx-h100 is NVIDIA's DGX H100 datasheet (8 H100 SXM, 4 NVSwitches, 8
// ConnectX-7 400 Gb/s ports for the compute fabric); pcie-node is made
// up, a plausible PCIe-only server. NetLatency is 14 µs in both, NCCL's
// own figure for a network hop of its ring (src/graph/tuning.cc, hwLat
// NET, Ring, Simple).
//
// # A card is not all yours
//
// A process loses device memory before its first tensor: the CUDA context
// (driver code, per-SM local memory and heaps) and what the driver keeps.
// Profile.ContextSize models it: 128 MiB (classroom, an estimate), 350 MiB
// (t4), 448 MiB (a100-40gb, an estimate) and 512 MiB (h100-80gb), with
// Profile.ContextSource saying where each comes from. On sim and meta
// devices MemInfo reports free = capacity − context − reserved, the
// allocator can reserve at most capacity − context, and the out-of-memory
// message counts the context as non-PyTorch memory of this process
// ("Including non-PyTorch memory, this process has …"). That is why
// nvidia-smi shows more than MemoryReserved. A memory fraction is a
// fraction of the whole capacity, as in PyTorch. On cuda devices MemInfo
// is the driver's own answer.
//
// Profile.Source carries the source of each profile's figures. GPUKIT_PROFILE
// selects the profile of sim devices opened without WithProfile;
// GPUKIT_ALLOC_CONF (PYTORCH_CUDA_ALLOC_CONF syntax) the allocator's
// configuration.
//
// The allocator also serves library workspaces, as in PyTorch: the first
// matrix product on a stream takes cuBLAS's workspace from it
// (BlasWorkspace; blas.go cites CublasHandlePool.cpp), sized by
// CUBLAS_WORKSPACE_CONFIG or PyTorch's default for Profile.ComputeMajor
// (WithCublasWorkspaceConfig overrides both). It is on by default, as in
// PyTorch, so memory_allocated grows at the first product on each stream;
// ":0:0" turns it off. Meta devices take none.
//
// # Layout
//
// DESIGN.md sketched one device folder. The shared types live in
// gpukit/device/backend so that gpukit/device (which opens backends) and the
// backends (which implement the interface) do not import each other; the
// simulator is gpukit/device/sim and the GPU backend gpukit/device/cuda.
//
// Every function here is safe for concurrent use.
package device
