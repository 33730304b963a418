//go:build nvrtc

package cuda

import (
	"errors"
	"testing"

	"github.com/gpumem/course/gpukit/device/backend"
	"github.com/gpumem/course/gpukit/dtypes"
	"github.com/gpumem/course/gpukit/ops"
)

// TestCapabilitiesMatchThePlans checks the Capabilities table without a
// GPU, as computetest checks it on one: every planned method, in every
// dtype of its domain, with arguments that are otherwise valid, returns an
// UnsupportedError exactly when the table does not list the dtype.
// (Reduce, ArgReduce and Gemm check their dtype in compute.go with the
// predicates the table is read from.)
func TestCapabilitiesMatchThePlans(t *testing.T) {
	const dev, f32, i64 = "cuda:0", dtypes.Float32, dtypes.Int64
	st := func(addr uint64, dt dtypes.Dtype) backend.Strided {
		return backend.Strided{Addr: addr, Dtype: dt, Strides: []int{3, 1}}
	}
	shape := []int{2, 3}
	first := func(_ any, err error) error { return err }
	adam := ops.AdamScalars{LR: 1e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, Step: 1}
	csr := func(op string, dt dtypes.Dtype) error {
		a := backend.CSR{Values: 1, ColIndices: 2, RowOffsets: 3, Index: i64, Rows: 2, Cols: 2, NNZ: 1}
		return first(planCSR(dev, op, dt, a, 4, 5, 6, 3))
	}
	calls := map[string]func(dt dtypes.Dtype) error{
		"Fill": func(dt dtypes.Dtype) error { return first(planFill(dev, shape, st(1, dt), 1)) },
		"Copy": func(dt dtypes.Dtype) error { return first(planCopy(dev, shape, st(1, dt), st(2, f32))) },
		"Unary": func(dt dtypes.Dtype) error {
			return first(planUnary(dev, ops.Neg, shape, st(1, dt), st(2, dt)))
		},
		"Binary": func(dt dtypes.Dtype) error {
			b := st(3, dt)
			return first(planBinary(dev, ops.Add, shape, st(1, dt), st(2, dt), &b, 0, false))
		},
		"BinaryScalar": func(dt dtypes.Dtype) error {
			return first(planBinary(dev, ops.Less, shape, st(1, dtypes.Bool), st(2, dt), nil, 1, true))
		},
		"Where": func(dt dtypes.Dtype) error {
			return first(planWhere(dev, shape, st(1, dt), st(2, dtypes.Bool), st(3, dt), st(4, dt)))
		},
		"InRange": func(dt dtypes.Dtype) error {
			return first(planInRange(dev, shape, st(1, dtypes.Bool), st(2, dt), 0, 1))
		},
		"Gather": func(dt dtypes.Dtype) error {
			return first(planGather(dev, shape, 1, st(1, dt), st(2, dt), st(3, i64)))
		},
		"ScatterAdd": func(dt dtypes.Dtype) error {
			return first(planScatterAdd(dev, shape, 1, st(1, dt), st(2, i64), st(3, dt)))
		},
		"Softmax":   func(dt dtypes.Dtype) error { return first(planSoftmax(dev, dt, 1, 2, 3, 4, false)) },
		"LayerNorm": func(dt dtypes.Dtype) error { return first(planLayerNorm(dev, dt, 1, 2, 3, 4, 0, 0, 3, 4, 1e-5)) },
		"LayerNormBackward": func(dt dtypes.Dtype) error {
			return first(planLayerNormBackward(dev, dt, 1, 0, 0, 2, 3, 4, 5, 0, 3, 4))
		},
		"BatchNorm": func(dt dtypes.Dtype) error {
			return first(planBatchNorm(dev, backend.BatchNormArgs{Dtype: dt, Y: 1, X: 2, Batch: 2, Channels: 3, Length: 4,
				StatDtype: f32, Training: true, SaveMean: 3, SaveInvstd: 4}))
		},
		"BatchNormBackward": func(dt dtypes.Dtype) error {
			return first(planBatchNormBackward(dev, backend.BatchNormBackwardArgs{Dtype: dt, Grad: 1, X: 2, GradX: 3, Batch: 2, Channels: 3, Length: 4,
				Stat1: vec1(4, f32), Stat2: vec1(5, f32), Training: true}))
		},
		"NLLLoss":       func(dt dtypes.Dtype) error { return first(planNLLLoss(dev, dt, 1, 2, 3, i64, 4, 5)) },
		"Adam":          func(dt dtypes.Dtype) error { return first(planAdam(dev, dt, 1, 2, 3, 4, 10, adam)) },
		"CSRMatmul":     func(dt dtypes.Dtype) error { return csr("CSRMatmul", dt) },
		"CSRMatmulT":    func(dt dtypes.Dtype) error { return csr("CSRMatmulT", dt) },
		"CSRSampledDot": func(dt dtypes.Dtype) error { return csr("CSRSampledDot", dt) },
	}
	caps := capabilities()
	for m, domain := range backend.Domain() {
		call, ok := calls[m]
		if !ok {
			continue
		}
		for _, dt := range domain {
			err := call(dt)
			var ue *backend.UnsupportedError
			if unsupported := errors.As(err, &ue); unsupported == caps.Supports(m, dt) {
				t.Errorf("%s of %v: %v, but Capabilities.Supports says %v", m, dt, err, caps.Supports(m, dt))
			} else if !unsupported && err != nil {
				t.Errorf("%s of %v: %v", m, dt, err)
			}
		}
	}
	for m := range caps {
		if _, ok := backend.Domain()[m]; !ok {
			t.Errorf("Capabilities lists %s, not a Compute method", m)
		}
	}
}
