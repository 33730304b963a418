//go:build !arm64 || purego

package kernels

import "unsafe"

// useNEON is false: this build has no NEON micro-kernel.
var useNEON = false

// sgemmKernel8x12NEON is the NEON micro-kernel's Go loop, one FMA chain
// per element of C (fma32 rounds as FMLA does); sgemm_kernel_arm64.go
// documents it. It is slow, and serves as the reference of the
// assembly kernels' bits (TestSgemmKernelMatchesFMAChain).
func sgemmKernel8x12NEON(k int, a, b, c *float32, ldc int, alpha float32, accumulate int) {
	const mr, nr = 8, 12
	as, bs := unsafe.Slice(a, k*mr), unsafe.Slice(b, k*nr)
	cs := unsafe.Slice(c, (mr-1)*ldc+nr)
	for i := range mr {
		for j := range nr {
			var acc float32
			for p := range k {
				acc = fma32(as[p*mr+i], bs[p*nr+j], acc)
			}
			old := float32(0)
			if accumulate != 0 {
				old = cs[i*ldc+j]
			}
			cs[i*ldc+j] = fma32(acc, alpha, old)
		}
	}
}
