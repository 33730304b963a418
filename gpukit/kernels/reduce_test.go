package kernels

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gpumem/course/gpukit/ops"
)

func TestReduce(t *testing.T) {
	shapes := [][3]int{{1, 1, 1}, {1, 7, 1}, {3, 5, 1}, {2, 4, 3}, {1, 3, 700}, {4, 1, 9}, {2, 0, 3}, {1, 200000, 1}, {3, 100000, 1}, {300, 300, 2}, {1, 600, 1100}}
	for _, s := range shapes {
		outer, n, inner := s[0], s[1], s[2]
		r := rand.New(rand.NewPCG(uint64(n), 1))
		src := randSlice(r, outer*n*inner)
		src64 := make([]float64, len(src))
		for i, v := range src {
			src64[i] = float64(v)
		}
		for _, op := range ops.Reduces() {
			got := make([]float32, outer*inner)
			got64 := make([]float64, outer*inner)
			Reduce(op, got, src, outer, n, inner)
			Reduce(op, got64, src64, outer, n, inner)
			for o := 0; o < outer; o++ {
				for j := 0; j < inner; j++ {
					var sum float64
					mx, mn := math.Inf(-1), math.Inf(1)
					for p := 0; p < n; p++ {
						v := float64(src[(o*n+p)*inner+j])
						sum += v
						mx, mn = max(mx, v), min(mn, v)
					}
					want := map[ops.Reduce]float64{ops.ReduceSum: sum, ops.ReduceMean: sum / float64(n), ops.ReduceMax: mx, ops.ReduceMin: mn}[op]
					for _, g := range []float64{float64(got[o*inner+j]), got64[o*inner+j]} {
						if !(g == float64(float32(want)) || g == want || math.Abs(g-want) < 1e-9*math.Max(1, math.Abs(want)) || (g != g && want != want)) {
							t.Fatalf("%v %v at (%d,%d): got %v want %v", op, s, o, j, g, want)
						}
					}
				}
			}
			if outer*inner == 0 {
				continue
			}
			am, an := make([]int, outer*inner), make([]int, outer*inner)
			ArgMax(am, src, outer, n, inner)
			ArgMin(an, src, outer, n, inner)
			mx, mn := make([]float32, outer*inner), make([]float32, outer*inner)
			Reduce(ops.ReduceMax, mx, src, outer, n, inner)
			Reduce(ops.ReduceMin, mn, src, outer, n, inner)
			for t2 := range am {
				o, j := t2/inner, t2%inner
				if n == 0 {
					if am[t2] != -1 {
						t.Fatalf("argmax of empty = %d", am[t2])
					}
					continue
				}
				if src[(o*n+am[t2])*inner+j] != mx[t2] || src[(o*n+an[t2])*inner+j] != mn[t2] {
					t.Fatalf("arg reduce %v at %d wrong", s, t2)
				}
			}
		}
	}
}

func TestArgMaxTiesAndNaN(t *testing.T) {
	got := make([]int, 1)
	ArgMax(got, []float32{1, 3, 3, 2}, 1, 4, 1)
	if got[0] != 1 {
		t.Errorf("tie: got %d, want 1", got[0])
	}
	ArgMax(got, []float32{1, float32(math.NaN()), 3, float32(math.NaN())}, 1, 4, 1)
	if got[0] != 1 {
		t.Errorf("NaN: got %d, want 1", got[0])
	}
}

// TestSumAccuracy checks the float64 accumulation: 2²⁴+1 ones summed in
// float32 would stall at 16777216.
func TestSumAccuracy(t *testing.T) {
	n := 1<<24 + 7
	src := make([]float32, n)
	for i := range src {
		src[i] = 1
	}
	got := make([]float32, 1)
	Reduce(ops.ReduceSum, got, src, 1, n, 1)
	if float64(got[0]) != float64(float32(n)) {
		t.Fatalf("sum = %v, want %v", got[0], float32(n))
	}
}

// TestAddToFloat64 checks the AVX column-sum step against the Go loop, bit
// for bit, over lengths around its 8-value blocks.
func TestAddToFloat64(t *testing.T) {
	if !useAVX {
		t.Skip("no AVX")
	}
	r := rand.New(rand.NewPCG(3, 3))
	for n := range 41 {
		row := make([]float32, n)
		acc := make([]float64, n)
		for j := range row {
			row[j] = float32(r.NormFloat64() * 1e3)
			acc[j] = r.NormFloat64()
		}
		want := append([]float64(nil), acc...)
		for j, v := range row {
			want[j] += float64(v)
		}
		addToFloat64(acc, row)
		for j := range acc {
			if math.Float64bits(acc[j]) != math.Float64bits(want[j]) {
				t.Fatalf("n %d: acc[%d] = %v, want %v", n, j, acc[j], want[j])
			}
		}
	}
}
