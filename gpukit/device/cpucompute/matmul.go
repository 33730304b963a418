package cpucompute

import (
	"fmt"

	"github.com/gpumem/course/gpukit/alloc"
	"github.com/gpumem/course/gpukit/dtypes"
	"github.com/gpumem/course/gpukit/kernels"
)

// The dense products: Gemm and GemmBatched (the sparse ones are in
// sparse.go).

// matrix resolves a rows×cols matrix stored with leading dimension ld.
func (c *Compute) matrix(addr uint64, dt dtypes.Dtype, trans bool, rows, cols, ld int) ([]byte, error) {
	if trans {
		rows, cols = cols, rows
	}
	if rows == 0 || cols == 0 {
		return nil, nil
	}
	if ld < cols {
		return nil, fmt.Errorf("cpucompute: Gemm on %s: leading dimension %d below %d", c.name, ld, cols)
	}
	return c.bytes("Gemm", addr, dt, (rows-1)*ld+cols)
}

// Gemm computes C = alpha·op(A)·op(B) + beta·C.
func (c *Compute) Gemm(_ alloc.Stream, dt dtypes.Dtype, transA, transB bool, m, n, k int, alpha float64, a uint64, lda int, b uint64, ldb int, beta float64, cAddr uint64, ldc int) error {
	if m == 0 || n == 0 {
		return nil
	}
	cb, err := c.matrix(cAddr, dt, false, m, n, ldc)
	if err != nil {
		return err
	}
	ab, err := c.matrix(a, dt, transA, m, k, lda)
	if err != nil {
		return err
	}
	bb, err := c.matrix(b, dt, transB, k, n, ldb)
	if err != nil {
		return err
	}
	switch dt {
	case f32t:
		kernels.Sgemm(transA, transB, m, n, k, float32(alpha), kernels.Float32s(ab), lda, kernels.Float32s(bb), ldb, float32(beta), kernels.Float32s(cb), ldc)
		return nil
	case f64t:
		kernels.Dgemm(transA, transB, m, n, k, alpha, kernels.Float64s(ab), lda, kernels.Float64s(bb), ldb, beta, kernels.Float64s(cb), ldc)
		return nil
	}
	// The half types: float32 dot products (halfGemm); the integer ones
	// and bool: one float64 dot product per element.
	if computeIn32(dt) {
		halfGemm(dt, transA, transB, m, n, k, alpha, ab, lda, bb, ldb, beta, cb, ldc)
		return nil
	}
	for i := range m {
		for j := range n {
			var s float64
			for p := range k {
				s += dtypes.Load(dt, ab, opIndex(transA, lda, i, p)) * dtypes.Load(dt, bb, opIndex(transB, ldb, p, j))
			}
			storeScaled(dt, cb, i*ldc+j, s, alpha, beta)
		}
	}
	return nil
}

// halfGemm is Gemm for float16 and bfloat16: each element one float32 dot
// product over k in order, s = s + x·y rounded to float32 at every step
// (the product of two half values is exact in float32, so a fused
// multiply-add rounds alike), then alpha, beta and the store as for the
// other dtypes. The operands are widened to float32 first, op(A) by rows
// and op(B) by columns, so each dot product reads two contiguous runs; four
// columns go at once, four independent chains instead of one add after
// another. The widened copies are the host's scratch, not device memory.
func halfGemm(dt dtypes.Dtype, transA, transB bool, m, n, k int, alpha float64, ab []byte, lda int, bb []byte, ldb int, beta float64, cb []byte, ldc int) {
	rows := make([]float32, m*k) // rows[i·k+p] = op(A)[i, p]
	for i := range m {
		for p := range k {
			rows[i*k+p] = float32(dtypes.Load(dt, ab, opIndex(transA, lda, i, p)))
		}
	}
	cols := make([]float32, n*k) // cols[j·k+p] = op(B)[p, j]
	for j := range n {
		for p := range k {
			cols[j*k+p] = float32(dtypes.Load(dt, bb, opIndex(transB, ldb, p, j)))
		}
	}
	store := func(i, j int, s float32) { storeScaled(dt, cb, i*ldc+j, float64(s), alpha, beta) }
	for i := range m {
		a := rows[i*k : i*k+k]
		j := 0
		for ; j+4 <= n; j += 4 {
			b0, b1, b2, b3 := cols[j*k:j*k+k], cols[(j+1)*k:(j+1)*k+k], cols[(j+2)*k:(j+2)*k+k], cols[(j+3)*k:(j+3)*k+k]
			var s0, s1, s2, s3 float32
			for p, x := range a {
				s0 += x * b0[p]
				s1 += x * b1[p]
				s2 += x * b2[p]
				s3 += x * b3[p]
			}
			store(i, j, s0)
			store(i, j+1, s1)
			store(i, j+2, s2)
			store(i, j+3, s3)
		}
		for ; j < n; j++ {
			b := cols[j*k : j*k+k]
			var s float32
			for p, x := range a {
				s += x * b[p]
			}
			store(i, j, s)
		}
	}
}

