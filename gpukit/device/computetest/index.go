package computetest

import (
	"fmt"
	"slices"
	"testing"

	"github.com/gpumem/course/gpukit/device/backend"
	"github.com/gpumem/course/gpukit/dtypes"
)

// The indexed ops: Gather and ScatterAdd.

// indexCase is the operands of a Gather or ScatterAdd test: index of
// shape [3, 2] (dtype idt) into a [3, 4] array along dim, or a [4, 2]
// array along dim 0.
func (s *suite) indexValues(idt dtypes.Dtype, shape []int, size int) (backend.Strided, []float64) {
	vals := make([]float64, numel(shape))
	for i := range vals {
		vals[i] = float64(s.rng.IntN(size))
	}
	return backend.Strided{Addr: s.upload(idt, vals), Dtype: idt, Strides: []int{shape[1], 1}}, vals
}

func testGather(t *testing.T, s *suite) {
	shape := []int{3, 2} // the index's
	for _, dt := range Dtypes {
		for _, idt := range []dtypes.Dtype{dtypes.Int64, dtypes.Int32} {
			for _, dim := range []int{0, 1} {
				srcShape := []int{4, 2}
				if dim == 1 {
					srcShape = []int{3, 4}
				}
				sv := s.random(dt, 12)
				src := backend.Strided{Addr: s.upload(dt, sv), Dtype: dt, Strides: []int{srcShape[1], 1}}
				ix, iv := s.indexValues(idt, shape, 4)
				d := backend.Strided{Addr: s.upload(dt, make([]float64, 6)), Dtype: dt, Strides: []int{2, 1}}
				if !s.ok("Gather", dt, s.c.Gather(stream, shape, dim, d, src, ix)) {
					continue
				}
				want := make([]float64, 6)
				for i := range 3 {
					for j := range 2 {
						r, c := i, j
						if dim == 0 {
							r = int(iv[i*2+j])
						} else {
							c = int(iv[i*2+j])
						}
						want[i*2+j] = sv[r*srcShape[1]+c]
					}
				}
				s.check(fmt.Sprintf("Gather dim %d index %s", dim, idt), dt, s.download(dt, d.Addr, 6), want)
			}
		}
	}
}

func testScatterAdd(t *testing.T, s *suite) {
	shape := []int{3, 2} // the index's
	for _, dt := range Dtypes {
		for _, idt := range []dtypes.Dtype{dtypes.Int64, dtypes.Int32} {
			for _, dim := range []int{0, 1} {
				dstShape := []int{4, 2}
				if dim == 1 {
					dstShape = []int{3, 4}
				}
				dv := s.random(dt, 12)
				d := backend.Strided{Addr: s.upload(dt, dv), Dtype: dt, Strides: []int{dstShape[1], 1}}
				ix, iv := s.indexValues(idt, shape, 4)
				sv := s.random(dt, 6)
				src := backend.Strided{Addr: s.upload(dt, sv), Dtype: dt, Strides: []int{2, 1}}
				if !s.ok("ScatterAdd", dt, s.c.ScatterAdd(stream, shape, dim, d, ix, src)) {
					continue
				}
				want := slices.Clone(dv)
				for i := range 3 {
					for j := range 2 {
						r, c := i, j
						if dim == 0 {
							r = int(iv[i*2+j])
						} else {
							c = int(iv[i*2+j])
						}
						// Accumulate as the dtype does, one addition at a time.
						want[r*dstShape[1]+c] = conv(dt, want[r*dstShape[1]+c]+sv[i*2+j])
					}
				}
				s.check(fmt.Sprintf("ScatterAdd dim %d index %s", dim, idt), dt, s.download(dt, d.Addr, 12), want)
			}
		}
	}
}
