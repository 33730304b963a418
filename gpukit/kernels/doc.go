// Package kernels holds the CPU compute kernels behind gpukit's simulated
// GPU: whenever the simulator "launches" a kernel, the real values are
// computed here, on plain Go slices.
//
// The package knows nothing about tensors. Callers pass either contiguous
// slices (the fast paths: Sgemm, Binary, Unary, Reduce) or N-d strided views
// described by a Strided value plus a shape (BinaryStrided, UnaryStrided,
// Copy). Broadcasting is a stride of 0, as in NumPy and PyTorch; negative
// strides are not supported.
//
// # Design
//
//   - Matrix multiply (Sgemm) follows the GotoBLAS/BLIS scheme: op(A) and
//     op(B) are packed into cache-sized panels, and a register-blocked
//     micro-kernel (12×32 in AVX-512 or 6×16 in AVX2+FMA assembly on amd64,
//     8×12 in NEON assembly on arm64, portable Go elsewhere or with the
//     purego build tag) does the
//     arithmetic and prefetches its C tile. Transposes are absorbed by the
//     packing (an AVX transpose where a sliver's values lie a row apart),
//     so all four transpose combinations run at about the same speed; with
//     beta = 0 the first k-panel writes C without reading it. C is cut into
//     rectangles that runtime.GOMAXPROCS goroutines claim in turn. Dgemm
//     delegates to gonum.
//   - Elementwise kernels first merge dimensions that are contiguous for all
//     operands, so a dense N-d operation becomes one flat loop and a
//     row-vector broadcast becomes rows of contiguous loops. Each (op, layout)
//     pair has its own loop with the op resolved outside it. Work over ~64K
//     elements is cut into flat element ranges that the goroutines claim
//     in turn (parallelFor), the caller first.
//   - The goroutines that help a caller stay awake for 5 ms after their
//     last piece and take the next call's pieces without being woken, as
//     OpenMP's threads spin before they sleep (parallel.go): a training
//     step calls its kernels back to back, and a woken thread is slow to
//     get a core of its own on a virtual machine.
//   - Copy turns a strided view into a contiguous array; when the source is
//     transposed it works in 64×64 tiles of 16×16 micro-blocks so every cache
//     line read or written is used in full (AVX shuffles on amd64).
//   - Reductions work on a [outer, n, inner] view of contiguous data and
//     accumulate sums in float64.
//   - The float32 transcendental functions (exp, log, sigmoid, tanh, erf,
//     GELU in both forms and the derivatives) run eight lanes at a time in
//     AVX2+FMA assembly on amd64 and four in NEON assembly on arm64, both
//     bitwise equal to their Go reference (vmath.go), which is also the
//     fallback elsewhere (README.md, "arm64 and purego");
//     softmax, log-softmax and LayerNorm work on whole rows, split across
//     goroutines, with a per-row reduction order that makes the results
//     independent of the number of cores (rows.go). README.md has their
//     accuracy and speed against PyTorch's.
//   - AdamUpdate is an optimizer step in one pass over a parameter, its
//     gradient and Adam's two moments, eight float32 lanes at a time in
//     AVX assembly on amd64, with the scalar loop's operations in the
//     same order, so both round alike.
//
// The generic functions accept any ~float32 or ~float64 element type; the
// two have different GC shapes, so each gets its own compiled body and the
// generics cost nothing at run time.
//
// All functions are safe for concurrent use on non-overlapping outputs, and
// panic (rather than corrupt memory) when a slice is too short for the sizes
// and strides they are given.
package kernels
