package prune

import (
	"math"
	"slices"
)

// The masks are computed on the host from a copy of the scores: what the
// device holds is only what PyTorch holds after pruning (the original,
// the mask and the computed weight).

// rankIndices returns the positions of scores ordered as torch.topk
// orders them (smallest first, or largest first), ties broken by lower
// position first, NaN above every number.
func rankIndices(scores []float64, largest bool) []int {
	type scored struct {
		v float64
		i int
	}
	order := make([]scored, len(scores))
	for i, v := range scores {
		order[i] = scored{v, i}
	}
	// The position breaks ties, so the order is total and an unstable
	// sort gives the same answer every time.
	slices.SortFunc(order, func(a, b scored) int {
		c := compareNaNHigh(a.v, b.v)
		if largest {
			c = -c
		}
		if c == 0 {
			c = a.i - b.i
		}
		return c
	})
	idx := make([]int, len(order))
	for k, s := range order {
		idx[k] = s.i
	}
	return idx
}

func compareNaNHigh(x, y float64) int {
	xn, yn := math.IsNaN(x), math.IsNaN(y)
	switch {
	case xn && yn:
		return 0
	case xn:
		return 1
	case yn:
		return -1
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}

// unstructuredMask is the mask of L1Unstructured or RandomUnstructured on
// scores with default mask def: def with the k entries of smallest score
// (largest, for random draws) set to zero.
func unstructuredMask(scores, def []float64, k int, largest bool) []float64 {
	mask := slices.Clone(def)
	for _, i := range rankIndices(scores, largest)[:k] {
		mask[i] = 0
	}
	return mask
}

// slices along dim: the flat positions of slice j of a tensor of shape.
func slicePositions(shape []int, dim, j int) []int {
	outer, inner := 1, 1
	for d := range dim {
		outer *= shape[d]
	}
	for d := dim + 1; d < len(shape); d++ {
		inner *= shape[d]
	}
	pos := make([]int, 0, outer*inner)
	for o := range outer {
		base := (o*shape[dim] + j) * inner
		for i := range inner {
			pos = append(pos, base+i)
		}
	}
	return pos
}

// lnNorms is PyTorch's _compute_norm: the Ln norm of each slice along dim.
func lnNorms(vals []float64, shape []int, dim int, n float64) []float64 {
	norms := make([]float64, shape[dim])
	for j := range norms {
		var s float64
		pos := slicePositions(shape, dim, j)
		switch {
		case math.IsInf(n, 1):
			for _, p := range pos {
				s = math.Max(s, math.Abs(vals[p]))
			}
		case math.IsInf(n, -1):
			s = math.Inf(1)
			for _, p := range pos {
				s = math.Min(s, math.Abs(vals[p]))
			}
		case n == 0:
			for _, p := range pos {
				if vals[p] != 0 {
					s++
				}
			}
		default:
			for _, p := range pos {
				s += math.Pow(math.Abs(vals[p]), n)
			}
			s = math.Pow(s, 1/n)
		}
		norms[j] = s
	}
	return norms
}

// structuredMask is LnStructured's compute_mask: keep the size-k slices
// of largest norm (zeros elsewhere), times the default mask; with k = 0
// the default mask itself.
func structuredMask(vals, def []float64, shape []int, dim int, n float64, k int) []float64 {
	if k == 0 {
		return slices.Clone(def)
	}
	keep := shape[dim] - k
	mask := make([]float64, len(vals))
	for _, j := range rankIndices(lnNorms(vals, shape, dim, n), true)[:keep] {
		for _, p := range slicePositions(shape, dim, j) {
			mask[p] = def[p]
		}
	}
	return mask
}
