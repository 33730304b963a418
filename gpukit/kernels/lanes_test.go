package kernels

import (
	"math"
	"math/big"
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
// Lengths are multiples of eight, as the callers pass: every remainder
// after the 32 a step of sumVec and sqDevVec (0, 8, 16, 24) and after the
// sixteen of lnBwdSumsVec's AVX-512 loop (0, 8).
func TestLayerNormLaneSumsMatchGo(t *testing.T) {
	forEachVecPath(t, func(t *testing.T) {
		for _, n := range []int{8, 16, 24, 32, 40, 48, 56, 64, 72, 80, 200, 1024} {
			r := rand.New(rand.NewPCG(3, uint64(n)))
			x, g, w := randRows(r, 1, n, 3), randRows(r, 1, n, 1), randRows(r, 1, n, 1)
			var stats [32]float64
			for i := range stats {
				stats[i] = r.NormFloat64() // accumulators carried in from an earlier call
			}
			const mu, rs = 0.25, 1.5

			got, want := stats, stats
			sumVec(&x[0], n, &got)
			for i, v := range x {
				want[i%32] += float64(v)
			}
			equalBits(t, "sumVec", n, got[:], want[:])

			got, want = stats, stats
			sqDevVec(&x[0], n, mu, &got)
			for i, v := range x {
				d := float64(v) - mu
				want[i%32] += d * d
			}
			equalBits(t, "sqDevVec", n, got[:], want[:])

			var start [8]float64
			copy(start[:], stats[:])
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

// TestLayerNormLanesAccuracy: LayerNorm's row statistics in 32 float64
// lanes (lanes32) are no less accurate than in the eight they replaced
// (lanes8), against the exact sums (math/big), over rows of the lengths
// models use, with means at zero and far from it (where the mean is large
// against the spread, the squared deviations carry the most digits).
func TestLayerNormLanesAccuracy(t *testing.T) {
	var err8, err32 [2]float64 // summed relative errors of Σx and Σ(x-μ)²
	rows, moved := 0, 0        // rows; rows whose float32 mean or rstd differ
	stats := func(lanes func([]float64) float64, sum, sq []float64) (float32, float32) {
		n := float64(len(sum))
		return float32(lanes(sum) / n), float32(1 / math.Sqrt(lanes(sq)/n+1e-5))
	}
	for _, n := range []int{64, 768, 1024, 4096} {
		for _, offset := range []float32{0, 10, 1000} {
			r := rand.New(rand.NewPCG(9, uint64(n)+uint64(offset)))
			for range 40 {
				rows++
				x := randRows(r, 1, n, 1)
				for i := range x {
					x[i] += offset
				}
				sum, sq := make([]float64, n), make([]float64, n)
				for i, v := range x {
					sum[i] = float64(v)
				}
				mu := exactSum(sum) / float64(n)
				for i, v := range x {
					d := float64(v) - mu
					sq[i] = d * d
				}
				m8, r8 := stats(laneSum8, sum, sq)
				m32, r32 := stats(laneSum32, sum, sq)
				if m8 != m32 || r8 != r32 {
					moved++
				}
				for k, v := range [][]float64{sum, sq} {
					exact := exactSum(v)
					err8[k] += math.Abs(laneSum8(v)-exact) / math.Abs(exact)
					err32[k] += math.Abs(laneSum32(v)-exact) / math.Abs(exact)
				}
			}
		}
	}
	for k, name := range []string{"Σx", "Σ(x-μ)²"} {
		t.Logf("%s: mean relative error over %d rows: 8 lanes %.3g, 32 lanes %.3g", name, rows, err8[k]/float64(rows), err32[k]/float64(rows))
		if err32[k] > err8[k] {
			t.Errorf("%s: 32 lanes are less accurate than eight: mean relative error %.3g > %.3g", name, err32[k]/float64(rows), err8[k]/float64(rows))
		}
	}
	t.Logf("rows whose float32 mean or rstd differ between the orders: %d of %d", moved, rows)
}

// laneSum8 and laneSum32 are Σv the way the kernels add: lane i%8 (i%32),
// then the lanes in lanes8's (lanes32's) tree.
func laneSum8(v []float64) float64 {
	var a [8]float64
	for i, x := range v {
		a[i%8] += x
	}
	return lanes8(&a)
}

func laneSum32(v []float64) float64 {
	var a [32]float64
	for i, x := range v {
		a[i%32] += x
	}
	return lanes32(&a)
}

// exactSum is Σv rounded once to float64 (a sum of a few thousand
// float64 fits in 4,096 bits).
func exactSum(v []float64) float64 {
	s := new(big.Float).SetPrec(4096)
	for _, x := range v {
		s.Add(s, new(big.Float).SetPrec(4096).SetFloat64(x))
	}
	f, _ := s.Float64()
	return f
}
