package kernels

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gpumem/course/gpukit/ops"
)

// adamComposed is the Adam step as separate elementwise kernels, the way
// an optimizer without a fused kernel runs it (one temporary per line).
func adamComposed(p, g, m, v []float32, s ops.AdamScalars) {
	n := len(p)
	gg := slices.Clone(g)
	switch {
	case s.Decoupled:
		BinaryScalar(ops.Mul, p, p, float32(1-s.LR*s.WeightDecay))
	case s.WeightDecay != 0:
		d := make([]float32, n)
		BinaryScalar(ops.Mul, d, p, float32(s.WeightDecay))
		Binary(ops.Add, gg, d, g)
	}
	t := make([]float32, n)
	BinaryScalar(ops.Mul, t, gg, float32(1-s.Beta1))
	BinaryScalar(ops.Mul, m, m, float32(s.Beta1))
	Binary(ops.Add, m, m, t)
	Binary(ops.Mul, t, gg, gg)
	BinaryScalar(ops.Mul, t, t, float32(1-s.Beta2))
	BinaryScalar(ops.Mul, v, v, float32(s.Beta2))
	Binary(ops.Add, v, v, t)
	bc1 := 1 - math.Pow(s.Beta1, float64(s.Step))
	bc2 := 1 - math.Pow(s.Beta2, float64(s.Step))
	Unary(ops.Sqrt, t, v)
	BinaryScalar(ops.Div, t, t, float32(math.Sqrt(bc2)))
	BinaryScalar(ops.Add, t, t, float32(s.Eps))
	Binary(ops.Div, t, m, t)
	BinaryScalar(ops.Mul, t, t, float32(s.LR/bc1))
	Binary(ops.Sub, p, p, t)
}

// The fused step is bitwise the composed one, for Adam, Adam with L2
// decay and AdamW, over several steps and sizes on both sides of the
// parallel threshold.
func TestAdamUpdateMatchesComposedKernels(t *testing.T) {
	for _, n := range []int{1, 17, parallelThreshold*2 + 5} {
		for _, base := range []ops.AdamScalars{
			{LR: 1e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8},
			{LR: 1e-2, Beta1: 0.8, Beta2: 0.99, Eps: 1e-6, WeightDecay: 0.1},
			{LR: 1e-2, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 0.01, Decoupled: true},
		} {
			rng := rand.New(rand.NewPCG(uint64(n), 7))
			p := make([]float32, n)
			for i := range p {
				p[i] = float32(rng.NormFloat64())
			}
			p2 := slices.Clone(p)
			m, v := make([]float32, n), make([]float32, n)
			m2, v2 := make([]float32, n), make([]float32, n)
			g := make([]float32, n)
			for step := 1; step <= 3; step++ {
				for i := range g {
					g[i] = float32(rng.NormFloat64())
				}
				s := base
				s.Step = step
				AdamUpdate(p, g, m, v, s)
				adamComposed(p2, g, m2, v2, s)
				for i := range p {
					if p[i] != p2[i] || m[i] != m2[i] || v[i] != v2[i] {
						t.Fatalf("n=%d %+v step %d element %d: fused p,m,v = %v,%v,%v, composed %v,%v,%v",
							n, base, step, i, p[i], m[i], v[i], p2[i], m2[i], v2[i])
					}
				}
			}
		}
	}
}

func TestAdamUpdateLengths(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("AdamUpdate with slices of different lengths did not panic")
		}
	}()
	AdamUpdate(make([]float32, 2), make([]float32, 2), make([]float32, 1), make([]float32, 2), ops.AdamScalars{Step: 1})
}

// BenchmarkAdamUpdate is one Adam step over the 4.2M parameters of the
// optim package's 4-layer MLP benchmark.
func BenchmarkAdamUpdate(b *testing.B) {
	const n = 4*1024*1024 + 4*1024
	p, g, m, v := make([]float32, n), make([]float32, n), make([]float32, n), make([]float32, n)
	for i := range p {
		p[i], g[i] = float32(i%97)/97, float32(i%89)/89-0.5
	}
	b.SetBytes(7 * 4 * n)
	s := ops.AdamScalars{LR: 1e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8}
	for b.Loop() {
		s.Step++
		AdamUpdate(p, g, m, v, s)
	}
}
