package backend

import (
	"fmt"

	"github.com/gpumem/course/gpukit/alloc"
	"github.com/gpumem/course/gpukit/kernels"
)

// Compute is implemented by backends that run kernels on their own device
// memory (cuda). sim does not implement it: its memory is host memory, and
// gpukit/tensor computes there with the CPU kernels of gpukit/kernels.
//
// The operations are those of gpukit/kernels, with the same op enums and
// the same semantics (NaN propagation of Max and Min, float64 accumulation
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
	// Fill sets every element of dst (shape) to v, converted to dst's dtype.
	Fill(s alloc.Stream, shape []int, dst Strided, v float64) error
	// Copy copies src into dst elementwise over shape, converting between
	// dtypes. src may broadcast (stride 0).
	Copy(s alloc.Stream, shape []int, dst, src Strided) error
	// Unary computes dst = op(src) over shape. dst and src have one dtype.
	Unary(s alloc.Stream, op kernels.UnaryOp, shape []int, dst, src Strided) error
	// Binary computes dst = op(a, b) over shape; a and b may broadcast.
	// All three have one dtype.
	Binary(s alloc.Stream, op kernels.BinaryOp, shape []int, dst, a, b Strided) error
	// BinaryScalar computes dst = op(a, scalar), or op(scalar, a) when
	// scalarFirst.
	BinaryScalar(s alloc.Stream, op kernels.BinaryOp, shape []int, dst, a Strided, scalar float64, scalarFirst bool) error
	// Reduce reduces the middle dimension of the contiguous array src
	// viewed as [outer, n, inner] into the contiguous dst of outer·inner
	// elements (as kernels.Reduce). dst and src have dtype dt.
	Reduce(s alloc.Stream, op kernels.ReduceOp, dt Dtype, dst, src uint64, outer, n, inner int) error
	// ArgReduce writes, for each of the outer·inner lines of src (layout as
	// for Reduce), the position of its largest (largest) or smallest
	// element into index (int64) and that element into value (dtype dt),
	// as kernels.ArgMax and kernels.ArgMin.
	ArgReduce(s alloc.Stream, largest bool, dt Dtype, index, value, src uint64, outer, n, inner int) error
	// Gemm computes C = alpha·op(A)·op(B) + beta·C for row-major matrices
	// (as kernels.Sgemm): op(A) is m×k, op(B) k×n, C m×n, and lda, ldb, ldc
	// are the row strides of A, B and C as stored.
	Gemm(s alloc.Stream, dt Dtype, transA, transB bool, m, n, k int, alpha float64, a uint64, lda int, b uint64, ldb int, beta float64, c uint64, ldc int) error
}

// Dtype is the element type of a Compute operand.
type Dtype uint8

// The element types Compute works on.
const (
	Float32 Dtype = iota
	Float64
)

// Size is the size of one element in bytes.
func (d Dtype) Size() int {
	switch d {
	case Float32:
		return 4
	case Float64:
		return 8
	}
	panic(fmt.Sprintf("backend: unknown %v", d))
}

// String returns "float32" or "float64".
func (d Dtype) String() string {
	switch d {
	case Float32:
		return "float32"
	case Float64:
		return "float64"
	}
	return fmt.Sprintf("Dtype(%d)", uint8(d))
}

// Strided is an N-d operand of a Compute call: the device address of its
// first element, its element type and one stride (in elements, ≥ 0; 0
// broadcasts) per dimension of the call's shape.
type Strided struct {
	Addr    uint64
	Dtype   Dtype
	Strides []int
}
