package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gpumem/course/gpukit/ops"
)

// TestAVXNamesMatchTheirLoops checks the helpers behind the AVX names
// (transposes, packing, the float64 column sum and Adam's 8-wide step)
// against plain loops, bit for bit: the assembly on amd64 where the CPU
// has the features, the Go loops of sgemm_kernel_other.go elsewhere.
func TestAVXNamesMatchTheirLoops(t *testing.T) {
	r := rand.New(rand.NewPCG(38, 2))
	t.Run("transpose16x16", func(t *testing.T) {
		if !useAVX2 && !avxNamesAreGo {
			t.Skip("no AVX2 here")
		}
		ldd, lds := 19, 23
		src, dst := randSlice(r, 16*lds), randSlice(r, 16*ldd)
		want := slices.Clone(dst)
		for i := range 16 {
			for j := range 16 {
				want[j*ldd+i] = src[i*lds+j]
			}
		}
		transpose16x16AVX(&dst[0], ldd, &src[0], lds)
		require.Equal(t, want, dst)
	})
	for _, c := range []struct {
		rows int
		pack func(dst *float32, ldd int, src *float32, lds int, n int)
	}{{4, packTranspose4AVX}, {2, packTranspose2AVX}} {
		t.Run(fmt.Sprint("packTranspose", c.rows), func(t *testing.T) {
			if !useAVX && !avxNamesAreGo {
				t.Skip("no AVX here")
			}
			const n, ldd, lds = 24, 7, 29
			src, dst := randSlice(r, c.rows*lds), randSlice(r, n*ldd)
			want := slices.Clone(dst)
			for p := range n {
				for i := range c.rows {
					want[p*ldd+i] = src[i*lds+p]
				}
			}
			c.pack(&dst[0], ldd, &src[0], lds, n)
			require.Equal(t, want, dst)
		})
	}
	t.Run("packRows", func(t *testing.T) {
		if !useAVX512 && !avxNamesAreGo {
			t.Skip("no AVX-512 here")
		}
		lanes := func(k int) uint16 { return uint16(1<<min(max(k, 0), 16) - 1) }
		for _, c := range []struct{ width, ld int }{{0, 32}, {5, 16}, {16, 16}, {20, 32}, {32, 32}} {
			const n, lds = 6, 40
			src, dst := randSlice(r, n*lds), randSlice(r, n*c.ld)
			want := make([]float32, n*c.ld)
			for p := range n {
				copy(want[p*c.ld:], src[p*lds:p*lds+c.width])
			}
			masks := [4]uint16{lanes(c.width), lanes(c.width - 16), lanes(c.ld), lanes(c.ld - 16)}
			packRowsAVX512(&dst[0], c.ld, &src[0], lds, n, &masks)
			require.Equal(t, want, dst, "width %d, ld %d", c.width, c.ld)
		}
	})
	t.Run("addToFloat64", func(t *testing.T) {
		if !useAVX && !avxNamesAreGo {
			t.Skip("no AVX here")
		}
		row := randSlice(r, 40)
		acc := make([]float64, 40)
		want := make([]float64, 40)
		for j := range acc {
			acc[j] = r.NormFloat64()
			want[j] = acc[j]
			if j < 32 {
				want[j] += float64(row[j])
			}
		}
		addToFloat64AVX(&acc[0], &row[0], 32)
		require.Equal(t, want, acc)
	})
	t.Run("adam", func(t *testing.T) {
		if !useAVX && !avxNamesAreGo {
			t.Skip("no AVX here")
		}
		for _, decoupled := range []bool{false, true} {
			const n = 40
			s := ops.AdamScalars{LR: 1e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, Step: 3, Decoupled: decoupled}
			if decoupled {
				s.WeightDecay = 0.01
			}
			p, g := randSlice(r, n), randSlice(r, n)
			m, v := randSlice(r, n), randSlice(r, n)
			for i := range v {
				v[i] = float32(math.Abs(float64(v[i])))
			}
			want := [4][]float32{slices.Clone(p), slices.Clone(g), slices.Clone(m), slices.Clone(v)}
			adamScalarLoop(want[0], want[1], want[2], want[3], s)
			bc1 := 1 - math.Pow(s.Beta1, float64(s.Step))
			bc2 := 1 - math.Pow(s.Beta2, float64(s.Step))
			c := [8]float32{float32(1 - s.LR*s.WeightDecay), float32(s.Beta1), float32(1 - s.Beta1), float32(s.Beta2), float32(1 - s.Beta2),
				float32(math.Sqrt(bc2)), float32(s.Eps), float32(s.LR / bc1)}
			if !decoupled {
				c[0] = 1
			}
			adamAVX(&p[0], &g[0], &m[0], &v[0], n, &c)
			require.Equal(t, want, [4][]float32{p, g, m, v}, "decoupled %v", decoupled)
		}
	})
}

// adamScalarLoop is AdamUpdate's per-element formula, written out once
// more, element by element, for float32 without L2 decay.
func adamScalarLoop(p, g, m, v []float32, s ops.AdamScalars) {
	bc1 := 1 - math.Pow(s.Beta1, float64(s.Step))
	bc2 := 1 - math.Pow(s.Beta2, float64(s.Step))
	for i := range p {
		pi := p[i]
		if s.Decoupled {
			pi = float32(pi * float32(1-s.LR*s.WeightDecay))
		}
		mi := float32(m[i]*float32(s.Beta1)) + float32(g[i]*float32(1-s.Beta1))
		vi := float32(v[i]*float32(s.Beta2)) + float32(float32(g[i]*g[i])*float32(1-s.Beta2))
		m[i], v[i] = mi, vi
		denom := float32(float32(math.Sqrt(float64(vi)))/float32(math.Sqrt(bc2))) + float32(s.Eps)
		p[i] = pi - float32(float32(mi/denom)*float32(s.LR/bc1))
	}
}
