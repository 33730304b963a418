package computetest

import (
	"fmt"
	"math"
	"testing"

	"github.com/gpumem/course/gpukit/device/backend"
	"github.com/gpumem/course/gpukit/dtypes"
	"github.com/gpumem/course/gpukit/kernels"
	"github.com/gpumem/course/gpukit/ops"
)

// The elementwise ops: Unary, Binary and BinaryScalar, their comparisons
// into a bool dst, Where and InRange.

// ref1 is the float64 reference of a unary op.
func ref1(op ops.Unary, x float64) float64 { return kernels.ApplyUnary(op, x) }

func testUnary(t *testing.T, s *suite) {
	for _, dt := range Dtypes {
		for _, op := range ops.Unaries() {
			for l := range layouts {
				a, av := s.input(dt, l)
				d := s.output(dt, l == 1)
				if !s.ok("Unary", dt, s.c.Unary(stream, op, shape34, d, a)) {
					continue
				}
				want := make([]float64, 12)
				for k := range want {
					want[k] = ref1(op, av.at(shape34, k))
				}
				s.check(fmt.Sprintf("%v %s", op, layouts[l].name), dt, s.read(d), want)
			}
		}
	}
}

func testBinary(t *testing.T, s *suite) {
	for _, dt := range Dtypes {
		for _, op := range ops.Binaries() {
			for la := range layouts {
				lb := (la + 2) % len(layouts)
				a, av := s.input(dt, la)
				b, bv := s.input(dt, lb)
				d := s.output(dt, false)
				if !s.ok("Binary", dt, s.c.Binary(stream, op, shape34, d, a, b)) {
					continue
				}
				want := make([]float64, 12)
				for k := range want {
					want[k] = kernels.ApplyBinary(op, av.at(shape34, k), bv.at(shape34, k))
				}
				s.check(fmt.Sprintf("%v %s with %s", op, layouts[la].name, layouts[lb].name), dt, s.read(d), want)
			}
		}
	}
}

func testBinaryScalar(t *testing.T, s *suite) {
	for _, dt := range Dtypes {
		for _, op := range ops.Binaries() {
			for _, first := range []bool{false, true} {
				a, av := s.input(dt, 1)
				d := s.output(dt, false)
				sc := 1.5 // the integer types get an integer scalar
				if tol(dt) == 0 {
					sc = 2
				}
				if !s.ok("BinaryScalar", dt, s.c.BinaryScalar(stream, op, shape34, d, a, sc, first)) {
					continue
				}
				want := make([]float64, 12)
				for k := range want {
					x, y := av.at(shape34, k), sc
					if first {
						x, y = y, x
					}
					want[k] = kernels.ApplyBinary(op, x, y)
				}
				s.check(fmt.Sprintf("%v scalarFirst=%v", op, first), dt, s.read(d), want)
			}
		}
	}
}

// comparisons are the binary ops that may write a Bool dst.
var comparisons = []ops.Binary{ops.Greater, ops.Less, ops.Equal, ops.GreaterEqual, ops.LessEqual}

// tied returns n values of dt from a small set, so that comparisons meet
// ties, zeros and (for the float types) NaN.
func (s *suite) tied(dt dtypes.Dtype, n int) []float64 {
	// 0.1 as dt holds it: equal to the scalar 0.1 under PyTorch's rule
	// for comparisons (dtypes.Round), below it in float64 for
	// float32 and the 16-bit types.
	set := []float64{-1, 0, 0.5, 1, math.NaN(), dtypes.Round(dt, 0.1)}
	switch dt {
	case dtypes.Int64, dtypes.Int32:
		set = []float64{-1, 0, 1, 2}
	case dtypes.Bool:
		set = []float64{0, 1}
	}
	v := make([]float64, n)
	for i := range v {
		v[i] = set[s.rng.IntN(len(set))]
	}
	return v
}

// tiedInput is input with values from tied.
func (s *suite) tiedInput(dt dtypes.Dtype, layout int) (backend.Strided, view) {
	l := layouts[layout]
	vals := s.tied(dt, l.size)
	return backend.Strided{Addr: s.upload(dt, vals), Dtype: dt, Strides: l.strides}, view{vals, l.strides}
}

