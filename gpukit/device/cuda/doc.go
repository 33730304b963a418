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
//   - Gemm is cublasSgemm or cublasDgemm on the caller's stream
//     (cublasSetStream), called through cublas.go (cu/blas links cuBLAS
//     at build time, takes Go slices and cannot select a stream). cuBLAS is
//     column-major and a row-major matrix is its transpose read column-major,
//     so row-major C = op(A)·op(B) is computed as Cᵀ = op(B)ᵀ·op(A)ᵀ: the
//     same call with A and B, m and n swapped and the transpose flags and
//     leading dimensions unchanged.
//   - Elementwise ops and reductions are CUDA C kernels (elementwise.cu,
//     reduce.cu, embedded) that NVRTC compiles to
//     PTX the first time an op is used with a dtype, for the device's
//     compute capability; the module is loaded into the device's context
//     and cached per (kernel, op, dtypes). source.go prepends the #defines
//     that pick the op's expression and the element types.
//   - Elementwise kernels take one by-value argument struct (mirrored in
//     Go, its size checked by a static_assert) holding up to three operand
//     addresses and an N-d layout of at most 8 dimensions, after dimensions
//     that are contiguous in every operand have been merged (a dense op is
//     1-d). 256 threads per block, a grid-stride loop over at most 65536
//     blocks. Launches go through cuLaunchKernel in cgo because cu's Launch
//     copies only 8 bytes per argument.
//   - Reductions: one block per line (shared-memory tree) when inner == 1,
//     one thread per line otherwise (coalesced along inner). Sums
//     accumulate in double; Max/Min propagate NaN; ArgMax/ArgMin take the
//     lowest index on ties and the first NaN, as gpukit/kernels does.
//   - Every operand range is checked against the live allocations before a
//     launch, so a bad address is an error, not a poisoned context.
//
// Only float32 and float64 compute. The kernel sources, their #defines and
// the argument structs (source.go), and the cuBLAS and NVRTC loaders, also
// build with the nvrtc tag, under which nvrtc_test.go compiles every
// specialisation with NVRTC and dl_test.go loads both libraries; that
// needs the libraries but no GPU:
//
//	go test -tags nvrtc ./gpukit/device/cuda/
package cuda
