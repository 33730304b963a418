//go:build cuda || nvrtc

package cuda

import (
	"slices"

	"github.com/gpumem/course/gpukit/device/backend"
	"github.com/gpumem/course/gpukit/dtypes"
)

// capabilities is the cuda Capabilities table, read off the dtype checks
// of the plans and of compute.go (so that the table and the checks do not
// drift apart; computetest checks the table against the calls on a GPU,
// capabilities_test.go against the plans without one). ReduceStrided,
// ArgReduceStrided, GemmBatched and SoftmaxStrided have no kernel in any
// dtype and are absent.
func capabilities() backend.Capabilities {
	all := slices.Clone(allDtypes)                            // knownDtype: Fill, Copy, Where, InRange
	stored := backend.DtypesWhere(func(d dtypes.Dtype) bool { // planGather's storageType
		_, err := storageType(d)
		return err == nil
	})
	arith := backend.DtypesWhere(arithmetic)                // planUnary, planBinary
	reduce := backend.DtypesWhere(reducible)                // Reduce, ArgReduce
	gemm := backend.DtypesWhere(func(d dtypes.Dtype) bool { // Gemm: cublasGemmEx or floatDtype
		_, ex := gemmDataType(d)
		return ex || floatKernel(d)
	})
	float := backend.DtypesWhere(floatKernel) // floatDtype: the row kernels, ScatterAdd, the sparse products
	return backend.Capabilities{
		"Fill": all, "Copy": all, "Where": all, "InRange": all, "Gather": stored,
		"Unary": arith, "Binary": arith, "BinaryScalar": arith,
		"Reduce": reduce, "ArgReduce": reduce,
		"Gemm":    gemm,
		"Softmax": float, "LayerNorm": float, "LayerNormBackward": float, "BatchNorm": float, "BatchNormBackward": float,
		"NLLLoss": float, "Adam": float, "ScatterAdd": float,
		"CSRMatmul": float, "CSRMatmulT": float, "CSRSampledDot": float,
	}
}
