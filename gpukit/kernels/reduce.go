package kernels

import (
	"fmt"
	"math"

	"github.com/gpumem/course/gpukit/ops"
)

// reduceBlock is how many columns of the kept inner dimension one task
// accumulates at once: 512 float64 accumulators = 4 KiB, resident in L1.
const reduceBlock = 512

// Reduce reduces the middle dimension of a contiguous array viewed as
// [outer, n, inner] (reducing dim d of shape s means outer = Π s[:d],
// n = s[d], inner = Π s[d+1:]), writing dst[o·inner+j] for the result of
// src[o, :, j]. dst must hold outer·inner elements. Reducing n == 0 gives 0
// for sums, NaN for Mean, and -Inf/+Inf for Max/Min.
//
// Sums accumulate in float64: a float32 running sum over ~10⁶ values loses
// most of its significant digits, and the float64 add is as fast as the
// float32 one in scalar code.
func Reduce[T Float](op ops.Reduce, dst, src []T, outer, n, inner int) {
	checkReduce(len(dst), len(src), outer, n, inner)
	if outer*inner == 0 {
		return
	}
	if inner == 1 && outer < workers(outer*n, parallelThreshold) {
		// A few long rows: split each row across workers and combine.
		for o := 0; o < outer; o++ {
			dst[o] = reduceLongRow(op, src[o*n:(o+1)*n])
		}
		return
	}
	nb := (inner + reduceBlock - 1) / reduceBlock
	tasks := outer * nb
	w := workers(outer*n*inner, parallelThreshold)
	parallelFor(tasks, min(w, tasks), 1, func(lo, hi int) {
		var acc [reduceBlock]float64
		for t := lo; t < hi; t++ {
			o, jb := t/nb, (t%nb)*reduceBlock
			je := min(jb+reduceBlock, inner)
			base := o * n * inner
			if inner == 1 {
				dst[o] = reduceRow(op, src[base:base+n])
				continue
			}
			reduceCols(op, acc[:je-jb], dst[o*inner+jb:o*inner+je], src, base+jb, n, inner)
		}
	})
}

func checkReduce(ld, ls, outer, n, inner int) {
	if outer < 0 || n < 0 || inner < 0 {
		panic(fmt.Sprintf("kernels: Reduce: negative size outer=%d n=%d inner=%d", outer, n, inner))
	}
	if ls < outer*n*inner || ld < outer*inner {
		panic(fmt.Sprintf("kernels: Reduce: slices too short (src %d, dst %d) for [%d,%d,%d]", ls, ld, outer, n, inner))
	}
}

// reduceLongRow reduces one contiguous row using all workers.
func reduceLongRow[T Float](op ops.Reduce, row []T) T {
	w := workers(len(row), parallelThreshold)
	if w == 1 {
		return reduceRow(op, row)
	}
	parts := make([]float64, w)
	chunk := (len(row) + w - 1) / w
	parallelFor(w, w, 1, func(lo, hi int) {
		for p := lo; p < hi; p++ {
			s := row[min(p*chunk, len(row)):min((p+1)*chunk, len(row))]
			if op == ops.ReduceSum || op == ops.ReduceMean {
				parts[p] = sumRow(s)
			} else {
				parts[p] = float64(reduceRow(op, s))
			}
		}
	})
	r := parts[0]
	for _, v := range parts[1:] {
		switch op {
		case ops.ReduceSum, ops.ReduceMean:
			r += v
		case ops.ReduceMax:
			r = max(r, v)
		case ops.ReduceMin:
			r = min(r, v)
		}
	}
	if op == ops.ReduceMean {
		r /= float64(len(row))
	}
	return T(r)
}

// sumRow sums in float64 with four independent accumulators, which breaks
// the add latency chain (4 cycles) so the loop runs at load throughput.
func sumRow[T Float](s []T) float64 {
	var s0, s1, s2, s3 float64
	i := 0
	for ; i+4 <= len(s); i += 4 {
		q := s[i : i+4 : i+4]
		s0 += float64(q[0])
		s1 += float64(q[1])
		s2 += float64(q[2])
		s3 += float64(q[3])
	}
	for ; i < len(s); i++ {
		s0 += float64(s[i])
	}
	return (s0 + s1) + (s2 + s3)
}

