package backend

import (
	"github.com/gpumem/course/gpukit/alloc"
	"github.com/gpumem/course/gpukit/dtypes"
	"github.com/gpumem/course/gpukit/ops"
)

// NopCompute is a Compute whose every call succeeds and writes nothing:
// the Compute of a meta device, which has no values. A Compute that
// differs in a few methods embeds it and declares those (as gomlx's
// backends/notimplemented is the base of a partial backend, with no-ops
// here rather than errors).
type NopCompute struct{}

var _ Compute = NopCompute{}

// Capabilities is the whole domain: a NopCompute lacks no kernel.
func (NopCompute) Capabilities() Capabilities { return Domain() }

func (NopCompute) Fill(alloc.Stream, []int, Strided, float64) error             { return nil }
func (NopCompute) Copy(alloc.Stream, []int, Strided, Strided) error             { return nil }
func (NopCompute) Unary(alloc.Stream, ops.Unary, []int, Strided, Strided) error { return nil }
func (NopCompute) Binary(alloc.Stream, ops.Binary, []int, Strided, Strided, Strided) error {
	return nil
}
func (NopCompute) BinaryScalar(alloc.Stream, ops.Binary, []int, Strided, Strided, float64, bool) error {
	return nil
}
func (NopCompute) Reduce(alloc.Stream, ops.Reduce, dtypes.Dtype, uint64, uint64, int, int, int) error {
	return nil
}
func (NopCompute) ReduceStrided(alloc.Stream, ops.Reduce, []int, Strided, Strided) error { return nil }
func (NopCompute) ArgReduce(alloc.Stream, bool, dtypes.Dtype, uint64, uint64, uint64, int, int, int) error {
	return nil
}
func (NopCompute) ArgReduceStrided(alloc.Stream, bool, []int, int, Strided, Strided, Strided) error {
	return nil
}
func (NopCompute) Gemm(alloc.Stream, dtypes.Dtype, bool, bool, int, int, int, float64, uint64, int, uint64, int, float64, uint64, int) error {
	return nil
}
func (NopCompute) GemmBatched(alloc.Stream, dtypes.Dtype, bool, bool, int, int, int, float64, []uint64, int, []uint64, int, float64, []uint64, int) error {
	return nil
}
func (NopCompute) Softmax(alloc.Stream, dtypes.Dtype, uint64, uint64, int, int, bool) error {
	return nil
}
func (NopCompute) SoftmaxStrided(alloc.Stream, []int, int, Strided, Strided, bool) error { return nil }
func (NopCompute) LayerNorm(alloc.Stream, dtypes.Dtype, uint64, uint64, uint64, uint64, uint64, uint64, int, int, float64) error {
	return nil
}
func (NopCompute) LayerNormBackward(alloc.Stream, dtypes.Dtype, uint64, uint64, uint64, uint64, uint64, uint64, uint64, uint64, int, int) error {
	return nil
}
func (NopCompute) BatchNorm(alloc.Stream, BatchNormArgs) error                 { return nil }
func (NopCompute) BatchNormBackward(alloc.Stream, BatchNormBackwardArgs) error { return nil }
func (NopCompute) NLLLoss(alloc.Stream, dtypes.Dtype, uint64, uint64, uint64, dtypes.Dtype, int, int) error {
	return nil
}
func (NopCompute) Gather(alloc.Stream, []int, int, Strided, Strided, Strided) error     { return nil }
func (NopCompute) ScatterAdd(alloc.Stream, []int, int, Strided, Strided, Strided) error { return nil }
func (NopCompute) Adam(alloc.Stream, dtypes.Dtype, uint64, uint64, uint64, uint64, int, ops.AdamScalars) error {
	return nil
}
func (NopCompute) Where(alloc.Stream, []int, Strided, Strided, Strided, Strided) error   { return nil }
func (NopCompute) InRange(alloc.Stream, []int, Strided, Strided, float64, float64) error { return nil }
func (NopCompute) CSRMatmul(alloc.Stream, dtypes.Dtype, CSR, uint64, uint64, int) error  { return nil }
func (NopCompute) CSRMatmulT(alloc.Stream, dtypes.Dtype, CSR, uint64, uint64, int) error { return nil }
func (NopCompute) CSRSampledDot(alloc.Stream, dtypes.Dtype, CSR, uint64, uint64, uint64, int) error {
	return nil
}