// opIndex is the index of op(X)[i, j] in X stored by rows with stride ld,
// op(X) = Xᵀ when trans.
func opIndex(trans bool, ld, i, j int) int {
	if trans {
		return j*ld + i
	}
	return i*ld + j
}

// storeScaled stores alpha·s + beta·C[idx] at C[idx] in dtype dt, reading C
// only when beta ≠ 0 (as BLAS does).
func storeScaled(dt dtypes.Dtype, c []byte, idx int, s, alpha, beta float64) {
	if alpha != 1 || beta != 0 {
		old := 0.0
		if beta != 0 {
			old = beta * dtypes.Load(dt, c, idx)
		}
		s = alpha*s + old
	}
	dtypes.Store(dt, c, idx, s)
}

// GemmBatched computes len(c) products as Gemm. float32 batches run in
// one kernels.SgemmOffsets call over the span of memory that each operand's
// matrices cover, which spreads the products over the cores; the other
// dtypes run one Gemm each.
func (c *Compute) GemmBatched(s alloc.Stream, dt dtypes.Dtype, transA, transB bool, m, n, k int, alpha float64, a []uint64, lda int, b []uint64, ldb int, beta float64, cs []uint64, ldc int) error {
	if len(a) != len(cs) || len(b) != len(cs) {
		return fmt.Errorf("cpucompute: GemmBatched on %s: %d, %d and %d matrices", c.name, len(a), len(b), len(cs))
	}
	if dt != f32t || len(cs) == 0 || m == 0 || n == 0 {
		for i := range cs {
			if err := c.Gemm(s, dt, transA, transB, m, n, k, alpha, a[i], lda, b[i], ldb, beta, cs[i], ldc); err != nil {
				return err
			}
		}
		return nil
	}
	ad, offA, err := c.batchSpan(a, transA, m, k, lda)
	if err != nil {
		return err
	}
	bd, offB, err := c.batchSpan(b, transB, k, n, ldb)
	if err != nil {
		return err
	}
	cd, offC, err := c.batchSpan(cs, false, m, n, ldc)
	if err != nil {
		return err
	}
	kernels.SgemmOffsets(transA, transB, m, n, k, float32(alpha), ad, lda, offA, bd, ldb, offB, float32(beta), cd, ldc, offC)
	return nil
}

// batchSpan resolves the float32 memory from the lowest to the end of the
// highest of the rows×cols matrices (leading dimension ld) at addrs, and
// each matrix's offset in it, in elements.
func (c *Compute) batchSpan(addrs []uint64, trans bool, rows, cols, ld int) ([]float32, []int, error) {
	if trans {
		rows, cols = cols, rows
	}
	lo, hi := addrs[0], addrs[0]
	for _, p := range addrs {
		lo, hi = min(lo, p), max(hi, p)
	}
	if (hi-lo)%4 != 0 {
		return nil, nil, fmt.Errorf("cpucompute: GemmBatched on %s: matrices not a whole number of elements apart", c.name)
	}
	ext := 0
	if rows > 0 && cols > 0 {
		if ld < cols {
			return nil, nil, fmt.Errorf("cpucompute: Gemm on %s: leading dimension %d below %d", c.name, ld, cols)
		}
		ext = (rows-1)*ld + cols
	}
	data, err := c.bytes("GemmBatched", lo, f32t, int(hi-lo)/4+ext)
	if err != nil {
		return nil, nil, err
	}
	offs := make([]int, len(addrs))
	for i, p := range addrs {
		offs[i] = int(p-lo) / 4
	}
	return kernels.Float32s(data), offs, nil
}
