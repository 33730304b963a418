package tensor

import "github.com/gpumem/course/gpukit/device/backend"

// SparseCSRMatmul returns a·b, torch.sparse.mm of a sparse CSR matrix and
// a dense one: a is the rows×cols matrix whose non-zeros are values (1-d,
// nnz entries, Float32 or Float64), in the columns colIndices (1-d, nnz)
// with row r's entries at rowOffsets[r]..rowOffsets[r+1]-1 (1-d, rows+1;
// torch's crow_indices); both index tensors are Int64 or Int32, of one
// dtype. b is dense, [cols, n], in values' dtype; the result is a new
// contiguous [rows, n] tensor. All on one device. The product runs on
// the device's Compute (backend.Compute.CSRMatmul; on the CPU the
// row-wise kernels.CSRMatmul) and charges 2·nnz·n flops. The CSR
// structure is checked first, on the host (the index tensors are copied
// there from a device the host cannot read).
//
// Its backward gives values the gradient g·bᵀ at the entries' positions
// (kernels.CSRSampledDot) and b the gradient aᵀ·g (kernels.CSRMatmulT).
// It saves the index tensors, and values and b where the other one needs
// a gradient (torch.sparse.mm's rule for a dense product).
func SparseCSRMatmul(values, colIndices, rowOffsets *Tensor, rows, cols int, b *Tensor) *Tensor {
	const op = "SparseCSRMatmul"
	values.live(op)
	b.live(op)
	checkPair(op, values, b)
	checkIndexTensor(op, values, colIndices)
	checkIndexTensor(op, values, rowOffsets)
	if values.dtype != Float32 && values.dtype != Float64 {
		panicf("%s: values must be Float32 or Float64, got %s", op, values.dtype)
	}
	if colIndices.dtype != rowOffsets.dtype {
		panicf("%s: column indices are %s but row offsets are %s; use one index dtype", op, colIndices.dtype, rowOffsets.dtype)
	}
	nnz := values.Numel()
	if len(values.shape) != 1 || len(colIndices.shape) != 1 || len(rowOffsets.shape) != 1 {
		panicf("%s: values, column indices and row offsets must be 1-d, got shapes %s, %s, %s", op, fmtShape(values.shape), fmtShape(colIndices.shape), fmtShape(rowOffsets.shape))
	}
	if rows < 0 || cols < 0 || colIndices.Numel() != nnz || rowOffsets.Numel() != rows+1 {
		panicf("%s: a %d×%d matrix needs %d row offsets and as many column indices as values (%d); got %d and %d", op, rows, cols, rows+1, nnz, rowOffsets.Numel(), colIndices.Numel())
	}
	if len(b.shape) != 2 || b.shape[0] != cols {
		panicf("%s: b of shape %s cannot multiply a %d×%d matrix; it needs shape [%d, n]", op, fmtShape(b.shape), rows, cols, cols)
	}
	n := b.shape[1]
	out := empty(values.outMem(), []int{rows, n}, values.dtype)
	if out.Numel() > 0 {
		csrCheck(op, colIndices, rowOffsets, nnz, cols)
		dense := b.Contiguous()
		defer dense.Release()
		vals := values.Contiguous()
		defer vals.Release()
		csrCompute(op, out, vals, colIndices, rowOffsets, rows, cols, dense, nil)
	}
	out.charge(op, 2*int64(nnz)*int64(n), values, colIndices, rowOffsets, b)
	save := []*Tensor{colIndices, rowOffsets, savedIf(values, b), savedIf(b, values)}
	return record(out, "SparseCSRMatmulBackward0", []*Tensor{values, b}, save, func(g *Tensor, saved []*Tensor, needs []bool) []*Tensor {
		cidx, offs, vals, dense := saved[0], saved[1], saved[2], saved[3]
		gc := g.Contiguous()
		defer gc.Release()
		return []*Tensor{
			when(needs[0], func() *Tensor { // g·bᵀ at the entries
				bc := dense.Contiguous()
				defer bc.Release()
				gv := empty(g.outMem(), []int{nnz}, g.dtype)
				if nnz > 0 {
					csrCompute("SparseCSRSampledDot", gv, nil, cidx, offs, rows, cols, gc, bc)
				}
				gv.charge("SparseCSRSampledDot", 2*int64(nnz)*int64(n), gc, bc, cidx, offs)
				return gv
			}),
			when(needs[1], func() *Tensor { // aᵀ·g
				vc := vals.Contiguous()
				defer vc.Release()
				gb := empty(g.outMem(), []int{cols, n}, g.dtype)
				if gb.Numel() > 0 {
					csrCompute("SparseCSRMatmulT", gb, vc, cidx, offs, rows, cols, gc, nil)
				}
				gb.charge("SparseCSRMatmulT", 2*int64(nnz)*int64(n), gc, vc, cidx, offs)
				return gb
			}),
		}
	})
}

// csrCompute writes one of the products into the fresh contiguous out
// through its device's Compute: SparseCSRMatmul (a·x), SparseCSRMatmulT
// (aᵀ·x) or SparseCSRSampledDot (x·yᵀ at a's entries; vals is nil). vals,
// x and y are contiguous; the index tensors are made contiguous here (no
// copy when they are, as they nearly always are).
func csrCompute(op string, out, vals, cidx, offs *Tensor, rows, cols int, x, y *Tensor) {
	ci, ro := cidx.Contiguous(), offs.Contiguous()
	defer ci.Release()
	defer ro.Release()
	a := backend.CSR{Values: optAddr(vals), ColIndices: addr(ci), RowOffsets: addr(ro), Index: cdt(ci), Rows: rows, Cols: cols, NNZ: ci.Numel()}
	c, s := kern(op, out)
	n := x.shape[1]
	var err error
	switch op {
	case "SparseCSRMatmul":
		err = c.CSRMatmul(s, cdt(out), a, addr(x), addr(out), n)
	case "SparseCSRMatmulT":
		err = c.CSRMatmulT(s, cdt(out), a, addr(x), addr(out), n)
	default:
		err = c.CSRSampledDot(s, cdt(out), a, addr(x), optAddr(y), addr(out), n)
	}
	done(op, err, out, vals, ci, ro, x, y)
}

// csrCheck checks the CSR structure (so that a bad index is the package's
// error, not a fault in a kernel): row offsets from 0 to nnz without
// decreasing, every column in [0, k). It reads the indices on the host
// (copied from a device the host cannot read); on meta it checks nothing.
func csrCheck(op string, cidx, offs *Tensor, nnz, k int) {
	o := indexInts(op, offs)
	if o == nil {
		return
	}
	if o[0] != 0 || o[len(o)-1] != nnz {
		panicf("%s: row offsets must run from 0 to the number of values (%d), got %d to %d", op, nnz, o[0], o[len(o)-1])
	}
	for r := 1; r < len(o); r++ {
		if o[r] < o[r-1] {
			panicf("%s: row offsets decrease at row %d (%d after %d)", op, r-1, o[r], o[r-1])
		}
	}
	for e, c := range indexInts(op, cidx) {
		if c < 0 || c >= k {
			panicf("%s: column index %d of entry %d is out of bounds for %d columns", op, c, e, k)
		}
	}
}
