package computetest

import (
	"fmt"
	"testing"
)

// Fill and Copy.

func testFill(t *testing.T, s *suite) {
	for _, dt := range Dtypes {
		for _, tr := range []bool{false, true} {
			d := s.output(dt, tr)
			if !s.ok("Fill", dt, s.c.Fill(stream, shape34, d, 1.5)) {
				continue
			}
			want := make([]float64, 12)
			for i := range want {
				want[i] = 1.5
			}
			s.check(fmt.Sprintf("Fill transposed=%v", tr), dt, s.read(d), want)
		}
	}
}

func testCopy(t *testing.T, s *suite) {
	for _, dt := range Dtypes {
		for _, src := range Dtypes {
			for l := range layouts {
				if src != dt && l != 1 {
					continue // conversions: the transposed layout only
				}
				a, av := s.input(src, l)
				d := s.output(dt, false)
				if !s.ok("Copy", dt, s.c.Copy(stream, shape34, d, a)) {
					continue
				}
				want := make([]float64, 12)
				for k := range want {
					want[k] = av.at(shape34, k)
				}
				s.check(fmt.Sprintf("Copy from %s %s", src, layouts[l].name), dt, s.read(d), want)
			}
		}
	}
}
