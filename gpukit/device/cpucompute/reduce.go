package cpucompute

import (
	"fmt"
	"math"
	"slices"

	"github.com/gpumem/course/gpukit/alloc"
	"github.com/gpumem/course/gpukit/device/backend"
	"github.com/gpumem/course/gpukit/dtypes"
	"github.com/gpumem/course/gpukit/kernels"
	"github.com/gpumem/course/gpukit/layout"
	"github.com/gpumem/course/gpukit/ops"
)

// The reductions: Reduce, ReduceStrided, ArgReduce and ArgReduceStrided.

// Reduce reduces the middle dimension of src viewed as [outer, n, inner].
func (c *Compute) Reduce(_ alloc.Stream, op ops.Reduce, dt dtypes.Dtype, dst, src uint64, outer, n, inner int) error {
	if op > ops.ReduceMin {
		return fmt.Errorf("cpucompute: Reduce on %s: unknown %v", c.name, op)
	}
	d, err := c.bytes(op.String(), dst, dt, outer*inner)
	if err != nil || d == nil {
		return err
	}
	s, err := c.bytes(op.String(), src, dt, outer*n*inner)
	if err != nil {
		return err
	}
	switch dt {
	case f32t:
		kernels.Reduce(op, kernels.Float32s(d)[:outer*inner], kernels.Float32s(s)[:outer*n*inner], outer, n, inner)
		return nil
	case f64t:
		kernels.Reduce(op, kernels.Float64s(d)[:outer*inner], kernels.Float64s(s)[:outer*n*inner], outer, n, inner)
		return nil
	}
	// The other dtypes in float64, each result from its elements in order.
	acc := make([]float64, outer*inner)
	for i := range acc {
		switch op {
		case ops.ReduceMax:
			acc[i] = math.Inf(-1)
		case ops.ReduceMin:
			acc[i] = math.Inf(1)
		}
	}
	for o := range outer {
		for j := range n {
			for i := range inner {
				v, a := dtypes.Load(dt, s, (o*n+j)*inner+i), &acc[o*inner+i]
				switch op {
				case ops.ReduceSum, ops.ReduceMean:
					*a += v
				case ops.ReduceMax:
					if v > *a || v != v {
						*a = v
					}
				case ops.ReduceMin:
					if v < *a || v != v {
						*a = v
					}
				}
				if (op == ops.ReduceMax || op == ops.ReduceMin) && *a != *a {
					*a = math.NaN()
				}
			}
		}
	}
	for i, v := range acc {
		if op == ops.ReduceMean {
			v /= float64(n)
		}
		dtypes.Store(dt, d, i, v)
	}
	return nil
}

// ReduceStrided sums (or averages) src over shape into dst; see
// backend.Compute.
func (c *Compute) ReduceStrided(_ alloc.Stream, op ops.Reduce, shape []int, dst, src backend.Strided) error {
	if op != ops.ReduceSum && op != ops.ReduceMean {
		return &backend.UnsupportedError{Backend: c.name, Op: "ReduceStrided " + op.String(), Dtype: src.Dtype}
	}
	opnd, err := c.stridedAll(op.String(), shape, dst, src)
	if err != nil || numel(shape) == 0 {
		return err
	}
	d, a := opnd[0], opnd[1]
	// The kept shape (reduced dimensions set to 1) and its dense
	// accumulator, read through strides that are 0 on the reduced
	// dimensions.
	kept := make([]int, len(shape))
	accStr := make([]int, len(shape))
	stride := 1
	for i := len(shape) - 1; i >= 0; i-- {
		kept[i] = shape[i]
		if shape[i] != 1 && d.strides[i] == 0 {
			kept[i] = 1
		}
		if kept[i] != 1 {
			accStr[i] = stride
		}
		stride *= kept[i]
	}
	acc := make([]float64, numel(kept))
	if a.dt == f32t {
		data := kernels.Float32s(a.data)
		layout.ForEachOffset(shape, []int{0, 0}, [][]int{accStr, a.strides}, func(_ int, o []int) {
			acc[o[0]] += float64(data[o[1]])
		})
	} else {
		layout.ForEachOffset(shape, []int{0, 0}, [][]int{accStr, a.strides}, func(_ int, o []int) {
			acc[o[0]] += dtypes.Load(a.dt, a.data, o[1])
		})
	}
	div := 1.0
	if op == ops.ReduceMean {
		div = float64(numel(shape)) / float64(max(len(acc), 1))
	}
	layout.ForEachOffset(kept, []int{0, 0}, [][]int{layout.ContiguousStrides(kept), d.strides}, func(_ int, o []int) {
		dtypes.Store(d.dt, d.data, o[1], acc[o[0]]/div)
	})
	return nil
}

