//go:build !purego

package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestGeluSplit checks geluSplit and geluGradSplit, GELU and its
// derivative that take apart the lanes needing the erfc form (the AVX2
// loops, and the AVX-512 ones where the CPU has them), bit for bit
// against gelu32 and geluGrad32: normal values (one lane in eight
// apart), chunks where most lanes need the erfc form (the chunks geluVec
// and geluGradVec take whole after them, and the one tried again), values
// at and around the polynomial's bounds, the special values, the result
// written over the input, and lengths that end mid-chunk, in the middle
// of a step of sixteen or 32 and after one.
func TestGeluSplit(t *testing.T) {
	if !useVecMath {
		t.Skip("no AVX2")
	}
	r := rand.New(rand.NewPCG(39, 7))
	bounds := []float32{phiNeg, phiPos}
	var edges []float32
	for _, b := range bounds {
		for _, v := range []float32{b, math.Nextafter32(b, -10), math.Nextafter32(b, 10)} {
			edges = append(edges, v)
		}
	}
	special := append(edges, float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), 0,
		float32(math.Copysign(0, -1)), 1e-45, -1e-45, 16, -16, 3.4e38, -3.4e38)
	inputs := map[string]func(i int) float32{
		"normal":  func(int) float32 { return float32(r.NormFloat64()) },
		"special": func(int) float32 { return special[r.IntN(len(special))] },
		// geluChunk·(geluSkip+2) values in the erfc form, then normal
		// ones: the split runs, geluVec takes geluSkip chunks whole, the
		// split runs again.
		"large then normal": func(i int) float32 {
			if i < geluChunk*(geluSkip+2) {
				return -2 - 3*r.Float32()
			}
			return float32(r.NormFloat64())
		},
	}
	funcs := []struct {
		name  string
		split func(dst, src *float32, n int)
		ref   func(float32) float32
	}{
		{"gelu", geluSplit, gelu32},
		{"geluGrad", geluGradSplit, geluGrad32},
	}
	forEachVecPath(t, func(t *testing.T) {
		for _, f := range funcs {
			for name, gen := range inputs {
				for _, n := range []int{8, 16, 24, 32, 40, 48, 56, 64, 96, 120, geluChunk, geluChunk + 8, geluChunk*(geluSkip+4) + 72, geluChunk*(geluSkip+4) + 88} {
					t.Run(fmt.Sprintf("%s/%s/%d", f.name, name, n), func(t *testing.T) {
						xs := make([]float32, n)
						for i := range xs {
							xs[i] = gen(i)
						}
						got := make([]float32, n)
						f.split(&got[0], &xs[0], n)
						inPlace := append([]float32(nil), xs...)
						f.split(&inPlace[0], &inPlace[0], n)
						for i, x := range xs {
							want := f.ref(x)
							for _, g := range []float32{got[i], inPlace[i]} {
								if math.Float32bits(g) != math.Float32bits(want) && !(g != g && want != want) {
									t.Fatalf("%s(%v) [%d] = %v (in place %v), want %v", f.name, x, i, got[i], inPlace[i], want)
								}
							}
						}
					})
				}
			}
		}
	})
}
