package tensor

import (
	"github.com/gpumem/course/gpukit/device/backend"
	"github.com/gpumem/course/gpukit/device/cpucompute"
	"github.com/gpumem/course/gpukit/kernels"
)

// Dtype is the element type of a tensor.
type Dtype uint8

// The element types. Float16 and BFloat16 are stored as their 16-bit
// patterns; ops compute them in float32 and round back to nearest-even.
const (
	Float32 Dtype = iota
	Float64
	Float16
	BFloat16
	Int64
	Int32
	Bool
)

// String returns the PyTorch name without the "torch." prefix, e.g. "float32".
func (d Dtype) String() string {
	if d.valid() {
		return backend.Dtype(d).String()
	}
	return "dtype(?)"
}

// Size is the element size in bytes (PyTorch's itemsize).
func (d Dtype) Size() int {
	if d.valid() {
		return backend.Dtype(d).Size()
	}
	panic(errorf("unknown dtype %d", int(d)))
}

// valid reports whether d is one of the dtypes above, which are
// backend.Dtype's in the same order (TestDtypesMatchBackend).
func (d Dtype) valid() bool { return d <= Bool }

// IsFloat reports whether d is a floating-point type, the only kind that
// can require gradients.
func (d Dtype) IsFloat() bool {
	return d == Float32 || d == Float64 || d == Float16 || d == BFloat16
}

// Float32ToFloat16 converts f to IEEE 754 binary16 bits, rounding to nearest
// even, with overflow to ±Inf, gradual underflow to subnormals, and NaN kept
// NaN (kernels.Float32ToFloat16).
func Float32ToFloat16(f float32) uint16 { return kernels.Float32ToFloat16(f) }

// Float16ToFloat32 converts binary16 bits to float32 exactly.
func Float16ToFloat32(h uint16) float32 { return kernels.Float16ToFloat32(h) }

// Float32ToBFloat16 converts f to bfloat16 bits (the top 16 bits of a
// float32), rounding to nearest even; NaN stays a quiet NaN.
func Float32ToBFloat16(f float32) uint16 { return kernels.Float32ToBFloat16(f) }

// BFloat16ToFloat32 converts bfloat16 bits to float32 exactly.
func BFloat16ToFloat32(h uint16) float32 { return kernels.BFloat16ToFloat32(h) }

// load reads element i (in elements, not bytes) of data as float64.
func load(d Dtype, data []byte, i int) float64 { return cpucompute.Load(backend.Dtype(d), data, i) }

// store writes v, converted to d, at element i of data. Integer types
// truncate toward zero as a C cast does; half types round to nearest even
// from the float32 value.
func store(d Dtype, data []byte, i int, v float64) { cpucompute.Store(backend.Dtype(d), data, i, v) }
