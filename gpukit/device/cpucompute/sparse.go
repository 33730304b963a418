package cpucompute

import (
	"fmt"
	"unsafe"

	"github.com/gpumem/course/gpukit/alloc"
	"github.com/gpumem/course/gpukit/device/backend"
	"github.com/gpumem/course/gpukit/dtypes"
	"github.com/gpumem/course/gpukit/kernels"
)

// The sparse CSR products: kernels.CSRMatmul, CSRMatmulT and
// CSRSampledDot on the device's bytes. The CSR structure is checked again
// here (it is cheap next to the product), so that a bad index is an
// error, not an index out of range in the kernel.

// csrOp is one of the three products.
type csrOp int

const (
	csrMatmul csrOp = iota
	csrMatmulT
	csrSampledDot
)

var csrOpName = [...]string{"CSRMatmul", "CSRMatmulT", "CSRSampledDot"}

// CSRMatmul writes out = a·b (kernels.CSRMatmul).
func (c *Compute) CSRMatmul(_ alloc.Stream, dt dtypes.Dtype, a backend.CSR, b, out uint64, n int) error {
	return c.csr(csrMatmul, dt, a, b, 0, out, n)
}

// CSRMatmulT writes out = aᵀ·g (kernels.CSRMatmulT).
func (c *Compute) CSRMatmulT(_ alloc.Stream, dt dtypes.Dtype, a backend.CSR, g, out uint64, n int) error {
	return c.csr(csrMatmulT, dt, a, g, 0, out, n)
}

// CSRSampledDot writes out[e] = g[r, :]·b[c, :] at a's entries
// (kernels.CSRSampledDot).
func (c *Compute) CSRSampledDot(_ alloc.Stream, dt dtypes.Dtype, a backend.CSR, g, b, out uint64, n int) error {
	return c.csr(csrSampledDot, dt, a, g, b, out, n)
}

// csr resolves and checks the operands of op and runs its kernel: x is
// the first dense operand (b, g, g), y the second (CSRSampledDot's b).
func (c *Compute) csr(op csrOp, dt dtypes.Dtype, a backend.CSR, x, y, out uint64, n int) error {
	name := csrOpName[op]
	if dt != f32t && dt != f64t {
		return &backend.UnsupportedError{Backend: c.name, Op: name, Dtype: dt}
	}
	if a.Index != dtypes.Int64 && a.Index != dtypes.Int32 {
		return fmt.Errorf("cpucompute: %s on %s: indices of %s (want int64 or int32)", name, c.name, a.Index)
	}
	if a.Rows < 0 || a.Cols < 0 || a.NNZ < 0 || n < 0 {
		return fmt.Errorf("cpucompute: %s on %s: negative size (%d×%d, %d entries, n %d)", name, c.name, a.Rows, a.Cols, a.NNZ, n)
	}
	// The dense shapes: x's rows, y's rows (CSRSampledDot) and out's
	// elements.
	xRows, outN := a.Cols, a.Rows*n
	switch op {
	case csrMatmulT:
		xRows, outN = a.Rows, a.Cols*n
	case csrSampledDot:
		xRows, outN = a.Rows, a.NNZ
	}
	var bs [6][]byte
	var err error
	for i, o := range []struct {
		addr uint64
		dt   dtypes.Dtype
		n    int
	}{
		{a.RowOffsets, a.Index, a.Rows + 1},
		{a.ColIndices, a.Index, a.NNZ},
		{a.Values, dt, a.NNZ * btoi(op != csrSampledDot)},
		{x, dt, xRows * n},
		{y, dt, a.Cols * n * btoi(op == csrSampledDot)},
		{out, dt, outN},
	} {
		if bs[i], err = c.bytes(name, o.addr, o.dt, o.n); err != nil {
			return err
		}
	}
	if a.Index == dtypes.Int64 {
		return csrRun[int64](c.name, op, dt, a, bs, n)
	}
	return csrRun[int32](c.name, op, dt, a, bs, n)
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// csrRun checks the structure and calls the kernel; bs are the bytes of
// the row offsets, column indices, values, x, y and out.
func csrRun[I int32 | int64](dev string, op csrOp, dt dtypes.Dtype, a backend.CSR, bs [6][]byte, n int) error {
	offs := indexSlice[I](bs[0], a.Rows+1)
	cols := indexSlice[I](bs[1], a.NNZ)
	name := csrOpName[op]
	if offs[0] != 0 || int64(offs[a.Rows]) != int64(a.NNZ) {
		return fmt.Errorf("cpucompute: %s on %s: row offsets must run from 0 to the number of entries (%d), got %d to %d", name, dev, a.NNZ, offs[0], offs[a.Rows])
	}
	for r := 1; r <= a.Rows; r++ {
		if offs[r] < offs[r-1] {
			return fmt.Errorf("cpucompute: %s on %s: row offsets decrease at row %d (%d after %d)", name, dev, r-1, offs[r], offs[r-1])
		}
	}
	for e, col := range cols {
		if col < 0 || int64(col) >= int64(a.Cols) {
			return fmt.Errorf("cpucompute: %s on %s: column index %d of entry %d is out of bounds for %d columns", name, dev, col, e, a.Cols)
		}
	}
	if dt == f32t {
		csrKernel(op, cols, offs, f32or(bs[2], a.NNZ), f32or(bs[3], len(bs[3])/4), f32or(bs[4], len(bs[4])/4), f32or(bs[5], len(bs[5])/4), n)
	} else {
		csrKernel(op, cols, offs, f64or(bs[2], a.NNZ), f64or(bs[3], len(bs[3])/8), f64or(bs[4], len(bs[4])/8), f64or(bs[5], len(bs[5])/8), n)
	}
	return nil
}

func csrKernel[F float32 | float64, I int32 | int64](op csrOp, cols, offs []I, vals, x, y, out []F, n int) {
	switch op {
	case csrMatmul:
		kernels.CSRMatmul(vals, cols, offs, x, n, out)
	case csrMatmulT:
		kernels.CSRMatmulT(vals, cols, offs, x, n, out)
	default:
		kernels.CSRSampledDot(cols, offs, x, y, n, out)
	}
}

// indexSlice views n indices of type I in b (nil when n is 0).
func indexSlice[I int32 | int64](b []byte, n int) []I {
	if n == 0 {
		return nil
	}
	return unsafe.Slice((*I)(unsafe.Pointer(&b[0])), n)
}
