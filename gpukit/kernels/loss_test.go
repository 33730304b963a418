package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gpumem/course/gpukit/ops"
	"github.com/stretchr/testify/assert"
)

// crossEntropyPasses is what CrossEntropyBackwardRows fuses: Exp into
// probs, −1 added at each target, probs·scale into grad.
func crossEntropyPasses[T Float, I Index](grad, probs, logProbs []T, targets []I, scale T, rows, n int) {
	Unary(ops.Exp, probs[:rows*n], logProbs[:rows*n])
	for i := range rows {
		probs[i*n+int(targets[i])] += -1
	}
	BinaryScalar(ops.Mul, grad[:rows*n], probs[:rows*n], scale)
}

// logSoftmaxInput is rows log-softmax rows of n classes (a few special
// values among them when special) and targets for them.
func logSoftmaxInput(rows, n int, special bool) ([]float32, []int64) {
	r := rand.New(rand.NewPCG(3, uint64(rows*n)))
	x := randRows(r, rows, n, 4)
	ls := make([]float32, rows*n)
	SoftmaxRows(ls, x, rows, n, true)
	if special {
		for i, v := range []float32{float32(math.NaN()), float32(math.Inf(-1)), float32(math.Inf(1)), -104, -87.5, 0, float32(math.Copysign(0, -1)), 88.7} {
			ls[(i*131)%len(ls)] = v
		}
	}
	targets := make([]int64, rows)
	for i := range targets {
		targets[i] = int64(r.IntN(n))
	}
	return ls, targets
}

// TestCrossEntropyBackwardRowsMatchesPasses checks the fused kernel
// against the passes bit for bit: rows shorter and longer than a chunk,
// tails of every length, results large enough to stream, float64, int32
// targets and special values (NaN, ±Inf, ±0, exponents that underflow).
func TestCrossEntropyBackwardRowsMatchesPasses(t *testing.T) {
	cases := []struct {
		rows, n int
		special bool
	}{
		{1, 1, false}, {3, 7, true}, {5, 33, false}, {17, 1000, true},
		{4, crossEntropyChunk, false}, {3, crossEntropyChunk + 1, true}, {2, 2*crossEntropyChunk + 77, true},
		{streamFloats/1000 + 1, 1000, true}, // streamed, across goroutines
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%dx%d", c.rows, c.n), func(t *testing.T) {
			ls, targets := logSoftmaxInput(c.rows, c.n, c.special)
			scale := float32(1.7) / float32(c.rows)
			size := c.rows * c.n
			wantGrad, wantProbs := make([]float32, size), make([]float32, size)
			crossEntropyPasses(wantGrad, wantProbs, ls, targets, scale, c.rows, c.n)
			grad, probs := make([]float32, size), make([]float32, size)
			CrossEntropyBackwardRows(grad, probs, ls, targets, scale, c.rows, c.n)
			requireSameBits32(t, "probs", wantProbs, probs)
			requireSameBits32(t, "grad", wantGrad, grad)

			targets32 := make([]int32, len(targets))
			for i, v := range targets {
				targets32[i] = int32(v)
			}
			clear(grad)
			CrossEntropyBackwardRows(grad, probs, ls, targets32, scale, c.rows, c.n)
			requireSameBits32(t, "grad (int32 targets)", wantGrad, grad)

			ls64 := make([]float64, size)
			for i, v := range ls {
				ls64[i] = float64(v)
			}
			want64, wantP64 := make([]float64, size), make([]float64, size)
			crossEntropyPasses(want64, wantP64, ls64, targets, float64(scale), c.rows, c.n)
			got64, gotP64 := make([]float64, size), make([]float64, size)
			CrossEntropyBackwardRows(got64, gotP64, ls64, targets, float64(scale), c.rows, c.n)
			for i := range want64 {
				if math.Float64bits(want64[i]) != math.Float64bits(got64[i]) || math.Float64bits(wantP64[i]) != math.Float64bits(gotP64[i]) {
					t.Fatalf("float64 element %d: grad %v, probs %v; the passes give %v, %v", i, got64[i], gotP64[i], want64[i], wantP64[i])
				}
			}
		})
	}
}

func requireSameBits32(t *testing.T, what string, want, got []float32) {
	t.Helper()
	for i := range want {
		if math.Float32bits(want[i]) != math.Float32bits(got[i]) {
			t.Fatalf("%s element %d is %v (%#x); the passes give %v (%#x)", what, i, got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
		}
	}
}

// TestCrossEntropyBackwardRowsArguments checks that a bad call panics with
// the package's message, before it writes anything.
func TestCrossEntropyBackwardRowsArguments(t *testing.T) {
	ls, _ := logSoftmaxInput(2, 3, false)
	cases := []struct {
		name    string
		targets []int64
		out     int
		rows, n int
		want    string
	}{
		{"target too large", []int64{0, 3}, 6, 2, 3, "target 3 of row 1 is out of bounds for 3 classes"},
		{"negative target", []int64{-1, 0}, 6, 2, 3, "target -1 of row 0 is out of bounds"},
		{"too few targets", []int64{0}, 6, 2, 3, "1 targets for 2 rows"},
		{"short output", []int64{0, 0}, 5, 2, 3, "slices too short"},
		{"negative size", []int64{0, 0}, 6, -1, 3, "negative size"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			grad, probs := make([]float32, c.out), make([]float32, c.out)
			msg := func() (msg string) {
				defer func() { msg = fmt.Sprint(recover()) }()
				CrossEntropyBackwardRows(grad, probs, ls, c.targets, 1, c.rows, c.n)
				return "no panic"
			}()
			assert.True(t, strings.HasPrefix(msg, "kernels: CrossEntropyBackwardRows: "), msg)
			assert.Contains(t, msg, c.want)
			assert.Equal(t, make([]float32, c.out), grad, "written before the panic")
		})
	}
}

// BenchmarkCrossEntropyBackward compares the fused kernel with the passes
// at scripts/bench-torch.sh's shape (8192 rows of 1000 classes).
func BenchmarkCrossEntropyBackward(b *testing.B) {
	const rows, n = 8192, 1000
	ls, targets := logSoftmaxInput(rows, n, false)
	grad, probs := randBench(rows*n), randBench(rows*n)
	b.Run("fused", func(b *testing.B) {
		benchLoop(b, 12*rows*n, func() { CrossEntropyBackwardRows(grad, probs, ls, targets, 1.0/rows, rows, n) })
	})
	b.Run("passes", func(b *testing.B) {
		benchLoop(b, 12*rows*n, func() { crossEntropyPasses(grad, probs, ls, targets, 1.0/rows, rows, n) })
	})
}
