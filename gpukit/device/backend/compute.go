package backend

import (
	"fmt"

	"github.com/gpumem/course/gpukit/alloc"
	"github.com/gpumem/course/gpukit/dtypes"
	"github.com/gpumem/course/gpukit/ops"
)

// Compute is the kernels of a device: every op of gpukit/tensor computes
// through its device's Compute. cuda implements it with its own kernels;
// sim and host memory with the CPU kernels of gpukit/kernels
// (gpukit/device/cpucompute), and meta devices with no-ops (no values).
//
// The operations are named by gpukit/ops and their operands typed by
// gpukit/dtypes (the vocabulary every floor shares); they have the
// semantics of gpukit/kernels (NaN propagation of Max and Min, float64 accumulation
// of sums, ties of ArgReduce going to the lowest index), so that a result
// on a GPU can be checked against the CPU kernel that sim uses.
//
// Every call is queued on stream s and returns once it is queued (errors
// are those of queuing: a kernel that fails to compile, a bad launch). All
// addresses are device addresses of this backend, already moved to the
// first element the call reads or writes (the caller applies storage
// offsets); strides and sizes count elements, not bytes. Outputs must not
// partially overlap inputs (out == input exactly, for an in-place update,
// is allowed for the elementwise operations).
type Compute interface {
	// Capabilities is the table of the methods and dtypes this Compute
	// has kernels for: a call it lists does not return an
	// UnsupportedError, one it does not list does.
	Capabilities() Capabilities

	// Fill sets every element of dst (shape) to v, converted to dst's dtype.
	Fill(s alloc.Stream, shape []int, dst Strided, v float64) error
	// Copy copies src into dst elementwise over shape, converting between
	// dtypes. src may broadcast (stride 0).
	Copy(s alloc.Stream, shape []int, dst, src Strided) error
	// Unary computes dst = op(src) over shape. dst and src have one dtype.
	Unary(s alloc.Stream, op ops.Unary, shape []int, dst, src Strided) error
	// Binary computes dst = op(a, b) over shape; a and b may broadcast.
	// All three have one dtype, except that the comparisons (Greater,
	// Less, Equal, GreaterEqual, LessEqual) may write a Bool dst (1 for
	// true, 0 for false), as may BinaryScalar's.
	Binary(s alloc.Stream, op ops.Binary, shape []int, dst, a, b Strided) error
	// BinaryScalar computes dst = op(a, scalar), or op(scalar, a) when
	// scalarFirst.
	BinaryScalar(s alloc.Stream, op ops.Binary, shape []int, dst, a Strided, scalar float64, scalarFirst bool) error
	// Reduce reduces the middle dimension of the contiguous array src
	// viewed as [outer, n, inner] into the contiguous dst of outer·inner
	// elements (as kernels.Reduce). dst and src have dtype dt.
	Reduce(s alloc.Stream, op ops.Reduce, dt dtypes.Dtype, dst, src uint64, outer, n, inner int) error
	// ReduceStrided sums (op ReduceSum) or averages (ReduceMean) src over
	// shape into dst, whose strides are 0 on the reduced dimensions (the
	// dimensions of size > 1 where dst's stride is 0; dst has shape with
	// those set to 1). The sums are taken in float64 in src's row-major
	// order. dst and src may have different dtypes and any layout: this is
	// the reduction for layouts Reduce cannot read. A backend without it
	// returns an UnsupportedError and the caller copies src contiguous
	// for Reduce. (Added for the CPU backends; cuda: not yet.)
	ReduceStrided(s alloc.Stream, op ops.Reduce, shape []int, dst, src Strided) error
	// ArgReduce writes, for each of the outer·inner lines of src (layout as
	// for Reduce), the position of its largest (largest) or smallest
	// element into index (int64) and that element into value (dtype dt),
	// as kernels.ArgMax and kernels.ArgMin.
	ArgReduce(s alloc.Stream, largest bool, dt dtypes.Dtype, index, value, src uint64, outer, n, inner int) error
	// ArgReduceStrided is ArgReduce for src of any layout: for each line
	// of src (shape) along dim, the position of its largest (or smallest)
	// element goes to index (int64) and the element to value (src's
	// dtype); index and value are strided over shape with stride 0 along
	// dim. A backend without it returns an UnsupportedError and the caller
	// copies src contiguous for ArgReduce. (Added for the CPU backends;
	// cuda: not yet.)
	ArgReduceStrided(s alloc.Stream, largest bool, shape []int, dim int, index, value, src Strided) error
	// Gemm computes C = alpha·op(A)·op(B) + beta·C for row-major matrices
	// (as kernels.Sgemm): op(A) is m×k, op(B) k×n, C m×n, and lda, ldb, ldc
	// are the row strides of A, B and C as stored.
	Gemm(s alloc.Stream, dt dtypes.Dtype, transA, transB bool, m, n, k int, alpha float64, a uint64, lda int, b uint64, ldb int, beta float64, c uint64, ldc int) error
	// GemmBatched computes len(c) independent products as Gemm,
	// C[i] = alpha·op(A[i])·op(B[i]) + beta·C[i], with matrix i of each
	// operand at a[i], b[i] and c[i] (cublasGemmBatchedEx); C's matrices
	// must not overlap. A backend without it returns an UnsupportedError
	// and the caller loops over Gemm. (Added for the CPU backends, where
	// it spreads the products over the cores; cuda: not yet.)
	GemmBatched(s alloc.Stream, dt dtypes.Dtype, transA, transB bool, m, n, k int, alpha float64, a []uint64, lda int, b []uint64, ldb int, beta float64, c []uint64, ldc int) error

	// The fused row kernels. Their arrays are contiguous, of dtype dt, and
	// an address of 0 marks an optional array that is absent.

	// Softmax writes the softmax (log-softmax when log) of each of the
	// rows rows of n elements of src into dst, as kernels.SoftmaxRows.
	Softmax(s alloc.Stream, dt dtypes.Dtype, dst, src uint64, rows, n int, log bool) error
	// SoftmaxStrided writes the softmax (log-softmax when log) of src
	// along dimension dim of shape into dst, both of any layout and
	// dtype: the softmax for what Softmax cannot read (another dimension
	// than the contiguous last one, dst's dtype other than src's). Each
	// line is computed in float64 after subtracting its maximum.
	SoftmaxStrided(s alloc.Stream, shape []int, dim int, dst, src Strided, log bool) error
	// LayerNorm normalises each of the rows rows of n elements of x into
	// y, scaled by w and shifted by b (n each, optional), and writes each
	// row's mean and 1/√(var+eps) into mean and rstd (rows each), as
	// kernels.LayerNormRows. For the 16-bit dtypes mean and rstd are
	// float32 (PyTorch's accumulation type, like BatchNormArgs.StatDtype),
	// here and in LayerNormBackward.
	LayerNorm(s alloc.Stream, dt dtypes.Dtype, y, mean, rstd, x, w, b uint64, rows, n int, eps float64) error
	// LayerNormBackward writes the gradients dx (rows·n), dw and db (n
	// each) of LayerNorm from the output gradient g, the input x, the
	// forward's mean and rstd and the weight w (optional); each of dx, dw
	// and db is optional (0: not wanted), as kernels.LayerNormBackwardRows.
	LayerNormBackward(s alloc.Stream, dt dtypes.Dtype, dx, dw, db, g, x, mean, rstd, w uint64, rows, n int) error
	// BatchNorm is PyTorch's native_batch_norm over a contiguous
	// [Batch, Channels, Length] input; see BatchNormArgs.
	BatchNorm(s alloc.Stream, a BatchNormArgs) error
	// BatchNormBackward is native_batch_norm_backward; see
	// BatchNormBackwardArgs.
	BatchNormBackward(s alloc.Stream, a BatchNormBackwardArgs) error
	// NLLLoss writes into out (one element of dtype dt) the mean over the
	// rows of −logProbs[i, targets[i]], for rows rows of n log-probabilities
	// and rows targets of dtype targetDt (Int64 or Int32) in [0, n), summed
	// in float64 in row order (nll_loss with reduction="mean").
	NLLLoss(s alloc.Stream, dt dtypes.Dtype, out, logProbs, targets uint64, targetDt dtypes.Dtype, rows, n int) error
	// Gather writes dst[i][j][k] = src[i][index[i][j][k]][k] (for dim 1 of
	// a 3-d shape; likewise for any rank and dim) over shape, the index's
	// shape, as torch.gather; index has dtype Int64 or Int32 and values
	// already checked to lie in [0, srcDimSize).
	Gather(s alloc.Stream, shape []int, dim int, dst, src, index Strided) error
	// ScatterAdd adds src[i][j][k] into dst[i][index[i][j][k]][k] (for
	// dim 1; likewise for any rank) over shape, the index's shape, as
	// torch.Tensor.scatter_add_. Index values are already checked.
	ScatterAdd(s alloc.Stream, shape []int, dim int, dst, index, src Strided) error
	// Where writes dst = a where cond else b over shape; cond has dtype
	// Bool, a, b and dst one dtype; all may broadcast but dst.
	Where(s alloc.Stream, shape []int, dst, cond, a, b Strided) error
	// InRange writes the Bool dst = lo ≤ src ≤ hi over shape (a NaN gives
	// false), lo and hi rounded to src's dtype as comparisons round a
	// scalar (Round): the mask that clamp's backward keeps.
	InRange(s alloc.Stream, shape []int, dst, src Strided, lo, hi float64) error
	// Adam applies one Adam (or AdamW) step to the n elements of the
	// parameter p in place, from its gradient g, updating the state m
	// (exp_avg) and v (exp_avg_sq), as kernels.AdamUpdate.
	Adam(s alloc.Stream, dt dtypes.Dtype, p, g, m, v uint64, n int, sc ops.AdamScalars) error

	// The sparse CSR products of torch.sparse.mm (gpukit/tensor's
	// SparseCSRMatmul and its backward). The matrix a is a CSR (see CSR);
	// the dense operands and the result are contiguous row-major arrays of
	// dtype dt (Float32 or Float64, a's values' dtype), n columns wide. The
	// CSR structure is already checked (offsets from 0 to NNZ, never
	// decreasing; every column in [0, Cols)). The summation order is that
	// of gpukit/kernels, so that the CPU results are bitwise those of the
	// kernels.

	// CSRMatmul writes out = a·b (as kernels.CSRMatmul): out is
	// a.Rows×n, b a.Cols×n; row r of out sums its entries in order.
	CSRMatmul(s alloc.Stream, dt dtypes.Dtype, a CSR, b, out uint64, n int) error
	// CSRMatmulT writes out = aᵀ·g (as kernels.CSRMatmulT), the gradient
	// of CSRMatmul's dense operand: out is a.Cols×n, g a.Rows×n;
	// out[c, j] sums v·g[r, j] over the entries (r, c, v) in the CSR's
	// order (row by row, each row's entries in order).
	CSRMatmulT(s alloc.Stream, dt dtypes.Dtype, a CSR, g, out uint64, n int) error
	// CSRSampledDot writes out[e] = g[r, :]·b[c, :] for each entry e (row
	// r, column c) of a's pattern, the sum in column order (as
	// kernels.CSRSampledDot), the gradient of CSRMatmul's values: out has
	// a.NNZ elements, g is a.Rows×n, b a.Cols×n; a.Values is not read.
	CSRSampledDot(s alloc.Stream, dt dtypes.Dtype, a CSR, g, b, out uint64, n int) error
}

