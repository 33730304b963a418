//go:build !amd64 || purego

package kernels

import (
	"math"
	"math/bits"
	"unsafe"

	"github.com/gpumem/course/gpukit/ops"
)

// This build has none of the amd64 assembly: the use flags are false, so
// the kernels' callers take their own Go paths, and each assembly name is
// the Go loop it equals (its doc in sgemm_kernel_amd64.go), never a stub.
// TestAVXNamesMatchTheirLoops checks these loops, and the assembly where
// it is built, against plain references.

var (
	useAVX    = false
	useAVX2   = false
	useAVX512 = false
)

// avxNamesAreGo reports that the AVX names below are Go loops, callable
// on any CPU.
const avxNamesAreGo = true

// sgemmKernel12x32AVX512 is the 12×32 micro-kernel: one FMA chain per
// element of C, as every assembly micro-kernel (fmaKernel).
func sgemmKernel12x32AVX512(k int, a, b, c *float32, ldc int, alpha float32, accumulate int) {
	fmaKernel(12, 32, k, a, b, c, ldc, alpha, accumulate)
}

// sgemmKernel6x16AVX2 is the 6×16 micro-kernel (fmaKernel).
func sgemmKernel6x16AVX2(k int, a, b, c *float32, ldc int, alpha float32, accumulate int) {
	fmaKernel(6, 16, k, a, b, c, ldc, alpha, accumulate)
}

// transpose16x16AVX writes dst[c·ldd+r] = src[r·lds+c] for r, c < 16.
func transpose16x16AVX(dst *float32, ldd int, src *float32, lds int) {
	d, s := unsafe.Slice(dst, 15*ldd+16), unsafe.Slice(src, 15*lds+16)
	for r := range 16 {
		for c := range 16 {
			d[c*ldd+r] = s[r*lds+c]
		}
	}
}

// packTranspose4AVX writes dst[p·ldd+i] = src[i·lds+p] for i < 4, p < n
// (n a multiple of 8).
func packTranspose4AVX(dst *float32, ldd int, src *float32, lds int, n int) {
	packTransposeGo(dst, ldd, src, lds, n, 4)
}

// packTranspose2AVX is packTranspose4AVX for i < 2.
func packTranspose2AVX(dst *float32, ldd int, src *float32, lds int, n int) {
	packTransposeGo(dst, ldd, src, lds, n, 2)
}

// packTransposeGo writes dst[p·ldd+i] = src[i·lds+p] for i < rows, p < n.
func packTransposeGo(dst *float32, ldd int, src *float32, lds, n, rows int) {
	if n <= 0 {
		return
	}
	d, s := unsafe.Slice(dst, (n-1)*ldd+rows), unsafe.Slice(src, (rows-1)*lds+n)
	for p := range n {
		for i := range rows {
			d[p*ldd+i] = s[i*lds+p]
		}
	}
}

// packRows16AVX writes dst[p·16+j] = src[p·lds+j] for j < 16, p < n
// (n ≥ 1).
func packRows16AVX(dst *float32, src *float32, lds int, n int) {
	d, s := unsafe.Slice(dst, n*16), unsafe.Slice(src, (n-1)*lds+16)
	for p := range n {
		copy(d[p*16:p*16+16], s[p*lds:])
	}
}

// packRowsAVX512 writes, for p < n, the width = popcount(masks[0]) +
// popcount(masks[1]) values of row p (src[p·lds:]) to dst[p·ldd:] and
// zeros the row's lanes from width to ldd.
func packRowsAVX512(dst *float32, ldd int, src *float32, lds int, n int, masks *[4]uint16) {
	if n <= 0 {
		return
	}
	width := bits.OnesCount16(masks[0]) + bits.OnesCount16(masks[1])
	d := unsafe.Slice(dst, n*ldd)
	for p := range n {
		row := d[p*ldd : p*ldd+ldd]
		if width > 0 {
			copy(row, unsafe.Slice((*float32)(unsafe.Add(unsafe.Pointer(src), 4*p*lds)), width))
		}
		clear(row[width:])
	}
}

// addToFloat64AVX adds row[j] to acc[j], in float64, for j < n.
func addToFloat64AVX(acc *float64, row *float32, n int) {
	if n <= 0 {
		return
	}
	a, r := unsafe.Slice(acc, n), unsafe.Slice(row, n)
	for j := range a {
		a[j] += float64(r[j])
	}
}

// adamAVX is AdamUpdate's float32 step without L2 decay for n elements,
// with c = {decay, β1, 1−β1, β2, 1−β2, √(1−β2ᵗ), eps, lr/(1−β1ᵗ)}; each
// operation rounded to float32 in AdamUpdate's order (the conversions
// forbid fused multiply-adds).
func adamAVX(p, grad, m, v *float32, n int, c *[8]float32) {
	if n <= 0 {
		return
	}
	decay, b1, c1, b2, c2, bc2Sqrt, eps, stepSize := c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]
	ps, gs, ms, vs := unsafe.Slice(p, n), unsafe.Slice(grad, n), unsafe.Slice(m, n), unsafe.Slice(v, n)
	for i := range ps {
		pi, gi := float32(ps[i]*decay), gs[i]
		mi := float32(ms[i]*b1) + float32(gi*c1)
		vi := float32(vs[i]*b2) + float32(float32(gi*gi)*c2)
		ms[i], vs[i] = mi, vi
		denom := float32(float32(math.Sqrt(float64(vi)))/bc2Sqrt) + eps
		ps[i] = pi - float32(float32(mi/denom)*stepSize)
	}
}

// arithVVAVX writes d[i] = a[i] op b[i] for i < n, op Add, Sub, Mul or
// Div; stream, a hint about the cache, changes nothing here.
func arithVVAVX(op int, d, a, b *float32, n int, stream int) {
	if n <= 0 {
		return
	}
	binaryVVGo(ops.Binary(op), unsafe.Slice(d, n), unsafe.Slice(a, n), unsafe.Slice(b, n))
}

// arithVSAVX writes d[i] = a[i] op s for i < n (arithVVAVX).
func arithVSAVX(op int, d, a *float32, s float32, n int, stream int) {
	if n <= 0 {
		return
	}
	binaryVSGo(ops.Binary(op), unsafe.Slice(d, n), unsafe.Slice(a, n), s)
}
