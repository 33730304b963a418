package kernels

import (
	"fmt"
	"sync"
	"unsafe"
)

// Blocking parameters for Sgemm, in the BLIS/GotoBLAS scheme:
//
//   - gemmMR×gemmNR is the register tile computed by one micro-kernel call:
//     12×32 float32 (24 AVX-512 registers of accumulators) where the CPU
//     has AVX-512, 6×16 (12 AVX2 registers) otherwise; both are the
//     shapes OpenBLAS and BLIS use on those cores. On arm64 it is 8×12
//     (24 NEON registers, BLIS's armv8a shape). The choice is made
//     once, at start-up (sgemm_kernel_amd64.go, sgemm_kernel_arm64.go).
//   - gemmKC is the depth of one packed panel. A kc×NR sliver of B
//     (256·32·4 = 32 KiB at most) stays in L1 while the micro-kernel walks
//     down A.
//   - gemmMC rows of A (144·256·4 = 144 KiB) are packed to sit in L2.
//   - gemmNC columns of B form the panel shared by all MC blocks (L2/L3).
//
// The tile shape changes which products a lane accumulates, never their
// order (each C element is one chain of FMAs over k in order), so both
// kernels give the same bits.
const (
	gemmKC = 256
	gemmMC = 144
	gemmNC = 3072
	maxMR  = 12
	maxNR  = 32
)

var gemmMR, gemmNR = 6, 16

// gemmPiecesPerWorker is how many rectangles of C per goroutine Sgemm
// cuts a product into (parallelPieces). Each rectangle packs its own
// operands, so more pieces cost more packing; two let a goroutine that
// wakes late leave a piece of its share to the others.
const gemmPiecesPerWorker = 2

// gemmParallelFlops is the multiply-add count (m·n·k) above which Sgemm
// splits C across goroutines; smaller products finish before a goroutine
// would even be scheduled.
const gemmParallelFlops = 96 * 96 * 96

type gemmBufs struct {
	a []float32 // packed MC×KC block of A, MR-row slivers
	b []float32 // packed KC×NC panel of B, NR-column slivers
}

var gemmPool = sync.Pool{New: func() any {
	return &gemmBufs{
		a: make([]float32, gemmMC*gemmKC),
		b: make([]float32, gemmKC*gemmNC),
	}
}}

