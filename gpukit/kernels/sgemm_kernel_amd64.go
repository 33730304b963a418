//go:build !purego

package kernels

import "golang.org/x/sys/cpu"

// sgemmKernel6x16AVX2 is implemented in sgemm_kernel_amd64.s.
//
//go:noescape
func sgemmKernel6x16AVX2(k int, a, b, c *float32, ldc int, alpha float32, accumulate int)

// useAVX2 selects the assembly micro-kernel. Go has no SIMD intrinsics in the
// default build, and scalar Go code tops out at ~1/8 of the FMA throughput of
// an AVX2 core, so the inner 6×16 kernel is the one place where assembly pays.
var useAVX2 = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// sgemmKernel12x32AVX512 is implemented in sgemm512_amd64.s.
//
//go:noescape
func sgemmKernel12x32AVX512(k int, a, b, c *float32, ldc int, alpha float32, accumulate int)

// useAVX512 selects the 12×32 AVX-512 micro-kernel (twice the FMA width of
// AVX2; x/sys/cpu reports AVX-512 only when the OS saves its registers).
var useAVX512 = cpu.X86.HasAVX512F && useAVX2

func init() {
	if useAVX512 {
		gemmMR, gemmNR = 12, 32
	}
}

// transpose16x16AVX is implemented in transpose_amd64.s.
//
//go:noescape
func transpose16x16AVX(dst *float32, ldd int, src *float32, lds int)

// packTranspose4AVX is implemented in pack_amd64.s.
//
//go:noescape
func packTranspose4AVX(dst *float32, ldd int, src *float32, lds int, n int)

// packTranspose2AVX is implemented in pack_amd64.s.
//
//go:noescape
func packTranspose2AVX(dst *float32, ldd int, src *float32, lds int, n int)

// packRows16AVX is implemented in pack_amd64.s.
//
//go:noescape
func packRows16AVX(dst *float32, src *float32, lds int, n int)

// packRowsAVX512 is implemented in pack_amd64.s.
//
//go:noescape
func packRowsAVX512(dst *float32, ldd int, src *float32, lds int, n int, masks *[4]uint16)

// addToFloat64AVX is implemented in reduce_amd64.s.
//
//go:noescape
func addToFloat64AVX(acc *float64, row *float32, n int)

// adamAVX is implemented in adam_amd64.s.
//
//go:noescape
func adamAVX(p, grad, m, v *float32, n int, c *[8]float32)

// useAVX selects the 8-wide Adam update (AVX, no FMA needed).
var useAVX = cpu.X86.HasAVX

// avxNamesAreGo reports that the AVX names are Go loops; here they are
// the assembly, callable only where the CPU has the features.
const avxNamesAreGo = false
