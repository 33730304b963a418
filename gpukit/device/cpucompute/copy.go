package cpucompute

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/gpumem/course/gpukit/alloc"
	"github.com/gpumem/course/gpukit/device/backend"
	"github.com/gpumem/course/gpukit/kernels"
)

// Element access by dtype (Load, Store), Fill and Copy.

// Load reads element i (in elements, not bytes) of data, of dtype d, as
// float64.
func Load(d backend.Dtype, data []byte, i int) float64 {
	switch d {
	case backend.Float32:
		return float64(math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:])))
	case backend.Float64:
		return math.Float64frombits(binary.LittleEndian.Uint64(data[8*i:]))
	case backend.Float16:
		return float64(kernels.Float16ToFloat32(binary.LittleEndian.Uint16(data[2*i:])))
	case backend.BFloat16:
		return float64(kernels.BFloat16ToFloat32(binary.LittleEndian.Uint16(data[2*i:])))
	case backend.Int64:
		return float64(int64(binary.LittleEndian.Uint64(data[8*i:])))
	case backend.Int32:
		return float64(int32(binary.LittleEndian.Uint32(data[4*i:])))
	case backend.Bool:
		if data[i] != 0 {
			return 1
		}
		return 0
	}
	panic(fmt.Sprintf("cpucompute: unknown %v", d))
}

// Store writes v, converted to d, at element i of data. Integer types
// truncate toward zero as a C cast does; half types round to nearest even
// from the float32 value.
func Store(d backend.Dtype, data []byte, i int, v float64) {
	switch d {
	case backend.Float32:
		binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(float32(v)))
	case backend.Float64:
		binary.LittleEndian.PutUint64(data[8*i:], math.Float64bits(v))
	case backend.Float16:
		binary.LittleEndian.PutUint16(data[2*i:], kernels.Float32ToFloat16(float32(v)))
	case backend.BFloat16:
		binary.LittleEndian.PutUint16(data[2*i:], kernels.Float32ToBFloat16(float32(v)))
	case backend.Int64:
		binary.LittleEndian.PutUint64(data[8*i:], uint64(int64(v)))
	case backend.Int32:
		binary.LittleEndian.PutUint32(data[4*i:], uint32(int32(v)))
	case backend.Bool:
		if v != 0 {
			data[i] = 1
		} else {
			data[i] = 0
		}
	default:
		panic(fmt.Sprintf("cpucompute: unknown %v", d))
	}
}

// Fill sets every element of dst to v.
func (c *Compute) Fill(_ alloc.Stream, shape []int, dst backend.Strided, v float64) error {
	d, err := c.strided("Fill", shape, dst)
	if err != nil || d.data == nil {
		return err
	}
	if kernels.IsContiguous(shape, d.strides) {
		n := numel(shape)
		switch d.dt {
		case f32t:
			x := kernels.Float32s(d.data)[:n]
			for i := range x {
				x[i] = float32(v)
			}
			return nil
		case f64t:
			x := kernels.Float64s(d.data)[:n]
			for i := range x {
				x[i] = v
			}
			return nil
		}
	}
	kernels.ForEachOffset(shape, []int{0}, [][]int{d.strides}, func(_ int, o []int) {
		Store(d.dt, d.data, o[0], v)
	})
	return nil
}

// Copy copies src into dst elementwise, converting dtypes.
func (c *Compute) Copy(_ alloc.Stream, shape []int, dst, src backend.Strided) error {
	ops, err := c.stridedAll("Copy", shape, dst, src)
	if err != nil || numel(shape) == 0 {
		return err
	}
	d, s := ops[0], ops[1]
	if d.dt == s.dt {
		// A dense destination apart from a source without broadcast
		// dimensions: kernels.Copy streams rows or, for a transposed
		// source, copies in cache-blocked tiles.
		if kernels.IsContiguous(shape, d.strides) && !overlap(d.data, s.data) && !hasBroadcast(shape, s.strides) {
			n := numel(shape)
			switch d.dt {
			case f32t:
				kernels.Copy(shape, kernels.Float32s(d.data)[:n], s.s32())
				return nil
			case f64t:
				kernels.Copy(shape, kernels.Float64s(d.data)[:n], s.s64())
				return nil
			}
		}
		switch d.dt {
		case f32t:
			kernels.UnaryStrided(kernels.Identity, shape, d.s32(), s.s32())
			return nil
		case f64t:
			kernels.UnaryStrided(kernels.Identity, shape, d.s64(), s.s64())
			return nil
		}
		// Same-size raw copy for the other types: exact, no conversion.
		sz := d.dt.Size()
		kernels.ForEachOffset(shape, []int{0, 0}, [][]int{d.strides, s.strides}, func(_ int, o []int) {
			copy(d.data[o[0]*sz:o[0]*sz+sz], s.data[o[1]*sz:o[1]*sz+sz])
		})
		return nil
	}
	if s.dt == backend.Bool && kernels.IsContiguous(shape, d.strides) && kernels.IsContiguous(shape, s.strides) {
		// A mask to 1 and 0 (dropout's), without the per-element dispatch.
		n := numel(shape)
		switch d.dt {
		case f32t:
			fromBool(kernels.Float32s(d.data)[:n], s.data[:n])
			return nil
		case f64t:
			fromBool(kernels.Float64s(d.data)[:n], s.data[:n])
			return nil
		}
	}
	kernels.ForEachOffset(shape, []int{0, 0}, [][]int{d.strides, s.strides}, func(_ int, o []int) {
		Store(d.dt, d.data, o[0], Load(s.dt, s.data, o[1]))
	})
	return nil
}

// fromBool writes 1 where m is true (non-zero), else 0.
func fromBool[T float32 | float64](d []T, m []byte) {
	for i := range d {
		var v T
		if m[i] != 0 {
			v = 1
		}
		d[i] = v
	}
}
