package sim

import (
	"github.com/gpumem/course/gpukit/alloc"
	"github.com/gpumem/course/gpukit/device/backend"
	"github.com/gpumem/course/gpukit/device/cpucompute"
	"github.com/gpumem/course/gpukit/dtypes"
	"github.com/gpumem/course/gpukit/ops"
)

// A simulated device computes: every Backend implements backend.Compute.
// A sim device runs the CPU kernels of gpukit/kernels on its segments'
// backing bytes (gpukit/device/cpucompute, resolving addresses with
// Bytes); the calls are synchronous and charge nothing, as the caller
// (gpukit/tensor) charges each op's modelled cost to the clock with
// Launch, once. A meta device has no bytes: its Compute checks nothing and
// computes nothing (metaCompute), and the op's modelled cost is charged by
// the caller exactly as on sim.
var _ backend.Compute = (*Backend)(nil)

// computer is the embedded Compute of a Backend (unexported, so that its
// methods are the Backend's without a settable field).
type computer = backend.Compute

func newCompute(b *Backend) backend.Compute {
	if b.kind == backend.Meta {
		return metaCompute{}
	}
	return cpucompute.New(b.Name(), b)
}

// metaCompute is the Compute of a meta device: every call succeeds and
// writes nothing.
type metaCompute struct{}

func (metaCompute) Fill(alloc.Stream, []int, backend.Strided, float64) error { return nil }
func (metaCompute) Copy(alloc.Stream, []int, backend.Strided, backend.Strided) error {
	return nil
}
func (metaCompute) Unary(alloc.Stream, ops.Unary, []int, backend.Strided, backend.Strided) error {
	return nil
}
func (metaCompute) Binary(alloc.Stream, ops.Binary, []int, backend.Strided, backend.Strided, backend.Strided) error {
	return nil
}
func (metaCompute) BinaryScalar(alloc.Stream, ops.Binary, []int, backend.Strided, backend.Strided, float64, bool) error {
	return nil
}
func (metaCompute) Reduce(alloc.Stream, ops.Reduce, dtypes.Dtype, uint64, uint64, int, int, int) error {
	return nil
}
func (metaCompute) ReduceStrided(alloc.Stream, ops.Reduce, []int, backend.Strided, backend.Strided) error {
	return nil
}
func (metaCompute) ArgReduce(alloc.Stream, bool, dtypes.Dtype, uint64, uint64, uint64, int, int, int) error {
	return nil
}
func (metaCompute) ArgReduceStrided(alloc.Stream, bool, []int, int, backend.Strided, backend.Strided, backend.Strided) error {
	return nil
}
func (metaCompute) Gemm(alloc.Stream, dtypes.Dtype, bool, bool, int, int, int, float64, uint64, int, uint64, int, float64, uint64, int) error {
	return nil
}
func (metaCompute) GemmBatched(alloc.Stream, dtypes.Dtype, bool, bool, int, int, int, float64, []uint64, int, []uint64, int, float64, []uint64, int) error {
	return nil
}
func (metaCompute) Softmax(alloc.Stream, dtypes.Dtype, uint64, uint64, int, int, bool) error {
	return nil
}
func (metaCompute) SoftmaxStrided(alloc.Stream, []int, int, backend.Strided, backend.Strided, bool) error {
	return nil
}
func (metaCompute) LayerNorm(alloc.Stream, dtypes.Dtype, uint64, uint64, uint64, uint64, uint64, uint64, int, int, float64) error {
	return nil
}
func (metaCompute) LayerNormBackward(alloc.Stream, dtypes.Dtype, uint64, uint64, uint64, uint64, uint64, uint64, uint64, uint64, int, int) error {
	return nil
}
func (metaCompute) BatchNorm(alloc.Stream, backend.BatchNormArgs) error { return nil }
func (metaCompute) BatchNormBackward(alloc.Stream, backend.BatchNormBackwardArgs) error {
	return nil
}
func (metaCompute) NLLLoss(alloc.Stream, dtypes.Dtype, uint64, uint64, uint64, dtypes.Dtype, int, int) error {
	return nil
}
func (metaCompute) Gather(alloc.Stream, []int, int, backend.Strided, backend.Strided, backend.Strided) error {
	return nil
}
func (metaCompute) ScatterAdd(alloc.Stream, []int, int, backend.Strided, backend.Strided, backend.Strided) error {
	return nil
}
func (metaCompute) Adam(alloc.Stream, dtypes.Dtype, uint64, uint64, uint64, uint64, int, ops.AdamScalars) error {
	return nil
}
func (metaCompute) Where(alloc.Stream, []int, backend.Strided, backend.Strided, backend.Strided, backend.Strided) error {
	return nil
}
func (metaCompute) InRange(alloc.Stream, []int, backend.Strided, backend.Strided, float64, float64) error {
	return nil
}
func (metaCompute) CSRMatmul(alloc.Stream, dtypes.Dtype, backend.CSR, uint64, uint64, int) error {
	return nil
}
func (metaCompute) CSRMatmulT(alloc.Stream, dtypes.Dtype, backend.CSR, uint64, uint64, int) error {
	return nil
}
func (metaCompute) CSRSampledDot(alloc.Stream, dtypes.Dtype, backend.CSR, uint64, uint64, uint64, int) error {
	return nil
}
