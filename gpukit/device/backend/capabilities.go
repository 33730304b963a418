package backend

import (
	"slices"

	"github.com/gpumem/course/gpukit/dtypes"
)

// Capabilities is the table of what a Compute has kernels for, as gomlx's
// backends/capabilities.go: for each Compute method, by name, the dtypes
// it computes in. A call whose (method, dtype) the table lists does not
// return an *UnsupportedError; one it does not list does
// (gpukit/device/computetest checks both directions on every backend, so
// a table cannot lie). A method missing from the table has no kernel at
// all.
//
// The dtype of a call is the one its UnsupportedError names: the
// operands' for Unary, Binary and BinaryScalar (comparisons into a Bool
// dst included), Where and Gather; dst's for Fill and Copy; src's for
// ReduceStrided, ArgReduceStrided, SoftmaxStrided and InRange; the dt
// argument (BatchNorm's Dtype) for the others. The table covers each
// method's domain (Domain): a dtype outside it is a misuse, not a
// missing kernel.
//
// A caller asks the table before calling, instead of discovering an
// UnsupportedError (see the package example).
type Capabilities map[string][]dtypes.Dtype

// Supports reports whether the method has a kernel for dt.
func (c Capabilities) Supports(method string, dt dtypes.Dtype) bool {
	return slices.Contains(c[method], dt)
}

// Dtypes are the dtypes of Compute operands, in order.
var Dtypes = []dtypes.Dtype{dtypes.Float32, dtypes.Float64, dtypes.Float16, dtypes.BFloat16, dtypes.Int64, dtypes.Int32, dtypes.Bool}

// Floats are the dtypes of the row kernels: the float types.
var Floats = Dtypes[:4:4]

// Domain is every Compute method with every dtype it is defined for: the
// row kernels (softmax, the norms and NLLLoss) take the float types, the
// sparse products float32 and float64, the other methods every dtype. It
// is the table of a Compute that has every kernel (a meta device's, which
// computes nothing), and each backend's table is a subset of it.
func Domain() Capabilities {
	c := Capabilities{}
	for _, m := range []string{"Fill", "Copy", "Unary", "Binary", "BinaryScalar", "Reduce", "ReduceStrided",
		"ArgReduce", "ArgReduceStrided", "Gemm", "GemmBatched", "Gather", "ScatterAdd", "Where", "InRange", "Adam"} {
		c[m] = slices.Clone(Dtypes)
	}
	for _, m := range []string{"Softmax", "SoftmaxStrided", "LayerNorm", "LayerNormBackward", "BatchNorm", "BatchNormBackward", "NLLLoss"} {
		c[m] = slices.Clone(Floats)
	}
	for _, m := range []string{"CSRMatmul", "CSRMatmulT", "CSRSampledDot"} {
		c[m] = slices.Clone(Dtypes[:2])
	}
	return c
}

// DtypesWhere are the dtypes of Dtypes for which ok holds, in order: a
// table entry from a backend's dtype check.
func DtypesWhere(ok func(dtypes.Dtype) bool) []dtypes.Dtype {
	var out []dtypes.Dtype
	for _, dt := range Dtypes {
		if ok(dt) {
			out = append(out, dt)
		}
	}
	return out
}
