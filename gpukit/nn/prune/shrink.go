package prune

import (
	"github.com/gpumem/course/gpukit/nn"
	"github.com/gpumem/course/gpukit/tensor"
)

// KeptSlices returns the indices j along dim where t (a mask or a pruned
// weight) holds a non-zero: the rows (dim 0) or columns (dim 1) a
// structured pruning kept.
func KeptSlices(t *tensor.Tensor, dim int) ([]int, error) {
	if t == nil {
		return nil, errorf("KeptSlices: nil tensor")
	}
	shape := t.Shape()
	if dim < 0 {
		dim += len(shape)
	}
	if dim < 0 || dim >= len(shape) {
		return nil, errorf("KeptSlices: dim out of range for shape %v", shape)
	}
	vals := t.Float64s()
	var kept []int
	for j := range shape[dim] {
		for _, p := range slicePositions(shape, dim, j) {
			if vals[p] != 0 {
				kept = append(kept, j)
				break
			}
		}
	}
	return kept, nil
}

// ShrinkOutputs returns a new, smaller Linear holding only the output
// units keep of l (rows of its weight, entries of its bias), on l's
// device: what structured pruning along dim 0 should end in to save
// memory. The next layer must drop the same inputs (ShrinkInputs). The
// bias of a dropped unit goes too, so the shrunk model equals the pruned
// one when the dropped units' outputs were zero (no bias, or a pruned
// one). l is left as it is; release it when done.
func ShrinkOutputs(l *nn.Linear, keep []int) (*nn.Linear, error) {
	return shrink("ShrinkOutputs", l, keep, 0)
}

// ShrinkInputs returns a new Linear holding only the input features keep
// of l (columns of its weight; the bias is copied whole).
func ShrinkInputs(l *nn.Linear, keep []int) (*nn.Linear, error) {
	return shrink("ShrinkInputs", l, keep, 1)
}

func checkKeep(op string, keep []int, n int) error {
	if len(keep) == 0 {
		return errorf("%s: nothing to keep (a Linear needs at least one unit)", op)
	}
	seen := make(map[int]bool, len(keep))
	for _, k := range keep {
		if k < 0 || k >= n {
			return errorf("%s: index %d out of range [0, %d)", op, k, n)
		}
		if seen[k] {
			return errorf("%s: index %d listed twice", op, k)
		}
		seen[k] = true
	}
	return nil
}

// shrink is op: it checks l and keep, then returns a copy of l with only
// the units keep along dim (0: outputs, 1: inputs).
func shrink(op string, l *nn.Linear, keep []int, dim int) (*nn.Linear, error) {
	if l == nil {
		return nil, errorf("%s: nil Linear", op)
	}
	n := l.Out
	if dim == 1 {
		n = l.In
	}
	if err := checkKeep(op, keep, n); err != nil {
		return nil, err
	}
	out := &nn.Linear{In: l.In, Out: l.Out}
	tensor.NoGrad(func() {
		idx := tensor.FromSlice(keep, []int{len(keep)}, placeLike(l.Weight)[0])
		defer idx.Release()
		out.Weight = l.Weight.IndexSelect(dim, idx).SetRequiresGrad(true)
		if l.Bias != nil {
			if dim == 0 {
				out.Bias = l.Bias.IndexSelect(0, idx).SetRequiresGrad(true)
			} else {
				out.Bias = l.Bias.Clone().SetRequiresGrad(true)
			}
		}
	})
	if dim == 0 {
		out.Out = len(keep)
	} else {
		out.In = len(keep)
	}
	return out, nil
}
