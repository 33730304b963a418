// Package cuda is the GPU backend of gpukit/device, built only with
// `-tags cuda` against the CUDA 11.8 or 12 driver header cuda.h
// (gorgonia.org/cu v0.9.6 does not build against CUDA 13's); no GPU is
// needed to build it.
//
// # One binary for CUDA 11, 12 and 13
//
// A cuda binary links only the driver, libcuda.so.1, whose API every newer
// driver keeps (a binary built with CUDA 11.8's cuda.h runs on driver 580,
// CUDA 13). cuBLAS and NVRTC, whose sonames change with each CUDA major
// version, are opened with dlopen the first time a Gemm or a kernel needs
// them (dl.go, cublas.go, nvrtc.go): the newest of libcublas.so.13, .12,
// .11 and libnvrtc.so.13, .12, .11.2, .11.1, .11.0, looked for on the
// loader's path (LD_LIBRARY_PATH, ld.so.cache), in the CUDA toolkit's
// folders and in the nvidia/* folders of PyTorch's pip wheels under the
// usual site-packages (libsearch.go). When none opens, the error names
// every soname and folder tried. Allocation, copies, streams and events
// need neither library.
//
// It uses gorgonia.org/cu (the CUDA driver API): cuMemAlloc and cuMemFree
// for raw memory (and, for expandable segments, the virtual memory
// management calls of vmm.go), cuMemcpy{HtoD,DtoH,DtoD,Peer}[Async] for
// copies, streams, timed events and cuMemGetInfo. Pinned host memory comes from
// cuMemHostAlloc and cuMemFreeHost through a few lines of cgo, since cu does
// not wrap them.
//
// cu's package initialisation calls os.Exit(1) when no GPU is present, so
// only files with the cuda build tag import it; without the tag (or the
// nvrtc tag, see below) this package holds only the library search of
// libsearch.go, and device.Open("cuda:N") explains how to rebuild.
//
// Differences from the sim backend: clocks are real (Now is the wall time
// since the device was opened), Launch has nothing to run and does nothing,
// StreamClock synchronizes the stream and returns Now, and Bytes is nil (use
// the copies). The Profile is read from the device (name, total memory,
// memory bandwidth from the memory clock and bus width); the other figures
// come from the built-in profile of the same card, when there is one.
//
// # Compute
//
// Backend implements backend.Compute (compute.go):
//
//   - Gemm is cublasSgemm or cublasDgemm, or for float16 and bfloat16
//     cublasGemmEx computing in float32 (CUBLAS_COMPUTE_32F), on the
//     caller's stream (cublasSetStream), called through cublas.go (cu/blas
//     links cuBLAS at build time, takes Go slices and cannot select a
//     stream). cuBLAS is
//     column-major and a row-major matrix is its transpose read column-major,
//     so row-major C = op(A)·op(B) is computed as Cᵀ = op(B)ᵀ·op(A)ᵀ: the
//     same call with A and B, m and n swapped and the transpose flags and
//     leading dimensions unchanged.
//   - Elementwise ops, reductions and the row kernels are CUDA C kernels
//     (elementwise.cu, reduce.cu, rows.cu, index.cu, with layout.cuh and
//     dtype.cuh, embedded) that NVRTC compiles to PTX the first time they
//     are needed, for the device's compute capability; the module is
//     loaded into the device's context and cached per program. source.go
//     prepends the #defines that pick the element types. An elementwise
//     program holds every op of its kind for one dtype, one entry point
//     per op (unary_exp, binary_greaterequal, copy_from_float16, ...), so
//     that a dtype's unary ops cost one compilation; a reduction program is
//     one op.
//   - Elementwise kernels (elementwise.cu, planned in elementwise.go): Fill and
//     Copy for every dtype and every pair of dtypes (float32, float64, float16,
//     bfloat16, int64, int32, bool), converting as cpucompute's Load and Store:
//     float16 and bfloat16 round to nearest even from float32 (a float64 through
//     float32, as the CPU), overflow to ±Inf, underflow to subnormals, keep NaN
//     a quiet NaN; integers truncate toward zero; bool is 1 for anything but 0
//     (NaN included). A copy within one dtype moves the bits. dtype.cuh writes
//     the 16-bit conversions with integer operations (not cuda_fp16.h), so that
//     the emulation runs the same code. NaN and values out of range convert
//     to the minimum integer, as Go on amd64 (the device's own conversion
//     would saturate).
//   - Unary (all ops.Unary) and Binary and BinaryScalar (all
//     ops.Binary) on float32, float64, float16, bfloat16, int64 and int32:
//     float32 and the 16-bit floats compute in float32 (load, op, round once, as
//     cpucompute), float64 and the integers in float64; SigmoidDeriv and
//     TanhDeriv in float64, Pow in float64; a scalar is rounded to the type
//     computed in. The comparisons (Greater, Less, Equal, GreaterEqual,
//     LessEqual) also write a Bool dst (0 or 1).
//   - Where (cond Bool, any dtype: it moves bits) and InRange (Bool dst, any
//     source dtype, compared in float64 against lo and hi as given; NaN is in no
//     range).
//   - The elementwise kernels take one by-value argument struct (mirrored in Go,
//     its size and field offsets checked by static_asserts) holding up to four
//     operand addresses and an N-d layout of at most 8 dimensions, after
//     dimensions that are contiguous in every operand have been merged (a dense
//     op is 1-d). 256 threads per block, a grid-stride loop over at most 65536
//     blocks. Launches go through cuLaunchKernel in cgo because cu's Launch
//     copies only 8 bytes per argument.
//   - Reductions (float32, float64, float16, bfloat16): one block per line
//     (shared-memory tree) when inner == 1, one thread per line otherwise
//     (coalesced along inner). Sums accumulate in double and round once
//     into the dtype (a 16-bit one through float32, as cpucompute); Max/Min
//     propagate NaN; ArgMax/ArgMin take the lowest index on ties and the
//     first NaN, as gpukit/kernels does.
//   - The fused row kernels (rows.cu) follow the CPU kernels sim uses
//     operation by operation (gpukit/kernels rows.go and adam.go, and
//     gpukit/tensor for BatchNorm and the NLL loss): softmax and
//     log-softmax and LayerNorm forward and backward take one block per
//     row, BatchNorm forward and backward one block per channel (all its
//     statistics and arithmetic in double, as the CPU), LayerNorm's dw and
//     db one block per 32 columns whose 8 warps split the rows. Every sum
//     is in double: each thread sums a strided part, the block combines the
//     parts in a fixed tree, so results do not depend on scheduling, but
//     they are not the CPU's eight-lane sums bit for bit: expect a few ulp
//     (the emulation tests allow 4e-6 relative for float32, 1e-13 for
//     float64). NLLLoss sums in row order in one block and Adam does
//     kernels.AdamUpdate's operations in its order, so both equal the CPU
//     bit for bit (given the same inputs).
//   - Gather is one thread per element (any dtype: it moves bits);
//     ScatterAdd (float32, float64) one thread per line of the index along
//     dim, which adds its elements in order: no atomics, deterministic, and
//     the addends of a colliding index arrive in the CPU's order. Index
//     values are trusted (the caller checks them); NLLLoss turns a target
//     out of range into a NaN loss rather than a stray read.
//   - The sparse CSR products (float32, float64; int64 or int32 indices)
//     sum each output element in one thread, in the element type, in
//     gpukit/kernels' order, so they equal the CPU bit for bit with no
//     atomics: CSRMatmul (a·b) and CSRSampledDot (g·bᵀ at the entries)
//     take one block per row of a; CSRMatmulT (aᵀ·g) one block per column
//     of a, each scanning all the entries in CSR order for its column (a
//     cost of cols·(rows+nnz) index reads: deterministic without a
//     transposed copy of the pattern). The structure is trusted (the
//     caller checks it); a column out of range is skipped, not read.
//   - Programs compile with --fmad=false and IEEE division, square root and
//     subnormals, so a*b + c rounds twice, as in Go; the only fused
//     multiply-adds are the explicit ones of LayerNorm (as
//     kernels.normRow32) and of GeluDeriv and GeluTanhDeriv (as
//     kernels' geluGrad32 outside its polynomial's interval, and
//     geluTanhGrad32).
//   - Every operand range is checked against the live allocations before a
//     launch, so a bad address is an error, not a poisoned context. Each
//     row-kernel call is planned first (rows.go: sizes, addresses, dtypes,
//     the launches and the ranges they touch), without the driver.
//
// What still returns a *backend.UnsupportedError (the pairs that
// Backend.Capabilities does not list; capabilities.go reads the table off
// the same dtype checks): Unary, Binary and
// BinaryScalar on Bool operands; Reduce and ArgReduce on the integer and
// bool dtypes; Gemm on the integer and bool dtypes; the row kernels (softmax, LayerNorm, BatchNorm, NLL loss, Adam)
// and ScatterAdd on anything but float32 and float64; ReduceStrided,
// ArgReduceStrided and GemmBatched always (gpukit/tensor falls back to a
// contiguous copy and Reduce, or one Gemm per product).
//
// The kernel sources, their #defines and the argument structs (source.go,
// rows.go, elementwise.go), and the cuBLAS
// and NVRTC loaders, also build with the nvrtc tag, under which
// nvrtc_test.go compiles every specialisation with NVRTC (checking that
// each C argument struct has its Go twin's size and field names and sizes),
// dl_test.go loads both libraries, rows_test.go and elementwise_test.go
// test the plans, and the emulation tests (emu_test.go, rows_emu_test.go,
// elementwise_emu_test.go) compile each kernel's very source with the
// host's g++ (skipped without one), run it with one std::thread per CUDA
// thread and a std::barrier for __syncthreads (a program without
// __syncthreads runs a block's threads in turn), and compare with the CPU
// (gpukit/kernels, cpucompute's Load and Store) on special values: NaN,
// ±Inf, ±0, subnormals, float16's overflow and underflow boundaries and
// rounding ties; g++ also checks each Args field's offset.
// That needs the libraries but no GPU:
//
//	go test -tags nvrtc ./gpukit/device/cuda/
package cuda
