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
