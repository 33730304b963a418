//go:build cuda

package cuda

import (
	"github.com/gpumem/course/gpukit/alloc"
	"github.com/gpumem/course/gpukit/device/backend"
	"github.com/gpumem/course/gpukit/kernels"
)

// Softmax has no kernel yet.
func (b *Backend) Softmax(s alloc.Stream, dt backend.Dtype, dst, src uint64, rows, n int, log bool) error {
	return b.unsupported("Softmax", dt)
}

// LayerNorm has no kernel yet.
func (b *Backend) LayerNorm(s alloc.Stream, dt backend.Dtype, y, mean, rstd, x, w, bias uint64, rows, n int, eps float64) error {
	return b.unsupported("LayerNorm", dt)
}

// LayerNormBackward has no kernel yet.
func (b *Backend) LayerNormBackward(s alloc.Stream, dt backend.Dtype, dx, dw, db, g, x, mean, rstd, w uint64, rows, n int) error {
	return b.unsupported("LayerNormBackward", dt)
}

// BatchNorm has no kernel yet.
func (b *Backend) BatchNorm(s alloc.Stream, a backend.BatchNormArgs) error {
	return b.unsupported("BatchNorm", a.Dtype)
}

// BatchNormBackward has no kernel yet.
func (b *Backend) BatchNormBackward(s alloc.Stream, a backend.BatchNormBackwardArgs) error {
	return b.unsupported("BatchNormBackward", a.Dtype)
}

// NLLLoss has no kernel yet.
func (b *Backend) NLLLoss(s alloc.Stream, dt backend.Dtype, out, logProbs, targets uint64, targetDt backend.Dtype, rows, n int) error {
	return b.unsupported("NLLLoss", dt)
}

// Gather has no kernel yet.
func (b *Backend) Gather(s alloc.Stream, shape []int, dim int, dst, src, index backend.Strided) error {
	return b.unsupported("Gather", dst.Dtype)
}

// ScatterAdd has no kernel yet.
func (b *Backend) ScatterAdd(s alloc.Stream, shape []int, dim int, dst, index, src backend.Strided) error {
	return b.unsupported("ScatterAdd", dst.Dtype)
}

// Adam has no kernel yet.
func (b *Backend) Adam(s alloc.Stream, dt backend.Dtype, p, g, m, v uint64, n int, sc kernels.AdamScalars) error {
	return b.unsupported("Adam", dt)
}