// boolOut is a fresh [3, 4] Bool operand, contiguous or transposed.
func (s *suite) boolOut(transposed bool) backend.Strided { return s.output(dtypes.Bool, transposed) }

// testBinaryBool: the comparisons of two operands of every dtype into a
// Bool dst (as torch.gt and the others return torch.bool).
func testBinaryBool(t *testing.T, s *suite) {
	for _, dt := range Dtypes {
		for _, op := range comparisons {
			for k := range 2 * len(layouts) {
				la, lb := k/2, (k/2+k%2)%len(layouts) // each layout with itself and with the next
				a, av := s.tiedInput(dt, la)
				b, bv := s.tiedInput(dt, lb)
				d := s.boolOut(la == 2)
				if !s.ok("BinaryBool", dt, s.c.Binary(stream, op, shape34, d, a, b)) {
					continue
				}
				want := make([]float64, 12)
				for k := range want {
					want[k] = kernels.ApplyBinary(op, av.at(shape34, k), bv.at(shape34, k))
				}
				s.check(fmt.Sprintf("%v of %s into bool, %s with %s", op, dt, layouts[la].name, layouts[lb].name), dtypes.Bool, s.read(d), want)
			}
		}
	}
}

// testBinaryScalarBool: the comparisons with a scalar into a Bool dst.
func testBinaryScalarBool(t *testing.T, s *suite) {
	for _, dt := range Dtypes {
		for _, op := range comparisons {
			for _, first := range []bool{false, true} {
				for i, sc := range []float64{0.5, 1, math.NaN(), 0.1} {
					a, av := s.tiedInput(dt, i%2) // contiguous and transposed
					d := s.boolOut(false)
					if !s.ok("BinaryScalarBool", dt, s.c.BinaryScalar(stream, op, shape34, d, a, sc, first)) {
						continue
					}
					want := make([]float64, 12)
					for k := range want {
						x, y := av.at(shape34, k), dtypes.Round(dt, sc)
						if first {
							x, y = y, x
						}
						want[k] = kernels.ApplyBinary(op, x, y)
					}
					s.check(fmt.Sprintf("%v of %s and %v into bool, scalarFirst=%v", op, dt, sc, first), dtypes.Bool, s.read(d), want)
				}
			}
		}
	}
}

// testWhere: dst = cond ? a : b for every dtype, every operand in each
// layout, into a contiguous and a transposed dst; the values are copied
// exactly.
func testWhere(t *testing.T, s *suite) {
	for _, dt := range Dtypes {
		for l := range layouts {
			c, cv := s.tiedInput(dtypes.Bool, l)
			a, av := s.input(dt, (l+1)%len(layouts))
			b, bv := s.input(dt, (l+2)%len(layouts))
			d := s.output(dt, l == 1)
			if !s.ok("Where", dt, s.c.Where(stream, shape34, d, c, a, b)) {
				continue
			}
			want := make([]float64, 12)
			for k := range want {
				want[k] = bv.at(shape34, k)
				if cv.at(shape34, k) != 0 {
					want[k] = av.at(shape34, k)
				}
			}
			s.checkTol(fmt.Sprintf("Where cond %s", layouts[l].name), dt, s.read(d), want, 0)
		}
	}
}

// testInRange: the Bool lo ≤ x ≤ hi for every dtype and layout, NaN
// giving false, the bounds rounded to x's dtype as a comparison's scalar.
func testInRange(t *testing.T, s *suite) {
	for _, dt := range Dtypes {
		for l := range layouts {
			for _, r := range [][2]float64{{0, 1}, {-0.5, 0.5}, {math.Inf(-1), 0}, {2, 1}, {0.1, 0.5}, {-1, 0.1}} {
				a, av := s.tiedInput(dt, l)
				d := s.boolOut(l == 1)
				if !s.ok("InRange", dt, s.c.InRange(stream, shape34, d, a, r[0], r[1])) {
					continue
				}
				want := make([]float64, 12)
				lo, hi := dtypes.Round(dt, r[0]), dtypes.Round(dt, r[1])
				for k := range want {
					if x := av.at(shape34, k); x >= lo && x <= hi {
						want[k] = 1
					}
				}
				s.check(fmt.Sprintf("InRange [%v, %v] of %s %s", r[0], r[1], dt, layouts[l].name), dtypes.Bool, s.read(d), want)
			}
		}
	}
}
