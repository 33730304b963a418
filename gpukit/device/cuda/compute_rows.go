//go:build cuda

package cuda

import (
	"github.com/gpumem/course/gpukit/alloc"
	"github.com/gpumem/course/gpukit/device/backend"
	"github.com/gpumem/course/gpukit/dtypes"
	"github.com/gpumem/course/gpukit/ops"
)

// The fused row kernels, gather, scatter-add and the sparse products of
// backend.Compute: each call plans its launch (rows.go: arguments checked,
// no driver) and runs the plan (compute.go).

// Softmax writes the softmax (log-softmax when log) of each row of src
// into dst (rows.cu: softmax, one block per row).
func (b *Backend) Softmax(s alloc.Stream, dt dtypes.Dtype, dst, src uint64, rows, n int, log bool) error {
	p, err := planSoftmax(b.Name(), dt, dst, src, rows, n, log)
	if err != nil {
		return err
	}
	return run(b, s, p)
}

// SoftmaxStrided is not a kernel of rows.cu yet: softmax along another
// dimension than the contiguous last one, or into another dtype, is
// refused with an UnsupportedError that gpukit/tensor reports.
func (b *Backend) SoftmaxStrided(s alloc.Stream, shape []int, dim int, dst, src backend.Strided, log bool) error {
	return &backend.UnsupportedError{Backend: b.Name(), Op: "SoftmaxStrided", Dtype: src.Dtype}
}

// LayerNorm normalises each row of x into y and writes its mean and rstd
// (rows.cu: layer_norm, one block per row).
func (b *Backend) LayerNorm(s alloc.Stream, dt dtypes.Dtype, y, mean, rstd, x, w, bias uint64, rows, n int, eps float64) error {
	p, err := planLayerNorm(b.Name(), dt, y, mean, rstd, x, w, bias, rows, n, eps)
	if err != nil {
		return err
	}
	return run(b, s, p)
}

// LayerNormBackward writes LayerNorm's gradients dx (one block per row),
// dw and db (column sums in a fixed order: layer_norm_backward_cols).
func (b *Backend) LayerNormBackward(s alloc.Stream, dt dtypes.Dtype, dx, dw, db, g, x, mean, rstd, w uint64, rows, n int) error {
	p, err := planLayerNormBackward(b.Name(), dt, dx, dw, db, g, x, mean, rstd, w, rows, n)
	if err != nil {
		return err
	}
	return run(b, s, p)
}

// BatchNorm is native_batch_norm (rows.cu: batch_norm, one block per
// channel).
func (b *Backend) BatchNorm(s alloc.Stream, a backend.BatchNormArgs) error {
	p, err := planBatchNorm(b.Name(), a)
	if err != nil {
		return err
	}
	return run(b, s, p)
}

// BatchNormBackward is native_batch_norm_backward (rows.cu:
// batch_norm_backward, one block per channel).
func (b *Backend) BatchNormBackward(s alloc.Stream, a backend.BatchNormBackwardArgs) error {
	p, err := planBatchNormBackward(b.Name(), a)
	if err != nil {
		return err
	}
	return run(b, s, p)
}

// NLLLoss writes the mean of −logProbs[i, targets[i]] into out (rows.cu:
// nll_loss, one block, the sum in row order).
func (b *Backend) NLLLoss(s alloc.Stream, dt dtypes.Dtype, out, logProbs, targets uint64, targetDt dtypes.Dtype, rows, n int) error {
	p, err := planNLLLoss(b.Name(), dt, out, logProbs, targets, targetDt, rows, n)
	if err != nil {
		return err
	}
	return run(b, s, p)
}

// Gather writes dst = src gathered along dim by index (index.cu: gather).
func (b *Backend) Gather(s alloc.Stream, shape []int, dim int, dst, src, index backend.Strided) error {
	p, err := planGather(b.Name(), shape, dim, dst, src, index)
	if err != nil {
		return err
	}
	return run(b, s, p)
}

// ScatterAdd adds src into dst scattered along dim by index (index.cu:
// scatter_add, one thread per line along dim, no atomics).
func (b *Backend) ScatterAdd(s alloc.Stream, shape []int, dim int, dst, index, src backend.Strided) error {
	p, err := planScatterAdd(b.Name(), shape, dim, dst, index, src)
	if err != nil {
		return err
	}
	return run(b, s, p)
}

// Adam applies one fused Adam step to p, m and v (rows.cu: adam).
func (b *Backend) Adam(s alloc.Stream, dt dtypes.Dtype, p, g, m, v uint64, n int, sc ops.AdamScalars) error {
	pl, err := planAdam(b.Name(), dt, p, g, m, v, n, sc)
	if err != nil {
		return err
	}
	return run(b, s, pl)
}

// CSRMatmul writes out = a·b (rows.cu: csr_matmul, one block per row of
// a, each thread summing its columns' entries in order: kernels.CSRMatmul's
// order, bit for bit).
func (b *Backend) CSRMatmul(s alloc.Stream, dt dtypes.Dtype, a backend.CSR, dense, out uint64, n int) error {
	p, err := planCSR(b.Name(), "CSRMatmul", dt, a, dense, 0, out, n)
	if err != nil {
		return err
	}
	return run(b, s, p)
}

// CSRMatmulT writes out = aᵀ·g (rows.cu: csr_matmul_t, one block per
// column of a, scanning the entries in CSR order: deterministic, no
// atomics, kernels.CSRMatmulT's order).
func (b *Backend) CSRMatmulT(s alloc.Stream, dt dtypes.Dtype, a backend.CSR, g, out uint64, n int) error {
	p, err := planCSR(b.Name(), "CSRMatmulT", dt, a, g, 0, out, n)
	if err != nil {
		return err
	}
	return run(b, s, p)
}

// CSRSampledDot writes out[e] = g[r, :]·b[c, :] at a's entries (rows.cu:
// csr_sampled_dot, one block per row of a, one thread per entry).
func (b *Backend) CSRSampledDot(s alloc.Stream, dt dtypes.Dtype, a backend.CSR, g, dense, out uint64, n int) error {
	p, err := planCSR(b.Name(), "CSRSampledDot", dt, a, g, dense, out, n)
	if err != nil {
		return err
	}
	return run(b, s, p)
}
