package computetest

import (
	"fmt"
	"slices"
	"testing"

	"github.com/gpumem/course/gpukit/device/backend"
	"github.com/gpumem/course/gpukit/dtypes"
	"github.com/gpumem/course/gpukit/ops"
)

// The reductions: Reduce, ReduceStrided, ArgReduce and ArgReduceStrided.

func testReduce(t *testing.T, s *suite) {
	const outer, n, inner = 2, 5, 3
	for _, dt := range Dtypes {
		for _, op := range ops.Reduces() {
			src := s.random(dt, outer*n*inner)
			a := s.upload(dt, src)
			d := s.upload(dt, make([]float64, outer*inner))
			if !s.ok("Reduce", dt, s.c.Reduce(stream, op, dt, d, a, outer, n, inner)) {
				continue
			}
			want := make([]float64, outer*inner)
			for o := range outer {
				for i := range inner {
					line := make([]float64, n)
					for j := range n {
						line[j] = src[(o*n+j)*inner+i]
					}
					want[o*inner+i] = reduceRef(op, line)
				}
			}
			s.check(op.String(), dt, s.download(dt, d, outer*inner), want)
		}
	}
}

func reduceRef(op ops.Reduce, line []float64) float64 {
	var r float64
	switch op {
	case ops.ReduceSum, ops.ReduceMean:
		for _, v := range line {
			r += v
		}
		if op == ops.ReduceMean {
			r /= float64(len(line))
		}
	case ops.ReduceMax:
		r = slices.Max(line)
	case ops.ReduceMin:
		r = slices.Min(line)
	}
	return r
}

func testReduceStrided(t *testing.T, s *suite) {
	for _, dt := range Dtypes {
		for _, op := range []ops.Reduce{ops.ReduceSum, ops.ReduceMean} {
			for _, dim := range []int{0, 1} {
				a, av := s.input(dt, 1) // transposed
				out := dt
				if dt == dtypes.Bool || dt == dtypes.Int32 {
					out = dtypes.Int64 // sums of bool and int32 go to int64, as in PyTorch
				}
				// dst: shape [3, 4] with the reduced dimension of stride 0.
				kept := 4
				st := []int{0, 1}
				if dim == 1 {
					kept, st = 3, []int{1, 0}
				}
				d := backend.Strided{Addr: s.upload(out, make([]float64, kept)), Dtype: out, Strides: st}
				if !s.ok("ReduceStrided", dt, s.c.ReduceStrided(stream, op, shape34, d, a)) {
					continue
				}
				want := make([]float64, kept)
				for k := range 12 {
					i, j := k/4, k%4
					p := j
					if dim == 1 {
						p = i
					}
					want[p] += av.at(shape34, k)
				}
				if op == ops.ReduceMean {
					for i := range want {
						want[i] /= float64(12 / kept)
					}
				}
				s.check(fmt.Sprintf("%v over dim %d into %s", op, dim, out), out, s.download(out, d.Addr, kept), want)
			}
		}
	}
}

func testArgReduce(t *testing.T, s *suite) {
	const outer, n, inner = 3, 4, 2
	for _, dt := range Dtypes {
		for _, largest := range []bool{true, false} {
			src := s.random(dt, outer*n*inner)
			src[inner] = src[0] // a tie in the first line: the lower index wins
			a := s.upload(dt, src)
			idx := s.upload(dtypes.Int64, make([]float64, outer*inner))
			val := s.upload(dt, make([]float64, outer*inner))
			if !s.ok("ArgReduce", dt, s.c.ArgReduce(stream, largest, dt, idx, val, a, outer, n, inner)) {
				continue
			}
			wi, wv := make([]float64, outer*inner), make([]float64, outer*inner)
			for o := range outer {
				for i := range inner {
					bi := 0
					for p := 1; p < n; p++ {
						v, b := src[(o*n+p)*inner+i], src[(o*n+bi)*inner+i]
						if (largest && v > b) || (!largest && v < b) {
							bi = p
						}
					}
					wi[o*inner+i], wv[o*inner+i] = float64(bi), src[(o*n+bi)*inner+i]
				}
			}
			what := fmt.Sprintf("ArgReduce largest=%v", largest)
			s.check(what+" index", dtypes.Int64, s.download(dtypes.Int64, idx, outer*inner), wi)
			s.check(what+" value", dt, s.download(dt, val, outer*inner), wv)
		}
	}
}

func testArgReduceStrided(t *testing.T, s *suite) {
	for _, dt := range Dtypes {
		for _, largest := range []bool{true, false} {
			for _, dim := range []int{0, 1} {
				a, av := s.input(dt, 1) // transposed
				kept, st := 4, []int{0, 1}
				if dim == 1 {
					kept, st = 3, []int{1, 0}
				}
				idx := backend.Strided{Addr: s.upload(dtypes.Int64, make([]float64, kept)), Dtype: dtypes.Int64, Strides: st}
				val := backend.Strided{Addr: s.upload(dt, make([]float64, kept)), Dtype: dt, Strides: st}
				if !s.ok("ArgReduceStrided", dt, s.c.ArgReduceStrided(stream, largest, shape34, dim, idx, val, a)) {
					continue
				}
				wi, wv := make([]float64, kept), make([]float64, kept)
				for p := range kept {
					bi, bv := -1, 0.0
					for q := range shape34[dim] {
						k := p*4 + q // dim 1: row p, column q
						if dim == 0 {
							k = q*4 + p
						}
						v := av.at(shape34, k)
						if bi < 0 || (largest && v > bv) || (!largest && v < bv) {
							bi, bv = q, v
						}
					}
					wi[p], wv[p] = float64(bi), bv
				}
				what := fmt.Sprintf("ArgReduceStrided largest=%v dim %d", largest, dim)
				s.check(what+" index", dtypes.Int64, s.download(dtypes.Int64, idx.Addr, kept), wi)
				s.check(what+" value", dt, s.download(dt, val.Addr, kept), wv)
			}
		}
	}
}
