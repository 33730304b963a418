package tensor

import (
	"encoding/binary"
	"math"
	"unsafe"
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

var dtypeInfo = [...]struct {
	name string
	size int
}{
	Float32:  {"float32", 4},
	Float64:  {"float64", 8},
	Float16:  {"float16", 2},
	BFloat16: {"bfloat16", 2},
	Int64:    {"int64", 8},
	Int32:    {"int32", 4},
	Bool:     {"bool", 1},
}

// String returns the PyTorch name without the "torch." prefix, e.g. "float32".
func (d Dtype) String() string {
	if int(d) < len(dtypeInfo) {
		return dtypeInfo[d].name
	}
	return "dtype(?)"
}

// Size is the element size in bytes (PyTorch's itemsize).
func (d Dtype) Size() int {
	if int(d) < len(dtypeInfo) {
		return dtypeInfo[d].size
	}
	panic(errorf("unknown dtype %d", int(d)))
}

// IsFloat reports whether d is a floating-point type, the only kind that
// can require gradients.
func (d Dtype) IsFloat() bool {
	return d == Float32 || d == Float64 || d == Float16 || d == BFloat16
}

// Float32ToFloat16 converts f to IEEE 754 binary16 bits, rounding to nearest
// even, with overflow to ±Inf, gradual underflow to subnormals, and NaN kept
// NaN.
func Float32ToFloat16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int((b >> 23) & 0xff)
	man := b & 0x7fffff
	if exp == 0xff { // Inf or NaN
		if man != 0 {
			return sign | 0x7e00
		}
		return sign | 0x7c00
	}
	e := exp - 127 + 15
	if e >= 0x1f {
		return sign | 0x7c00
	}
	if e <= 0 {
		// Subnormal half (or zero): value = man' * 2^-24.
		if e < -10 {
			return sign // rounds to zero (|f| < 2^-25, or exactly half of the smallest subnormal handled below)
		}
		m := man | 0x800000 // implicit bit
		shift := uint(14 - e)
		half := m >> shift
		rem := m & (1<<shift - 1)
		mid := uint32(1) << (shift - 1)
		if rem > mid || (rem == mid && half&1 == 1) {
			half++
		}
		return sign | uint16(half)
	}
	half := uint32(e)<<10 | man>>13
	rem := man & 0x1fff
	if rem > 0x1000 || (rem == 0x1000 && half&1 == 1) {
		half++ // may carry into the exponent, up to Inf: that is correct
	}
	return sign | uint16(half)
}

// Float16ToFloat32 converts binary16 bits to float32 exactly.
func Float16ToFloat32(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	man := uint32(h & 0x3ff)
	switch {
	case exp == 0x1f:
		return math.Float32frombits(sign | 0x7f800000 | man<<13)
	case exp == 0:
		if man == 0 {
			return math.Float32frombits(sign)
		}
		f := float32(man) * (1.0 / (1 << 24))
		if sign != 0 {
			f = -f
		}
		return f
	default:
		return math.Float32frombits(sign | (exp+127-15)<<23 | man<<13)
	}
}

// Float32ToBFloat16 converts f to bfloat16 bits (the top 16 bits of a
// float32), rounding to nearest even; NaN stays a quiet NaN.
func Float32ToBFloat16(f float32) uint16 {
	b := math.Float32bits(f)
	if b&0x7fffffff > 0x7f800000 {
		return uint16(b>>16) | 0x40
	}
	b += 0x7fff + (b>>16)&1
	return uint16(b >> 16)
}

// BFloat16ToFloat32 converts bfloat16 bits to float32 exactly.
func BFloat16ToFloat32(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// load reads element i (in elements, not bytes) of data as float64.
func load(d Dtype, data []byte, i int) float64 {
	switch d {
	case Float32:
		return float64(math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:])))
	case Float64:
		return math.Float64frombits(binary.LittleEndian.Uint64(data[8*i:]))
	case Float16:
		return float64(Float16ToFloat32(binary.LittleEndian.Uint16(data[2*i:])))
	case BFloat16:
		return float64(BFloat16ToFloat32(binary.LittleEndian.Uint16(data[2*i:])))
	case Int64:
		return float64(int64(binary.LittleEndian.Uint64(data[8*i:])))
	case Int32:
		return float64(int32(binary.LittleEndian.Uint32(data[4*i:])))
	case Bool:
		if data[i] != 0 {
			return 1
		}
		return 0
	}
	panic(errorf("unknown dtype %d", int(d)))
}

// store writes v, converted to d, at element i of data. Integer types
// truncate toward zero as a C cast does; half types round to nearest even
// from the float32 value.
func store(d Dtype, data []byte, i int, v float64) {
	switch d {
	case Float32:
		binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(float32(v)))
	case Float64:
		binary.LittleEndian.PutUint64(data[8*i:], math.Float64bits(v))
	case Float16:
		binary.LittleEndian.PutUint16(data[2*i:], Float32ToFloat16(float32(v)))
	case BFloat16:
		binary.LittleEndian.PutUint16(data[2*i:], Float32ToBFloat16(float32(v)))
	case Int64:
		binary.LittleEndian.PutUint64(data[8*i:], uint64(int64(v)))
	case Int32:
		binary.LittleEndian.PutUint32(data[4*i:], uint32(int32(v)))
	case Bool:
		if v != 0 {
			data[i] = 1
		} else {
			data[i] = 0
		}
	default:
		panic(errorf("unknown dtype %d", int(d)))
	}
}

// f32s and f64s view raw bytes as float slices for the fast paths. Device
// blocks and Go allocations are at least 8-byte aligned.
func f32s(b []byte) []float32 {
	if len(b) < 4 {
		return nil
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(&b[0])), len(b)/4)
}

func f64s(b []byte) []float64 {
	if len(b) < 8 {
		return nil
	}
	return unsafe.Slice((*float64)(unsafe.Pointer(&b[0])), len(b)/8)
}
