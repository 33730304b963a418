package computetest

import (
	"fmt"
	"slices"
	"testing"

	"github.com/gpumem/course/gpukit/kernels"
	"github.com/gpumem/course/gpukit/ops"
)

// The optimizer step: Adam.

func testAdam(t *testing.T, s *suite) {
	const n = 37
	for _, dt := range Dtypes {
		for _, decoupled := range []bool{false, true} {
			sc := ops.AdamScalars{LR: 1e-2, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 0.01, Step: 3, Decoupled: decoupled}
			pv, gv, mv := s.random(dt, n), s.random(dt, n), s.random(dt, n)
			vv := make([]float64, n)
			for i := range vv {
				vv[i] = conv(dt, float64(i%5)/8)
			}
			p, g, m, v := s.upload(dt, pv), s.upload(dt, gv), s.upload(dt, mv), s.upload(dt, vv)
			if !s.ok("Adam", dt, s.c.Adam(stream, dt, p, g, m, v, n, sc)) {
				continue
			}
			rp, rm, rv := slices.Clone(pv), slices.Clone(mv), slices.Clone(vv)
			kernels.AdamUpdate(rp, slices.Clone(gv), rm, rv, sc)
			what := fmt.Sprintf("Adam decoupled=%v", decoupled)
			s.check(what+" param", dt, s.download(dt, p, n), rp)
			s.check(what+" exp_avg", dt, s.download(dt, m, n), rm)
			s.check(what+" exp_avg_sq", dt, s.download(dt, v, n), rv)
		}
	}
}
