// Package dtypes is gpukit's vocabulary of element types, shared by every
// floor: tensors (gpukit/tensor's Dtype is this one), the Compute interface
// of the backends, and the kernels. It is a leaf: it imports nothing of
// gpukit.
//
// A dtype's properties are a table (info below), not the order of the
// constants: adding a dtype is one row. The package also holds what every
// floor needs to read and write elements: the 16-bit float formats
// (half.go), Load and Store by dtype (load.go), and PyTorch's rule for the
// scalar of a comparison (compare.go).
package dtypes

import "fmt"

// Dtype is the element type of a tensor or of a Compute operand.
type Dtype uint8

// The element types, in PyTorch's names without "torch.". Float16 and
// BFloat16 are stored as their 16-bit patterns and computed in float32;
// index operands are Int64 or Int32.
const (
	Float32 Dtype = iota
	Float64
	Float16
	BFloat16
	Int64
	Int32
	Bool
)

// info is each dtype's properties: its name, its size in bytes, and
// whether it is a floating-point type (the only kind that can require
// gradients) of 16 bits (computed in float32).
var info = [...]struct {
	name        string
	size        int
	float, half bool
}{
	Float32:  {"float32", 4, true, false},
	Float64:  {"float64", 8, true, false},
	Float16:  {"float16", 2, true, true},
	BFloat16: {"bfloat16", 2, true, true},
	Int64:    {"int64", 8, false, false},
	Int32:    {"int32", 4, false, false},
	Bool:     {"bool", 1, false, false},
}

// All lists the dtypes in order.
func All() []Dtype {
	all := make([]Dtype, len(info))
	for i := range all {
		all[i] = Dtype(i)
	}
	return all
}

// Valid reports whether d is one of the dtypes above.
func (d Dtype) Valid() bool { return int(d) < len(info) }

// Size is the size of one element in bytes (PyTorch's itemsize). It panics
// for an invalid dtype.
func (d Dtype) Size() int {
	if d.Valid() {
		return info[d].size
	}
	panic(fmt.Sprintf("dtypes: unknown %v", d))
}

// String returns the dtype's name, such as "float32".
func (d Dtype) String() string {
	if d.Valid() {
		return info[d].name
	}
	return fmt.Sprintf("Dtype(%d)", uint8(d))
}

// IsFloat reports whether d is a floating-point type.
func (d Dtype) IsFloat() bool { return d.Valid() && info[d].float }

// IsHalf reports whether d is one of the 16-bit float types, stored as
// bits and computed in float32.
func (d Dtype) IsHalf() bool { return d.Valid() && info[d].half }
