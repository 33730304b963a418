package kernels

import "fmt"

// SgemmBatched computes batch independent products
//
//	C[i] = alpha·op(A[i])·op(B[i]) + beta·C[i],  i = 0 … batch-1,
//
// where matrix i of X starts at x[i·strideX] (the cuBLAS "strided batched"
// layout). A stride of 0 reuses one matrix for every batch entry, which is
// how a broadcast operand of a batched matmul is expressed. C's matrices must
// not overlap (strideC ≥ the extent of one C matrix).
//
// Large products run one after another, each using all cores; small ones are
// spread across goroutines one product per task instead, since a single small
// Sgemm cannot use more than one core efficiently.
func SgemmBatched(transA, transB bool, batch, m, n, k int, alpha float32, a []float32, lda, strideA int, b []float32, ldb, strideB int, beta float32, c []float32, ldc, strideC int) {
	if batch < 0 || strideA < 0 || strideB < 0 || strideC < 0 {
		panic(fmt.Sprintf("kernels: SgemmBatched: negative batch %d or stride (%d, %d, %d)", batch, strideA, strideB, strideC))
	}
	if batch == 0 || m == 0 || n == 0 {
		return
	}
	if batch > 1 && strideC < (m-1)*ldc+n {
		panic(fmt.Sprintf("kernels: SgemmBatched: strideC %d makes C matrices overlap", strideC))
	}
	one := func(i int) {
		// Slicing from the batch offset lets Sgemm's own length checks
		// cover every entry; the zero-length case needs no data at all.
		as, bs, cs := a[min(i*strideA, len(a)):], b[min(i*strideB, len(b)):], c[i*strideC:]
		Sgemm(transA, transB, m, n, k, alpha, as, lda, bs, ldb, beta, cs, ldc)
	}
	if m*n*k >= gemmParallelFlops {
		for i := 0; i < batch; i++ {
			one(i)
		}
		return
	}
	parallelFor(batch, workers(batch*m*n*k, gemmParallelFlops), 1, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			one(i)
		}
	})
}

// SgemmOffsets computes len(offC) independent products
//
//	C[i] = alpha·op(A[i])·op(B[i]) + beta·C[i]
//
// where matrix i of X starts at x[offX[i]]: the batch of a batched matmul
// whose operands broadcast or are laid out in any way BLAS reads. C's
// matrices must not overlap. When there are at least as many products as
// cores, each product runs on one goroutine and the products are spread
// over the cores (a product of a few MFLOP gains little from being split,
// and the goroutines of many small splits cost more than they save);
// otherwise they run one after another, each split across the cores.
// Either way every element is computed as Sgemm computes it.
func SgemmOffsets(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, offA []int, b []float32, ldb int, offB []int, beta float32, c []float32, ldc int, offC []int) {
	batch := len(offC)
	if len(offA) != batch || len(offB) != batch {
		panic(fmt.Sprintf("kernels: SgemmOffsets: %d, %d and %d offsets", len(offA), len(offB), batch))
	}
	if batch == 0 || m == 0 || n == 0 {
		return
	}
	one := func(i, w int) {
		for _, o := range [...]int{offA[i], offB[i], offC[i]} {
			if o < 0 {
				panic(fmt.Sprintf("kernels: SgemmOffsets: negative offset %d", o))
			}
		}
		as, bs := a[min(offA[i], len(a)):], b[min(offB[i], len(b)):]
		cs := c[offC[i]:]
		checkGemm(transA, transB, m, n, k, len(as), lda, len(bs), ldb, len(cs), ldc)
		if k == 0 || alpha == 0 {
			scaleC(cs, ldc, m, n, beta)
			return
		}
		sgemmWorkers(w, transA, transB, m, n, k, alpha, as, lda, bs, ldb, beta, cs, ldc)
	}
	w := workers(batch*m*n*k, gemmParallelFlops)
	if batch < w {
		for i := range batch {
			one(i, workers(m*n*k, gemmParallelFlops))
		}
		return
	}
	parallelFor(batch, w, 1, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			one(i, 1)
		}
	})
}
