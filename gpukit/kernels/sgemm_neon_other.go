//go:build !arm64 || purego

package kernels

// useNEON is false: this build has no NEON micro-kernel.
var useNEON = false

// sgemmKernel8x12NEON is the NEON micro-kernel's Go loop (fmaKernel);
// sgemm_kernel_arm64.go documents it. It is slow, and serves as the
// reference of the assembly kernels' bits (TestSgemmKernelMatchesFMAChain).
func sgemmKernel8x12NEON(k int, a, b, c *float32, ldc int, alpha float32, accumulate int) {
	fmaKernel(8, 12, k, a, b, c, ldc, alpha, accumulate)
}
