package cpucompute

import (
	"github.com/gpumem/course/gpukit/alloc"
	"github.com/gpumem/course/gpukit/device/backend"
	"github.com/gpumem/course/gpukit/dtypes"
	"github.com/gpumem/course/gpukit/kernels"
	"github.com/gpumem/course/gpukit/layout"
	"github.com/gpumem/course/gpukit/ops"
)

// Fill and Copy (element access by dtype is dtypes.Load and Store).

// Fill sets every element of dst to v.
func (c *Compute) Fill(_ alloc.Stream, shape []int, dst backend.Strided, v float64) error {
	d, err := c.strided("Fill", shape, dst)
	if err != nil || d.data == nil {
		return err
	}
	if layout.IsContiguous(shape, d.strides) {
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
	layout.ForEachOffset(shape, []int{0}, [][]int{d.strides}, func(_ int, o []int) {
		dtypes.Store(d.dt, d.data, o[0], v)
	})
	return nil
}

// Copy copies src into dst elementwise, converting dtypes.
func (c *Compute) Copy(_ alloc.Stream, shape []int, dst, src backend.Strided) error {
	opnd, err := c.stridedAll("Copy", shape, dst, src)
	if err != nil || numel(shape) == 0 {
		return err
	}
	d, s := opnd[0], opnd[1]
	if d.dt == s.dt {
		// A dense destination apart from a source without broadcast
		// dimensions: kernels.Copy streams rows or, for a transposed
		// source, copies in cache-blocked tiles.
		if layout.IsContiguous(shape, d.strides) && !overlap(d.data, s.data) && !hasBroadcast(shape, s.strides) {
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
			kernels.UnaryStrided(ops.Identity, shape, d.s32(), s.s32())
			return nil
		case f64t:
			kernels.UnaryStrided(ops.Identity, shape, d.s64(), s.s64())
			return nil
		}
		// Same-size raw copy for the other types: exact, no conversion.
		sz := d.dt.Size()
		layout.ForEachOffset(shape, []int{0, 0}, [][]int{d.strides, s.strides}, func(_ int, o []int) {
			copy(d.data[o[0]*sz:o[0]*sz+sz], s.data[o[1]*sz:o[1]*sz+sz])
		})
		return nil
	}
	if s.dt == dtypes.Bool && layout.IsContiguous(shape, d.strides) && layout.IsContiguous(shape, s.strides) {
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
	layout.ForEachOffset(shape, []int{0, 0}, [][]int{d.strides, s.strides}, func(_ int, o []int) {
		dtypes.Store(d.dt, d.data, o[0], dtypes.Load(s.dt, s.data, o[1]))
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
