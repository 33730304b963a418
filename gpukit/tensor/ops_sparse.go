package tensor

import (
	"unsafe"

	"github.com/gpumem/course/gpukit/kernels"
)

// SparseCSRMatmul returns a·b, torch.sparse.mm of a sparse CSR matrix and
// a dense one: a is the rows×cols matrix whose non-zeros are values (1-d,
// nnz entries, Float32 or Float64), in the columns colIndices (1-d, nnz)
// with row r's entries at rowOffsets[r]..rowOffsets[r+1]-1 (1-d, rows+1;
// torch's crow_indices); both index tensors are Int64 or Int32, of one
// dtype. b is dense, [cols, n], in values' dtype; the result is a new
// contiguous [rows, n] tensor. All on one device. The kernel is row-wise
// (kernels.CSRMatmul) and charges 2·nnz·n flops.
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
	// With no entries the values have no bytes even on a real device.
	if out.Numel() > 0 && hostOnly("SparseMatmul", out, rowOffsets, b) && (nnz == 0 || hostOnly("SparseMatmul", values, colIndices)) {
		dense := b.Contiguous()
		defer dense.Release()
		vals, bb := values.Contiguous(), dense
		defer vals.Release()
		if colIndices.dtype == Int64 {
			csrKernel(out, vals, bb, contiguousInts[int64](colIndices), contiguousInts[int64](rowOffsets), cols)
		} else {
			csrKernel(out, vals, bb, contiguousInts[int32](colIndices), contiguousInts[int32](rowOffsets), cols)
		}
	}
	out.charge(op, 2*int64(nnz)*int64(n), values, colIndices, rowOffsets, b)
	save := []*Tensor{colIndices, rowOffsets, savedIf(values, b), savedIf(b, values)}
	k := cols
	return record(out, "SparseCSRMatmulBackward0", []*Tensor{values, b}, save, func(g *Tensor, saved []*Tensor, needs []bool) []*Tensor {
		cidx, offs, vals, dense := saved[0], saved[1], saved[2], saved[3]
		gc := g.Contiguous()
		defer gc.Release()
		return []*Tensor{
			when(needs[0], func() *Tensor { // g·bᵀ at the entries
				bc := dense.Contiguous()
				defer bc.Release()
				gv := empty(g.outMem(), []int{nnz}, g.dtype)
				if nnz > 0 && hostOnly("SparseMatmul", gv, gc, bc, cidx, offs) {
					csrBackward(gv, nil, cidx, offs, gc, bc)
				}
				gv.charge("SparseCSRSampledDot", 2*int64(nnz)*int64(n), gc, bc, cidx, offs)
				return gv
			}),
			when(needs[1], func() *Tensor { // aᵀ·g
				vc := vals.Contiguous()
				defer vc.Release()
				gb := empty(g.outMem(), []int{k, n}, g.dtype)
				if gb.Numel() > 0 && hostOnly("SparseMatmul", gb, gc, offs) && (nnz == 0 || hostOnly("SparseMatmul", vc, cidx)) {
					csrBackward(nil, gb, cidx, offs, gc, vc)
				}
				gb.charge("SparseCSRMatmulT", 2*int64(nnz)*int64(n), gc, vc, cidx, offs)
				return gb
			}),
		}
	})
}

// csrBackward runs one of the backward kernels: with gv, the values'
// gradient from g and the dense operand x; with gb, the dense operand's
// gradient from g and the values x.
func csrBackward(gv, gb, cidx, offs, g, x *Tensor) {
	if cidx.dtype == Int64 {
		csrBackwardI(gv, gb, contiguousInts[int64](cidx), contiguousInts[int64](offs), g, x)
	} else {
		csrBackwardI(gv, gb, contiguousInts[int32](cidx), contiguousInts[int32](offs), g, x)
	}
}

func csrBackwardI[I int32 | int64](gv, gb *Tensor, cols, offs []I, g, x *Tensor) {
	n := g.shape[1]
	gd := func(t *Tensor) (f32 []float32, f64 []float64) {
		if t.dtype == Float32 {
			return f32s(t.st.data)[t.offset:][:t.Numel()], nil
		}
		return nil, f64s(t.st.data)[t.offset:][:t.Numel()]
	}
	g32, g64 := gd(g)
	x32, x64 := gd(x)
	switch {
	case gv != nil && g.dtype == Float32:
		o32, _ := gd(gv)
		kernels.CSRSampledDot(cols, offs, g32, x32, n, o32)
	case gv != nil:
		_, o64 := gd(gv)
		kernels.CSRSampledDot(cols, offs, g64, x64, n, o64)
	case g.dtype == Float32:
		o32, _ := gd(gb)
		kernels.CSRMatmulT(x32, cols, offs, g32, n, o32)
	default:
		_, o64 := gd(gb)
		kernels.CSRMatmulT(x64, cols, offs, g64, n, o64)
	}
}

// contiguousInts reads a 1-d index tensor's entries: its storage itself
// when it is contiguous, a copy otherwise.
func contiguousInts[I int32 | int64](t *Tensor) []I {
	if t.IsContiguous() {
		size := int(unsafe.Sizeof(I(0)))
		all := unsafe.Slice((*I)(unsafe.Pointer(unsafe.SliceData(t.st.data))), len(t.st.data)/size)
		return all[t.offset : t.offset+t.Numel()]
	}
	out := make([]I, 0, t.Numel())
	forEachOffset(t.shape, []int{t.offset}, [][]int{t.strides}, func(_ int, o []int) {
		out = append(out, I(load(t.dtype, t.st.data, o[0])))
	})
	return out
}

// csrKernel checks the CSR structure (so a bad index is an error, not a
// fault in the kernel) and runs kernels.CSRMatmul.
func csrKernel[I int32 | int64](out, vals, b *Tensor, cols, offsets []I, k int) {
	const op = "SparseCSRMatmul"
	nnz := vals.Numel()
	if offsets[0] != 0 || int(offsets[len(offsets)-1]) != nnz {
		panicf("%s: row offsets must run from 0 to the number of values (%d), got %d to %d", op, nnz, offsets[0], offsets[len(offsets)-1])
	}
	for r := 1; r < len(offsets); r++ {
		if offsets[r] < offsets[r-1] {
			panicf("%s: row offsets decrease at row %d (%d after %d)", op, r-1, offsets[r], offsets[r-1])
		}
	}
	for e, c := range cols {
		if c < 0 || int(c) >= k {
			panicf("%s: column index %d of entry %d is out of bounds for %d columns", op, c, e, k)
		}
	}
	n := b.shape[1]
	switch vals.dtype {
	case Float32:
		kernels.CSRMatmul(f32s(vals.st.data)[vals.offset:][:nnz], cols, offsets, f32s(b.st.data)[b.offset:][:b.Numel()], n, f32s(out.st.data)[:out.Numel()])
	case Float64:
		kernels.CSRMatmul(f64s(vals.st.data)[vals.offset:][:nnz], cols, offsets, f64s(b.st.data)[b.offset:][:b.Numel()], n, f64s(out.st.data)[:out.Numel()])
	}
}