// addToFloat64 adds row to acc element by element, in float64: eight at a
// time with AVX for float32 rows (addToFloat64AVX), the rest in Go.
func addToFloat64[T Float](acc []float64, row []T) {
	acc = acc[:len(row)]
	j := 0
	if r32, ok := any(row).([]float32); ok && useAVX && len(row) >= 8 {
		j = len(row) &^ 7
		addToFloat64AVX(&acc[0], &r32[0], j)
	}
	for ; j < len(row); j++ {
		acc[j] += float64(row[j])
	}
}

func reduceRow[T Float](op ops.Reduce, s []T) T {
	switch op {
	case ops.ReduceSum:
		return T(sumRow(s))
	case ops.ReduceMean:
		return T(sumRow(s) / float64(len(s)))
	case ops.ReduceMax:
		r := T(math.Inf(-1))
		for _, v := range s {
			r = max(r, v)
		}
		return r
	case ops.ReduceMin:
		r := T(math.Inf(1))
		for _, v := range s {
			r = min(r, v)
		}
		return r
	}
	panic("kernels: unknown " + op.String())
}

// reduceCols reduces src[base + p·inner + j] over p for len(d) columns j,
// walking src row by row so every load is sequential.
func reduceCols[T Float](op ops.Reduce, acc []float64, d, src []T, base, n, inner int) {
	switch op {
	case ops.ReduceSum, ops.ReduceMean:
		clear(acc)
		for p := 0; p < n; p++ {
			row := src[base+p*inner : base+p*inner+len(acc)]
			addToFloat64(acc, row)
		}
		scale := 1.0
		if op == ops.ReduceMean {
			scale = 1 / float64(n)
		}
		for j := range d {
			d[j] = T(acc[j] * scale)
		}
	case ops.ReduceMax, ops.ReduceMin:
		init := T(math.Inf(-1))
		if op == ops.ReduceMin {
			init = T(math.Inf(1))
		}
		for j := range d {
			d[j] = init
		}
		for p := 0; p < n; p++ {
			row := src[base+p*inner : base+p*inner+len(d)]
			if op == ops.ReduceMax {
				for j, v := range row {
					d[j] = max(d[j], v)
				}
			} else {
				for j, v := range row {
					d[j] = min(d[j], v)
				}
			}
		}
	default:
		panic("kernels: unknown " + op.String())
	}
}

// ArgMax writes into dst[o·inner+j] the index along the reduced dimension of
// the largest element of src[o, :, j] (layout as for Reduce). Ties resolve to
// the lowest index; a NaN counts as larger than any number, as in PyTorch.
// For n == 0 the result is -1.
func ArgMax[T Float](dst []int, src []T, outer, n, inner int) {
	argReduce(dst, src, outer, n, inner, true)
}

// ArgMin is ArgMax for the smallest element.
func ArgMin[T Float](dst []int, src []T, outer, n, inner int) {
	argReduce(dst, src, outer, n, inner, false)
}

func argReduce[T Float](dst []int, src []T, outer, n, inner int, isMax bool) {
	checkReduce(len(dst), len(src), outer, n, inner)
	if outer*inner == 0 {
		return
	}
	w := workers(outer*n*inner, parallelThreshold)
	parallelFor(outer*inner, min(w, outer*inner), 1, func(lo, hi int) {
		for t := lo; t < hi; t++ {
			o, j := t/inner, t%inner
			best, bi := T(0), -1
			for p, q := 0, o*n*inner+j; p < n; p, q = p+1, q+inner {
				v := src[q]
				if bi < 0 || better(v, best, isMax) {
					best, bi = v, p
				}
			}
			dst[t] = bi
		}
	})
}

// better reports whether v should replace the current best: strictly
// better, or the first NaN.
func better[T Float](v, best T, isMax bool) bool {
	if v != v {
		return best == best
	}
	if isMax {
		return v > best
	}
	return v < best
}