// ArgReduce writes the position and value of the largest (or smallest)
// element of each line of src.
func (c *Compute) ArgReduce(_ alloc.Stream, largest bool, dt dtypes.Dtype, index, value, src uint64, outer, n, inner int) error {
	const op = "ArgReduce"
	idx, err := c.bytes(op, index, dtypes.Int64, outer*inner)
	if err != nil || idx == nil {
		return err
	}
	val, err := c.bytes(op, value, dt, outer*inner)
	if err != nil {
		return err
	}
	s, err := c.bytes(op, src, dt, outer*n*inner)
	if err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("cpucompute: %s on %s: lines of no elements", op, c.name)
	}
	best := make([]int, outer*inner)
	switch dt {
	case f32t:
		if largest {
			kernels.ArgMax(best, kernels.Float32s(s)[:outer*n*inner], outer, n, inner)
		} else {
			kernels.ArgMin(best, kernels.Float32s(s)[:outer*n*inner], outer, n, inner)
		}
	case f64t:
		if largest {
			kernels.ArgMax(best, kernels.Float64s(s)[:outer*n*inner], outer, n, inner)
		} else {
			kernels.ArgMin(best, kernels.Float64s(s)[:outer*n*inner], outer, n, inner)
		}
	default:
		// Ties go to the lowest index and NaN wins, as in PyTorch.
		for o := range outer {
			for i := range inner {
				bv, bi := 0.0, -1
				for p := range n {
					v := dtypes.Load(dt, s, (o*n+p)*inner+i)
					if bi < 0 || (v != v && bv == bv) || (largest && v > bv) || (!largest && v < bv) {
						bv, bi = v, p
					}
				}
				best[o*inner+i] = bi
			}
		}
	}
	for k, bi := range best {
		o, i := k/inner, k%inner
		dtypes.Store(dtypes.Int64, idx, k, float64(bi))
		dtypes.Store(dt, val, k, dtypes.Load(dt, s, (o*n+bi)*inner+i))
	}
	return nil
}

// ArgReduceStrided is ArgReduce over the lines along dim of a strided src.
func (c *Compute) ArgReduceStrided(_ alloc.Stream, largest bool, shape []int, dim int, index, value, src backend.Strided) error {
	const op = "ArgReduceStrided"
	if dim < 0 || dim >= len(shape) || shape[dim] == 0 {
		return fmt.Errorf("cpucompute: %s on %s: dim %d of shape %v", op, c.name, dim, shape)
	}
	if index.Dtype != dtypes.Int64 || value.Dtype != src.Dtype {
		return fmt.Errorf("cpucompute: %s on %s: index of %s, value of %s for %s", op, c.name, index.Dtype, value.Dtype, src.Dtype)
	}
	opnd, err := c.stridedAll(op, shape, index, value, src)
	if err != nil || numel(shape) == 0 {
		return err
	}
	ix, val, a := opnd[0], opnd[1], opnd[2]
	n, step := shape[dim], a.strides[dim]
	lines := slices.Clone(shape)
	lines[dim] = 1
	// Ties go to the lowest index and NaN wins, as in PyTorch.
	layout.ForEachOffset(lines, []int{0, 0, 0}, [][]int{a.strides, ix.strides, val.strides}, func(_ int, o []int) {
		bv, bi := 0.0, -1
		for p := range n {
			v := dtypes.Load(a.dt, a.data, o[0]+p*step)
			if bi < 0 || (v != v && bv == bv) || (largest && v > bv) || (!largest && v < bv) {
				bv, bi = v, p
			}
		}
		dtypes.Store(dtypes.Int64, ix.data, o[1], float64(bi))
		dtypes.Store(val.dt, val.data, o[2], dtypes.Load(a.dt, a.data, o[0]+bi*step))
	})
	return nil
}