// CSR is a sparse Rows×Cols matrix in compressed sparse row form, as
// torch.sparse_csr_tensor: row r holds the entries RowOffsets[r] to
// RowOffsets[r+1]−1, entry e in column ColIndices[e] with value
// Values[e]. RowOffsets has Rows+1 elements, ColIndices and Values NNZ,
// all contiguous; both index arrays are of dtype Index (Int64 or Int32).
type CSR struct {
	Values, ColIndices, RowOffsets uint64
	Index                          dtypes.Dtype
	Rows, Cols, NNZ                int
}

// BatchNormArgs are the operands of Compute.BatchNorm. X and Y are
// contiguous [Batch, Channels, Length] arrays of dtype Dtype. In training
// the kernel computes each channel's mean and biased variance over Batch
// and Length (in float64), writes the mean and 1/√(var+Eps) into SaveMean
// and SaveInvstd, and, when both running statistics are present, updates
// them: r ← (1−Momentum)·r + Momentum·stat, the variance unbiased by
// count/(count−1). In evaluation it normalises with RunningMean and
// RunningVar. Then Y = (X − mean)·invstd·Weight + Bias per channel.
type BatchNormArgs struct {
	Dtype                   dtypes.Dtype
	Y, X                    uint64
	Batch, Channels, Length int
	// Weight, Bias, RunningMean and RunningVar are per-channel vectors
	// (one stride each, their own dtypes); Addr 0: absent (weight 1,
	// bias 0, no running statistics).
	Weight, Bias, RunningMean, RunningVar Strided
	// SaveMean and SaveInvstd are contiguous, of StatDtype (float32 for
	// 16-bit inputs, as PyTorch); written in training only.
	SaveMean, SaveInvstd uint64
	StatDtype            dtypes.Dtype
	Training             bool
	Momentum, Eps        float64
}

