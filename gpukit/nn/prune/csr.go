package prune

import (
	"math"

	"github.com/gpumem/course/gpukit/tensor"
)

// CSR is a matrix in compressed sparse row form, PyTorch's
// torch.sparse_csr layout: the non-zero Values row by row, the column of
// each (ColIndices) and, for each row r, the range
// RowOffsets[r]..RowOffsets[r+1] of its entries (crow_indices). It costs
// nnz·(value size + index size) + (rows+1)·index size bytes, against
// rows·cols·value size dense: with float32 values and int64 indices (what
// PyTorch uses) it saves memory only below a density of about 1/3, with
// int32 indices below 1/2.
type CSR struct {
	Rows, Cols int
	Values     *tensor.Tensor // [nnz], the dense matrix's dtype
	ColIndices *tensor.Tensor // [nnz], Int64 or Int32
	RowOffsets *tensor.Tensor // [rows+1], same dtype as ColIndices
}

// ToCSR returns the CSR form of the 2-d tensor w on w's device, keeping
// its non-zero entries; index is tensor.Int64 (PyTorch's default) or
// tensor.Int32. w is not changed.
func ToCSR(w *tensor.Tensor, index tensor.Dtype) (*CSR, error) {
	if w.Dim() != 2 {
		return nil, errorf("ToCSR: need a 2-d tensor, got shape %v", w.Shape())
	}
	if index != tensor.Int64 && index != tensor.Int32 {
		return nil, errorf("ToCSR: index dtype %s; use Int64 or Int32", index)
	}
	rows, cols := w.Size(0), w.Size(1)
	vals := w.Float64s()
	if index == tensor.Int32 && len(vals) > math.MaxInt32 {
		return nil, errorf("ToCSR: %d entries do not fit Int32 indices", len(vals))
	}
	var nzVals []float64
	var colIdx []int
	offsets := make([]int, rows+1)
	for r := range rows {
		for c := range cols {
			if v := vals[r*cols+c]; v != 0 {
				nzVals = append(nzVals, v)
				colIdx = append(colIdx, c)
			}
		}
		offsets[r+1] = len(nzVals)
	}
	place := placeLike(w)
	c := &CSR{Rows: rows, Cols: cols}
	err := tensor.Try(func() {
		c.Values = tensor.FromSlice(nzVals, []int{len(nzVals)}, place...)
		c.ColIndices = tensor.FromSlice(colIdx, []int{len(colIdx)}, place[0], index)
		c.RowOffsets = tensor.FromSlice(offsets, []int{rows + 1}, place[0], index)
	})
	if err != nil {
		c.Release()
		return nil, errorf("ToCSR: %v", err)
	}
	return c, nil
}

// Nnz is the number of stored entries.
func (c *CSR) Nnz() int { return c.Values.Numel() }

// Density is Nnz / (Rows·Cols).
func (c *CSR) Density() float64 { return float64(c.Nnz()) / float64(c.Rows*c.Cols) }

// Nbytes is the device memory of the three arrays.
func (c *CSR) Nbytes() int64 {
	return c.Values.Nbytes() + c.ColIndices.Nbytes() + c.RowOffsets.Nbytes()
}

// Release frees the three arrays.
func (c *CSR) Release() {
	c.Values.Release()
	c.ColIndices.Release()
	c.RowOffsets.Release()
}

// LinearForward returns x · Cᵀ for x of shape [batch, Cols]: what a
// Linear whose weight is C computes, without bias. It runs the row-wise
// CSR kernel (tensor.SparseCSRMatmul) on C · xᵀ: each output unit adds up
// its kept weights times the matching rows of xᵀ, so the work is
// proportional to the kept entries. The result is the transpose of that
// [Cols, batch] product, a view (not contiguous). Gradients reach x and,
// if it requires grad, Values (the kept weights only).
func (c *CSR) LinearForward(x *tensor.Tensor) *tensor.Tensor {
	if x.Dim() != 2 || x.Size(1) != c.Cols {
		panic(errorf("CSR.LinearForward: input of shape %v, expected [batch, %d]", x.Shape(), c.Cols))
	}
	xT := x.T()
	defer xT.Release()
	xt := xT.Contiguous() // [Cols, batch]: the rows the kernel accumulates
	defer xt.Release()
	yt := tensor.SparseCSRMatmul(c.Values, c.ColIndices, c.RowOffsets, c.Rows, c.Cols, xt)
	defer yt.Release()
	return yt.T()
}
