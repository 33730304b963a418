package tensor

import (
	"github.com/gpumem/course/gpukit/dtypes"
)

// Dtype is the element type of a tensor: gpukit/dtypes' element types,
// of which it takes the values, names, sizes and properties. It is a type
// of its own rather than an alias because a dtype is also an Option of
// the constructors (tensor.Zeros(shape, tensor.Float16)), a method that a
// type of another package cannot have.
type Dtype dtypes.Dtype

// The element types. Float16 and BFloat16 are stored as their 16-bit
// patterns; ops compute them in float32 and round back to nearest-even.
const (
	Float32  = Dtype(dtypes.Float32)
	Float64  = Dtype(dtypes.Float64)
	Float16  = Dtype(dtypes.Float16)
	BFloat16 = Dtype(dtypes.BFloat16)
	Int64    = Dtype(dtypes.Int64)
	Int32    = Dtype(dtypes.Int32)
	Bool     = Dtype(dtypes.Bool)
)

// String returns the PyTorch name without the "torch." prefix, e.g. "float32".
func (d Dtype) String() string {
	if d.valid() {
		return dtypes.Dtype(d).String()
	}
	return "dtype(?)"
}

// Size is the element size in bytes (PyTorch's itemsize).
func (d Dtype) Size() int {
	if d.valid() {
		return dtypes.Dtype(d).Size()
	}
	panic(errorf("unknown dtype %d", int(d)))
}

// valid reports whether d is one of gpukit/dtypes' element types.
func (d Dtype) valid() bool { return dtypes.Dtype(d).Valid() }

// IsFloat reports whether d is a floating-point type, the only kind that
// can require gradients.
func (d Dtype) IsFloat() bool { return dtypes.Dtype(d).IsFloat() }

// load reads element i (in elements, not bytes) of data as float64.
func load(d Dtype, data []byte, i int) float64 { return dtypes.Load(dtypes.Dtype(d), data, i) }

// store writes v, converted to d, at element i of data. Integer types
// truncate toward zero as a C cast does; half types round to nearest even
// from the float32 value.
func store(d Dtype, data []byte, i int, v float64) { dtypes.Store(dtypes.Dtype(d), data, i, v) }
