//go:build !purego

package kernels

// sgemmKernel8x12NEON computes an 8×12 tile, in sgemm_kernel_arm64.s:
//
//	for i := range 8 {
//		for j := range 12 {
//			var acc float32
//			for p := range k { acc = fma32(a[p*8+i], b[p*12+j], acc) }
//			if accumulate != 0 {
//				c[i*ldc+j] = fma32(acc, alpha, c[i*ldc+j])
//			} else {
//				c[i*ldc+j] = fma32(acc, alpha, 0)
//			}
//		}
//	}
//
// with a and b packed slivers (k groups of 8 and of 12 values). Each
// element of C is one chain of FMAs over k in order, as in the AVX2 and
// AVX-512 kernels, so all three give the same bits.
//
//go:noescape
func sgemmKernel8x12NEON(k int, a, b, c *float32, ldc int, alpha float32, accumulate int)

// useNEON selects the NEON micro-kernel: Advanced SIMD is part of every
// ARMv8-A core. Tests clear it to run the portable Go kernel.
var useNEON = true

func init() {
	// 24 of the 32 vector registers hold the tile's accumulators, two
	// hold A's eight values and three B's twelve: BLIS's shape for
	// Cortex-A57-class cores.
	gemmMR, gemmNR = 8, 12
}