// BatchNormBackwardArgs are the operands of Compute.BatchNormBackward.
// With x̂ = (x−μ)·invstd and ĝ = g·w per channel, in training
//
//	dx = invstd · (ĝ − mean(ĝ) − x̂ · mean(ĝ·x̂))   (means over Batch and Length)
//
// and in evaluation dx = ĝ·invstd; in both dw = Σ g·x̂ and db = Σ g.
type BatchNormBackwardArgs struct {
	Dtype                   dtypes.Dtype
	Grad, X                 uint64 // contiguous [Batch, Channels, Length]
	Batch, Channels, Length int
	// GradX is contiguous like X; GradWeight and GradBias are per-channel
	// vectors of their own dtypes. Addr 0: not wanted.
	GradX                uint64
	GradWeight, GradBias Strided
	// Weight is optional (1); Stat1 and Stat2 are save_mean and save_invstd
	// in training, running_mean and running_var in evaluation.
	Weight, Stat1, Stat2 Strided
	Training             bool
	Eps                  float64
}

// UnsupportedError is returned by a Compute method that has no kernel for
// an operation or dtype on its backend. Callers report it to the user; the
// computetest suite lists these as the backend's missing operations.
type UnsupportedError struct {
	Backend string // "cuda:0"
	Op      string // the Compute method, "LayerNorm"
	Dtype   dtypes.Dtype
}

func (e *UnsupportedError) Error() string {
	return fmt.Sprintf("backend: %s has no %s kernel for %s", e.Backend, e.Op, e.Dtype)
}

// Strided is an N-d operand of a Compute call: the device address of its
// first element, its element type and one stride (in elements, ≥ 0; 0
// broadcasts) per dimension of the call's shape.
type Strided struct {
	Addr    uint64
	Dtype   dtypes.Dtype
	Strides []int
}
