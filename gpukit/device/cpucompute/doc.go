// Package cpucompute implements backend.Compute on the CPU with the kernels
// of gpukit/kernels, for memory whose bytes the host can reach: the
// simulated device (gpukit/device/sim) and host memory (gpukit/tensor).
// It is parameterised by a Memory that resolves a device address range to
// the bytes behind it, once per operand and call (no per-element work).
//
// float32 and float64 run the kernels' fast paths (vector kernels,
// parallel row kernels, GEMM); float16 and bfloat16 compute in float32
// (contiguous unary and binary ops a stripe at a time through the float32
// kernels) and the integer and bool types through generic loops in
// float64, exactly as gpukit/tensor computed on host bytes before the
// Compute interface covered every op, so results are bitwise those of
// earlier releases. Calls run synchronously on the calling goroutine (the
// stream argument orders nothing: the work is done when the call returns;
// a simulated device models the time separately).
//
// The only UnsupportedError it returns is for Adam in dtypes other than
// float32 and float64 (gpukit/tensor composes that step from elementwise
// ops instead), the one pair of backend.Domain its Capabilities leaves out.
package cpucompute
