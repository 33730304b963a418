package kernels

import (
	"fmt"
	"math"

	"github.com/gpumem/course/gpukit/ops"
)

// AdamUpdate applies one Adam step to p in a single pass over p, its
// gradient g and the state m (exp_avg) and v (exp_avg_sq), as PyTorch's
// fused Adam kernel does, with no temporary arrays. Per element:
//
//	p ← p·(1 − lr·wd)                      (Decoupled: AdamW)
//	g ← p·wd + g                           (otherwise, when wd ≠ 0)
//	m ← m·β1 + g·(1 − β1)
//	v ← v·β2 + g·g·(1 − β2)
//	p ← p − m / (√v / √(1 − β2ᵗ) + eps) · lr/(1 − β1ᵗ)
//
// Each operation is rounded to T in that order (no fused multiply-add),
// so the result is bitwise the one of the same steps done as separate
// elementwise kernels; on amd64 float32 runs eight elements at a time
// (AVX) with the same operations. Large inputs are split across
// goroutines as the other elementwise kernels are.
func AdamUpdate[T Float](p, g, m, v []T, s ops.AdamScalars) {
	if len(g) != len(p) || len(m) != len(p) || len(v) != len(p) {
		panic(fmt.Sprintf("kernels: AdamUpdate: lengths p=%d g=%d m=%d v=%d differ", len(p), len(g), len(m), len(v)))
	}
	bc1 := 1 - math.Pow(s.Beta1, float64(s.Step))
	bc2 := 1 - math.Pow(s.Beta2, float64(s.Step))
	var (
		b1, c1   = T(s.Beta1), T(1 - s.Beta1)
		b2, c2   = T(s.Beta2), T(1 - s.Beta2)
		bc2Sqrt  = T(math.Sqrt(bc2))
		eps      = T(s.Eps)
		stepSize = T(s.LR / bc1)
		wd       = T(s.WeightDecay)
		decay    = T(1 - s.LR*s.WeightDecay)
		l2       = !s.Decoupled && s.WeightDecay != 0
		adamW    = s.Decoupled
	)
	// Without L2 decay, float32 runs eight lanes at a time in assembly
	// (AdamW's decay multiplies by decay; plain Adam's decay is 1, exact).
	var vec *[8]float32
	if _, ok := any(p).([]float32); ok && useAVX && !l2 {
		d := float32(1)
		if adamW {
			d = float32(decay)
		}
		vec = &[8]float32{d, float32(b1), float32(c1), float32(b2), float32(c2), float32(bc2Sqrt), float32(eps), float32(stepSize)}
	}
	parallelFor(len(p), workers(len(p), parallelThreshold/2), 16, func(lo, hi int) {
		p, g, m, v := p[lo:hi], g[lo:hi], m[lo:hi], v[lo:hi]
		g, m, v = g[:len(p)], m[:len(p)], v[:len(p)]
		if vec != nil && len(p) >= 8 {
			n := len(p) &^ 7
			p32, g32, m32, v32 := any(p).([]float32), any(g).([]float32), any(m).([]float32), any(v).([]float32)
			adamAVX(&p32[0], &g32[0], &m32[0], &v32[0], n, vec)
			p, g, m, v = p[n:], g[n:], m[n:], v[n:]
		}
		for i := range p {
			pi, gi := p[i], g[i]
			if adamW {
				pi = T(pi * decay)
			} else if l2 {
				gi = T(pi*wd) + gi
			}
			mi := T(m[i]*b1) + T(gi*c1)
			vi := T(v[i]*b2) + T(T(gi*gi)*c2)
			m[i], v[i] = mi, vi
			denom := T(T(math.Sqrt(float64(vi)))/bc2Sqrt) + eps
			p[i] = pi - T(T(mi/denom)*stepSize)
		}
	})
}
