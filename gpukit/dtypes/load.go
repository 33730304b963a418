package dtypes

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Load reads element i (in elements, not bytes) of data, of dtype d, as
// float64.
func Load(d Dtype, data []byte, i int) float64 {
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
	panic(fmt.Sprintf("dtypes: unknown %v", d))
}

// Store writes v, converted to d, at element i of data. Integer types
// truncate toward zero as a C cast does; half types round to nearest even
// from the float32 value.
func Store(d Dtype, data []byte, i int, v float64) {
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
		panic(fmt.Sprintf("dtypes: unknown %v", d))
	}
}
