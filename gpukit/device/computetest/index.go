package computetest

import (
	"fmt"
	"slices"
	"testing"

	"github.com/gpumem/course/gpukit/device/backend"
	"github.com/gpumem/course/gpukit/dtypes"
)

// The indexed ops: Gather and ScatterAdd.

// The operands of a Gather or ScatterAdd test: an index of shape [3, 2]
// (dtype idt) into a [4, 2] array along dim 0, or a [3, 4] array along
// dim 1 (indexedShape).

// indexedShape is the shape of the array the index addresses along dim.
func indexedShape(dim int) []int {
	if dim == 1 {
		return []int{3, 4}
	}
	return []int{4, 2}
}

// indexedAt is the position (row, column) in the indexed array of
// element (i, j) of the index iv along dim.
func indexedAt(dim int, iv []float64, i, j int) (r, c int) {
	r, c = i, j
	if dim == 0 {
		r = int(iv[i*2+j])
	} else {
		c = int(iv[i*2+j])
	}
	return r, c
}

// indexValues uploads an index of shape, values in [0, size).
func (s *suite) indexValues(idt dtypes.Dtype, shape []int, size int) (backend.Strided, []float64) {
	vals := make([]float64, numel(shape))
	for i := range vals {
		vals[i] = float64(s.rng.IntN(size))
	}
	return backend.Strided{Addr: s.upload(idt, vals), Dtype: idt, Strides: []int{shape[1], 1}}, vals
}

// eachIndexCase calls fn for every dtype, index dtype and dim of the
// indexed ops.
func eachIndexCase(fn func(dt, idt dtypes.Dtype, dim int)) {
	for _, dt := range Dtypes {
		for _, idt := range []dtypes.Dtype{dtypes.Int64, dtypes.Int32} {
			for _, dim := range []int{0, 1} {
				fn(dt, idt, dim)
			}
		}
	}
}

func testGather(t *testing.T, s *suite) {
	shape := []int{3, 2} // the index's
	eachIndexCase(func(dt, idt dtypes.Dtype, dim int) {
		srcShape := indexedShape(dim)
		sv := s.random(dt, 12)
		src := backend.Strided{Addr: s.upload(dt, sv), Dtype: dt, Strides: []int{srcShape[1], 1}}
		ix, iv := s.indexValues(idt, shape, 4)
		d := backend.Strided{Addr: s.upload(dt, make([]float64, 6)), Dtype: dt, Strides: []int{2, 1}}
		if !s.ok("Gather", dt, s.c.Gather(stream, shape, dim, d, src, ix)) {
			return
		}
		want := make([]float64, 6)
		for i := range 3 {
			for j := range 2 {
				r, c := indexedAt(dim, iv, i, j)
				want[i*2+j] = sv[r*srcShape[1]+c]
			}
		}
		s.check(fmt.Sprintf("Gather dim %d index %s", dim, idt), dt, s.download(dt, d.Addr, 6), want)
	})
}

func testScatterAdd(t *testing.T, s *suite) {
	shape := []int{3, 2} // the index's
	eachIndexCase(func(dt, idt dtypes.Dtype, dim int) {
		dstShape := indexedShape(dim)
		dv := s.random(dt, 12)
		d := backend.Strided{Addr: s.upload(dt, dv), Dtype: dt, Strides: []int{dstShape[1], 1}}
		ix, iv := s.indexValues(idt, shape, 4)
		sv := s.random(dt, 6)
		src := backend.Strided{Addr: s.upload(dt, sv), Dtype: dt, Strides: []int{2, 1}}
		if !s.ok("ScatterAdd", dt, s.c.ScatterAdd(stream, shape, dim, d, ix, src)) {
			return
		}
		want := slices.Clone(dv)
		for i := range 3 {
			for j := range 2 {
				r, c := indexedAt(dim, iv, i, j)
				// Accumulate as the dtype does, one addition at a time.
				want[r*dstShape[1]+c] = conv(dt, want[r*dstShape[1]+c]+sv[i*2+j])
			}
		}
		s.check(fmt.Sprintf("ScatterAdd dim %d index %s", dim, idt), dt, s.download(dt, d.Addr, 12), want)
	})
}
