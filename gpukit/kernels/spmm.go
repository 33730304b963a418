package kernels

// CSRMatmul computes c = a·b for a sparse rows×k matrix a in compressed
// sparse row form and a dense row-major k×n matrix b; c is rows×n,
// row-major, and is overwritten. Row r of a holds the entries
// offsets[r]..offsets[r+1]-1, with columns cols[e] and values vals[e].
//
// The kernel is row-wise: row r of c accumulates vals[e]·b[cols[e], :]
// over the entries of row r of a, so the inner loop runs along a
// contiguous row of b into a contiguous row of c, and each row of c is
// written by one goroutine (rows are split among goroutines as the dense
// gemm splits its work). The caller checks that offsets run from 0 to
// len(vals) without decreasing and that every column is in [0, k).
func CSRMatmul[F float32 | float64, I int32 | int64](vals []F, cols, offsets []I, b []F, n int, c []F) {
	rows := len(offsets) - 1
	if rows <= 0 || n == 0 {
		return
	}
	w := workers(len(vals)*n, gemmParallelFlops)
	parallelFor(rows, w, 1, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			crow := c[r*n : (r+1)*n : (r+1)*n]
			clear(crow)
			for e := offsets[r]; e < offsets[r+1]; e++ {
				v := vals[e]
				off := int(cols[e]) * n
				brow := b[off : off+n : off+n]
				for j := range crow {
					crow[j] += v * brow[j]
				}
			}
		}
	})
}