// Sgemm computes C = alpha·op(A)·op(B) + beta·C for row-major float32
// matrices, where op(X) is X or Xᵀ. op(A) is m×k, op(B) is k×n and C is m×n.
// lda, ldb and ldc are the row strides (leading dimensions) of the matrices as
// stored, so a non-transposed A needs lda ≥ k and a transposed one lda ≥ m.
// When beta == 0, C is not read (NaNs in C do not propagate), as in BLAS.
//
// The semantics match cblas_sgemm(CblasRowMajor, ...). Sgemm panics if a
// slice is too short for the given sizes and strides.
func Sgemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	checkGemm(transA, transB, m, n, k, len(a), lda, len(b), ldb, len(c), ldc)
	if m == 0 || n == 0 {
		return
	}
	if k == 0 || alpha == 0 {
		scaleC(c, ldc, m, n, beta)
		return
	}
	sgemmWorkers(workers(m*n*k, gemmParallelFlops), transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// sgemmWorkers is Sgemm on at most w goroutines. The split changes which
// goroutine computes an element of C, and for alpha = 1 (every tensor
// matmul) never how: the result is the same for any w.
func sgemmWorkers(w int, transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	// Partition C into one rectangle per worker along its longer side, so
	// workers never share output cache lines across the cut (NR·4 = 64 bytes).
	splitN := n >= m
	total, align := m, gemmMR
	if splitN {
		total, align = n, gemmNR
	}
	if w > 1 && total/align < w {
		w = max(1, total/align)
	}
	parallelPieces(total, w, w*gemmPiecesPerWorker, align, func(lo, hi int) {
		i0, i1, j0, j1 := 0, m, lo, hi
		if !splitN {
			i0, i1, j0, j1 = lo, hi, 0, n
		}
		aOff := i0 * lda
		if transA {
			aOff = i0
		}
		bOff := j0
		if transB {
			bOff = j0 * ldb
		}
		cs := c[i0*ldc+j0:]
		// With beta = 0 the first k-panel writes C without reading it,
		// so C needs no clearing pass first.
		if beta != 0 {
			scaleC(cs, ldc, i1-i0, j1-j0, beta)
		}
		sgemmBlock(transA, transB, i1-i0, j1-j0, k, alpha, a[aOff:], lda, b[bOff:], ldb, beta == 0, cs, ldc)
	})
}

// checkGemm validates sizes up front: the assembly micro-kernel has no bounds
// checks, so every access it makes must be proven in range here.
func checkGemm(tA, tB bool, m, n, k, la, lda, lb, ldb, lc, ldc int) {
	if m < 0 || n < 0 || k < 0 {
		panic(fmt.Sprintf("kernels: negative gemm size m=%d n=%d k=%d", m, n, k))
	}
	ar, ac := m, k
	if tA {
		ar, ac = k, m
	}
	br, bc := k, n
	if tB {
		br, bc = n, k
	}
	check := func(name string, rows, cols, l, ld int) {
		if ld < max(1, cols) {
			panic(fmt.Sprintf("kernels: gemm %s: leading dimension %d < %d", name, ld, cols))
		}
		if rows > 0 && cols > 0 && l < (rows-1)*ld+cols {
			panic(fmt.Sprintf("kernels: gemm %s: slice length %d too short for %d×%d with stride %d", name, l, rows, cols, ld))
		}
	}
	check("A", ar, ac, la, lda)
	check("B", br, bc, lb, ldb)
	check("C", m, n, lc, ldc)
}

// scaleC computes C = beta·C over an m×n block, writing zeros for beta == 0.
func scaleC(c []float32, ldc, m, n int, beta float32) {
	if beta == 1 {
		return
	}
	for i := 0; i < m; i++ {
		row := c[i*ldc : i*ldc+n]
		if beta == 0 {
			clear(row)
			continue
		}
		for j := range row {
			row[j] *= beta
		}
	}
}

// sgemmBlock computes C += alpha·op(A)·op(B) on one goroutine, with a, b and c
// already offset to the block's origin; with overwrite, C = alpha·op(A)·op(B)
// and C is not read.
func sgemmBlock(tA, tB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, overwrite bool, c []float32, ldc int) {
	bufs := gemmPool.Get().(*gemmBufs)
	defer gemmPool.Put(bufs)
	var edge [maxMR * maxNR]float32
	for jc := 0; jc < n; jc += gemmNC {
		nc := min(gemmNC, n-jc)
		for pc := 0; pc < k; pc += gemmKC {
			kc := min(gemmKC, k-pc)
			packB(bufs.b, tB, b, ldb, pc, kc, jc, nc)
			for ic := 0; ic < m; ic += gemmMC {
				mc := min(gemmMC, m-ic)
				packA(bufs.a, tA, a, lda, ic, mc, pc, kc)
				// Only the first k-panel may overwrite: the later ones
				// add to what it wrote.
				macroKernel(mc, nc, kc, alpha, bufs.a, bufs.b, overwrite && pc == 0, c[ic*ldc+jc:], ldc, &edge)
			}
		}
	}
}

// macroKernel multiplies a packed mc×kc block of A by a packed kc×nc panel of
// B into C, adding to C or, with overwrite, replacing it. Full MR×NR tiles
// are written in place; ragged edge tiles go through a scratch tile so the
// micro-kernel never needs masking.
func macroKernel(mc, nc, kc int, alpha float32, ap, bp []float32, overwrite bool, c []float32, ldc int, edge *[maxMR * maxNR]float32) {
	for jr := 0; jr < nc; jr += gemmNR {
		cols := min(gemmNR, nc-jr)
		bs := bp[jr*kc : jr*kc+gemmNR*kc]
		for ir := 0; ir < mc; ir += gemmMR {
			rows := min(gemmMR, mc-ir)
			as := ap[ir*kc : ir*kc+gemmMR*kc]
			if rows == gemmMR && cols == gemmNR {
				ct := c[ir*ldc+jr : ir*ldc+jr+(gemmMR-1)*ldc+gemmNR]
				microKernel(kc, as, bs, ct, ldc, alpha, overwrite)
				continue
			}
			e := edge[:gemmMR*gemmNR]
			microKernel(kc, as, bs, e, gemmNR, alpha, true)
			for i := 0; i < rows; i++ {
				crow := c[(ir+i)*ldc+jr : (ir+i)*ldc+jr+cols]
				erow := e[i*gemmNR : i*gemmNR+cols]
				if overwrite {
					// e is fma(acc, alpha, +0), never −0: the bits a
					// cleared C plus e would hold.
					copy(crow, erow)
					continue
				}
				for j := range crow {
					crow[j] += erow[j]
				}
			}
		}
	}
}

// microKernel computes the MR×NR tile c += alpha·as·bs, or with overwrite
// c = 0 + alpha·as·bs without reading c. The slices were sliced to their
// exact extents by the caller, which is what makes the unchecked assembly
// access safe.
func microKernel(kc int, as, bs, c []float32, ldc int, alpha float32, overwrite bool) {
	accumulate := 1
	if overwrite {
		accumulate = 0
	}
	if useAVX512 {
		sgemmKernel12x32AVX512(kc, unsafe.SliceData(as), unsafe.SliceData(bs), unsafe.SliceData(c), ldc, alpha, accumulate)
		return
	}
	if useAVX2 {
		sgemmKernel6x16AVX2(kc, unsafe.SliceData(as), unsafe.SliceData(bs), unsafe.SliceData(c), ldc, alpha, accumulate)
		return
	}
	if useNEON {
		sgemmKernel8x12NEON(kc, unsafe.SliceData(as), unsafe.SliceData(bs), unsafe.SliceData(c), ldc, alpha, accumulate)
		return
	}
	if overwrite {
		for i := 0; i < gemmMR; i++ {
			clear(c[i*ldc : i*ldc+gemmNR])
		}
	}
	microKernelGo(kc, as, bs, c, ldc, alpha)
}

// microKernelGo is the portable micro-kernel: the same packed layout,
// computed as 2×4 sub-tiles whose eight accumulators are scalar locals, so
// the compiler keeps them in registers (an array of accumulators would live
// in memory and cost a load and a store per multiply-add). Scalar Go
// reaches about one multiply-add per cycle, which is why amd64 uses the
// assembly kernel.
func microKernelGo(kc int, as, bs, c []float32, ldc int, alpha float32) {
	as = as[:kc*gemmMR]
	bs = bs[:kc*gemmNR]
	for i := 0; i < gemmMR; i += 2 {
		for j := 0; j < gemmNR; j += 4 {
			var c00, c01, c02, c03, c10, c11, c12, c13 float32
			ai, bj := i, j
			for p := 0; p < kc; p++ {
				a0, a1 := as[ai], as[ai+1]
				b := bs[bj : bj+4 : bj+4]
				b0, b1, b2, b3 := b[0], b[1], b[2], b[3]
				c00 += a0 * b0
				c01 += a0 * b1
				c02 += a0 * b2
				c03 += a0 * b3
				c10 += a1 * b0
				c11 += a1 * b1
				c12 += a1 * b2
				c13 += a1 * b3
				ai += gemmMR
				bj += gemmNR
			}
			r0 := c[i*ldc+j : i*ldc+j+4 : i*ldc+j+4]
			r0[0] += alpha * c00
			r0[1] += alpha * c01
			r0[2] += alpha * c02
			r0[3] += alpha * c03
			r1 := c[(i+1)*ldc+j : (i+1)*ldc+j+4 : (i+1)*ldc+j+4]
			r1[0] += alpha * c10
			r1[1] += alpha * c11
			r1[2] += alpha * c12
			r1[3] += alpha * c13
		}
	}
}

// packA copies rows [i0,i0+mc) × cols [p0,p0+kc) of op(A) into dst as
// MR-row slivers: sliver s holds kc groups of MR values, so the micro-kernel
// reads A strictly sequentially. Rows past mc are zero-padded.
func packA(dst []float32, tA bool, a []float32, lda, i0, mc, p0, kc int) {
	for ir := 0; ir < mc; ir += gemmMR {
		rows := min(gemmMR, mc-ir)
		d := dst[ir*kc : ir*kc+gemmMR*kc]
		if !tA {
			packTransposed(d, gemmMR, a[(i0+ir)*lda+p0:], lda, rows, kc)
			continue
		}
		packRows(d, gemmMR, a[p0*lda+i0+ir:], lda, rows, kc)
	}
}

// packB copies rows [p0,p0+kc) × cols [j0,j0+nc) of op(B) into dst as
// NR-column slivers of kc groups of NR values. Columns past nc are zeroed.
func packB(dst []float32, tB bool, b []float32, ldb, p0, kc, j0, nc int) {
	for jr := 0; jr < nc; jr += gemmNR {
		cols := min(gemmNR, nc-jr)
		d := dst[jr*kc : jr*kc+gemmNR*kc]
		if !tB {
			packRows(d, gemmNR, b[p0*ldb+j0+jr:], ldb, cols, kc)
			continue
		}
		packTransposed(d, gemmNR, b[(j0+jr)*ldb+p0:], ldb, cols, kc)
	}
}

// packRows copies the first width values of n rows of src (row p at
// src[p·lds:]) into d as groups of ld, d[p·ld+j] = src[p·lds+j], and zeros
// each group's lanes from width to ld. With AVX-512 (ld ≤ 32) each row is
// two masked moves (packRowsAVX512), with AVX2 whole rows of 16 two moves
// (packRows16AVX); otherwise a copy per row.
func packRows(d []float32, ld int, src []float32, lds, width, n int) {
	d = d[:n*ld]
	if n == 0 {
		return
	}
	if useAVX512 && ld <= 32 {
		// The assembly reads src[p·lds : p·lds+width] and writes
		// d[p·ld : p·ld+ld] for p < n: prove both in range first (with
		// width 0 it reads nothing).
		if width > 0 {
			_ = src[(n-1)*lds+width-1]
		}
		lanes := func(k int) uint16 { return uint16(1<<min(max(k, 0), 16) - 1) }
		masks := [4]uint16{lanes(width), lanes(width - 16), lanes(ld), lanes(ld - 16)}
		packRowsAVX512(&d[0], ld, unsafe.SliceData(src), lds, n, &masks)
		return
	}
	if useAVX && width == 16 && ld == 16 {
		// The AVX2 kernel's whole slivers: two moves a row, where copy
		// called memmove for each (packRows16AVX). Prove the ranges the
		// assembly reads and writes first.
		_ = src[(n-1)*lds+15]
		packRows16AVX(&d[0], unsafe.SliceData(src), lds, n)
		return
	}
	for p := 0; p < n; p++ {
		g := d[p*ld : p*ld+ld]
		clear(g[copy(g, src[p*lds:p*lds+width]):])
	}
}

// packTransposed writes rows values of each of n columns of src (row r at
// src[r·lds:]) as one group per column, d[p·ldd+r] = src[r·lds+p], and zeros
// the group's lanes from rows to ldd. Four whole rows at a time and eight
// columns at a time go through the AVX transpose (packTranspose4AVX), and
// two rows left over (the AVX2 kernel's six) through packTranspose2AVX;
// the ragged rest is copied one value at a time.
func packTransposed(d []float32, ldd int, src []float32, lds, rows, n int) {
	d = d[:n*ldd]
	done, covered := 0, 0 // columns [0, done) of rows [0, covered) are written
	if useAVX && n >= 8 {
		done = n &^ 7
		for ; covered+4 <= rows; covered += 4 {
			// The assembly writes d[p·ldd+r .. +3] and reads src[(r+i)·lds+p]
			// for p < done, i < 4: prove both in range before the call.
			r := covered
			_ = d[(done-1)*ldd+r+3]
			_ = src[(r+3)*lds+done-1]
			packTranspose4AVX(&d[r], ldd, &src[r*lds], lds, done)
		}
		if r := covered; r+2 <= rows {
			_ = d[(done-1)*ldd+r+1]
			_ = src[(r+1)*lds+done-1]
			packTranspose2AVX(&d[r], ldd, &src[r*lds], lds, done)
			covered += 2
		}
	}
	for r := 0; r < rows; r++ {
		p0 := done
		if r >= covered {
			p0 = 0
		}
		row := src[r*lds : r*lds+n]
		for p := p0; p < n; p++ {
			d[p*ldd+r] = row[p]
		}
	}
	if rows < ldd {
		for p := 0; p < n; p++ {
			clear(d[p*ldd+rows : p*ldd+ldd])
		}
	}
}

// fmaKernel is what every micro-kernel computes for its mr×nr tile, as
// one FMA chain per element of C (fma32 rounds as VFMADD and FMLA do):
//
//	acc = Σₚ a[p·mr+i]·b[p·nr+j], fused in order of p
//	C[i,j] = acc·alpha + (accumulate ≠ 0 ? C[i,j] : 0), fused
//
// It is the Go loop behind the assembly kernels' names where they are not
// built, and slow: the callers take microKernelGo's blocked loop instead.
func fmaKernel(mr, nr, k int, a, b, c *float32, ldc int, alpha float32, accumulate int) {
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
