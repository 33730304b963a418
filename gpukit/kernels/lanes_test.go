package kernels

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestLayerNormLaneSumsMatchGo checks LayerNorm's vector lane sums
// (sumVec, sqDevVec, lnBwdSumsVec: AVX-512 and AVX2 on amd64, NEON on
// arm64, rows_other.go's loops elsewhere) against the loops their
// comments give, bit for bit on every float64 accumulator, carried in
// from an earlier call: a value added to the wrong lane, or lanes
// swapped, rarely changes a float32 result, and TestRowsMatchScalar
// (which compares those) let such changes pass; these sums change.
// Lengths are multiples of eight, as the callers pass: sixteens (the
// AVX-512 loop) with and without a last eight.
func TestLayerNormLaneSumsMatchGo(t *testing.T) {
	forEachVecPath(t, func(t *testing.T) {
		for _, n := range []int{8, 16, 24, 32, 40, 56, 64, 72, 200, 1024} {
			r := rand.New(rand.NewPCG(3, uint64(n)))
			x, g, w := randRows(r, 1, n, 3), randRows(r, 1, n, 1), randRows(r, 1, n, 1)
			var start [8]float64
			for i := range start {
				start[i] = r.NormFloat64() // accumulators carried in from an earlier call
			}
			const mu, rs = 0.25, 1.5

			got, want := start, start
			sumVec(&x[0], n, &got)
			for i, v := range x {
				want[i%8] += float64(v)
			}
			equalBits(t, "sumVec", n, got[:], want[:])

			got, want = start, start
			sqDevVec(&x[0], n, mu, &got)
			for i, v := range x {
				d := float64(v) - mu
				want[i%8] += d * d
			}
			equalBits(t, "sqDevVec", n, got[:], want[:])

			sg, sgx, wantSg, wantSgx := start, start, start, start
			pw, pb := make([]float64, n), make([]float64, n)
			for i := range pw {
				pw[i], pb[i] = float64(i), -float64(i)
			}
			wantPw, wantPb := slices.Clone(pw), slices.Clone(pb)
			lnBwdSumsVec(&g[0], &x[0], &w[0], n, mu, rs, &sg, &sgx, &pw[0], &pb[0])
			for i := range n {
				xh := (x[i] - mu) * rs
				gw := g[i] * w[i]
				wantSg[i%8] += float64(gw)
				wantSgx[i%8] += float64(gw * xh)
				wantPw[i] += float64(g[i] * xh)
				wantPb[i] += float64(g[i])
			}
			equalBits(t, "lnBwdSumsVec sg", n, sg[:], wantSg[:])
			equalBits(t, "lnBwdSumsVec sgx", n, sgx[:], wantSgx[:])
			equalBits(t, "lnBwdSumsVec pw", n, pw, wantPw)
			equalBits(t, "lnBwdSumsVec pb", n, pb, wantPb)
		}
	})
}

// TestSoftmaxLaneSumsMatchGo is the same check for softmax's sum of
// exponentials: expSubVec, and expSubPairVec (two rows at once, AVX-512)
// where the CPU has it, against their Go loop.
func TestSoftmaxLaneSumsMatchGo(t *testing.T) {
	forEachVecPath(t, func(t *testing.T) {
		for _, n := range []int{8, 16, 24, 32, 40, 64, 72, 200, 1024} {
			r := rand.New(rand.NewPCG(4, uint64(n)))
			s1, s2 := randRows(r, 1, n, 3), randRows(r, 1, n, 3)
			const m1, m2 = 2.5, -1
			var start [8]float64
			for i := range start {
				start[i] = r.Float64()
			}
			want1, want2 := start, start
			for i := range n {
				want1[i%8] += float64(exp32(s1[i] - m1))
				want2[i%8] += float64(exp32(s2[i] - m2))
			}
			d1, d2 := make([]float32, n), make([]float32, n)
			got1 := start
			expSubVec(&d1[0], &s1[0], n, m1, &got1)
			equalBits(t, "expSubVec", n, got1[:], want1[:])
			if n%16 == 0 && pairRows() {
				got1, got2 := start, start
				expSubPairVec(&d1[0], &s1[0], &d2[0], &s2[0], n, m1, m2, &got1, &got2)
				equalBits(t, "expSubPairVec row 1", n, got1[:], want1[:])
				equalBits(t, "expSubPairVec row 2", n, got2[:], want2[:])
			}
		}
	})
}

func equalBits(t *testing.T, what string, n int, got, want []float64) {
	t.Helper()
	for i := range want {
		if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
			t.Fatalf("%s, n=%d: [%d] is %v, the Go loop's %v", what, n, i, got[i], want[i])
		}
	}
}
