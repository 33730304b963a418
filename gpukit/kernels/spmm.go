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

// CSRMatmulT computes c = aᵀ·g for the rows×k CSR matrix a and a dense
// row-major rows×n matrix g; c is k×n, row-major, overwritten: the
// gradient of CSRMatmul's dense operand. Each entry (r, col, v) of a adds
// v·g[r, :] into c[col, :]; entries of different rows may share a
// column, so the goroutines split the n columns, not the rows.
func CSRMatmulT[F float32 | float64, I int32 | int64](vals []F, cols, offsets []I, g []F, n int, c []F) {
	clear(c)
	rows := len(offsets) - 1
	if rows <= 0 || n == 0 {
		return
	}
	w := workers(len(vals)*n, gemmParallelFlops)
	parallelFor(n, w, 16, func(lo, hi int) {
		for r := range rows {
			grow := g[r*n+lo : r*n+hi : r*n+hi]
			for e := offsets[r]; e < offsets[r+1]; e++ {
				v := vals[e]
				off := int(cols[e]) * n
				crow := c[off+lo : off+hi : off+hi]
				for j := range crow {
					crow[j] += v * grow[j]
				}
			}
		}
	})
}

// CSRSampledDot computes, for each entry e of the CSR pattern (row r,
// column cols[e]), out[e] = g[r, :]·b[cols[e], :], with g rows×n and b
// k×n dense and row-major: the gradient of CSRMatmul's values (g·bᵀ
// sampled where a has entries). Rows are split among goroutines.
func CSRSampledDot[F float32 | float64, I int32 | int64](cols, offsets []I, g, b []F, n int, out []F) {
	rows := len(offsets) - 1
	if rows <= 0 {
		return
	}
	w := workers(len(out)*n, gemmParallelFlops)
	parallelFor(rows, w, 1, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			grow := g[r*n : (r+1)*n : (r+1)*n]
			for e := offsets[r]; e < offsets[r+1]; e++ {
				off := int(cols[e]) * n
				brow := b[off : off+n : off+n]
				var s F
				for j := range grow {
					s += grow[j] * brow[j]
				}
				out[e] = s
			}
		}
	})
}
