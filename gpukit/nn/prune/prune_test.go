package prune_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpumem/course/gpukit/device"
	"github.com/gpumem/course/gpukit/device/simtest"
	"github.com/gpumem/course/gpukit/nn"
	"github.com/gpumem/course/gpukit/nn/prune"
	"github.com/gpumem/course/gpukit/tensor"
)

func newDev(t testing.TB) *device.Device { return simtest.Card(t) }

// linearWith returns a Linear whose weight holds w (rows of in values).
func linearWith(t testing.TB, dev *device.Device, w [][]float64, bias bool) *nn.Linear {
	t.Helper()
	l := nn.NewLinear(len(w[0]), len(w), bias, tensor.On(dev), tensor.Float64)
	for i, row := range w {
		for j, v := range row {
			tensor.NoGrad(func() { l.Weight.SetAt(v, i, j) })
		}
	}
	return l
}

func names(ns []nn.Named) []string {
	var out []string
	for _, n := range ns {
		out = append(out, n.Name)
	}
	return out
}

// ties: |w| = .1 .5 .1 / 2 .1 .3; the three 0.1s tie, the lower positions go first.
var tieWeights = [][]float64{{0.1, -0.5, 0.1}, {2, -0.1, 0.3}}

func TestL1UnstructuredMasks(t *testing.T) {
	for _, tc := range []struct {
		amount prune.Amount
		want   []float64
	}{
		{prune.Count(0), []float64{1, 1, 1, 1, 1, 1}},
		{prune.Count(1), []float64{0, 1, 1, 1, 1, 1}},
		{prune.Count(2), []float64{0, 1, 0, 1, 1, 1}},
		{prune.Fraction(0.5), []float64{0, 1, 0, 1, 0, 1}},
		{prune.Fraction(0.25), []float64{0, 1, 0, 1, 1, 1}}, // 1.5 rounds to 2 (half to even)
		{prune.Fraction(0.75), []float64{0, 1, 0, 1, 0, 0}}, // 4.5 rounds to 4
		{prune.Fraction(1), []float64{0, 0, 0, 0, 0, 0}},
		{prune.Count(6), []float64{0, 0, 0, 0, 0, 0}},
	} {
		t.Run(tc.amount.String(), func(t *testing.T) {
			dev := newDev(t)
			l := linearWith(t, dev, tieWeights, true)
			p, err := prune.L1Unstructured(l, "weight", tc.amount)
			require.NoError(t, err)
			assert.Equal(t, tc.want, p.Mask("weight").Float64s())
			w := p.Weight("weight").Float64s()
			for i, v := range []float64{0.1, -0.5, 0.1, 2, -0.1, 0.3} {
				assert.Equal(t, v*tc.want[i], w[i])
			}
			assert.Same(t, p.Weight("weight"), l.Weight, "the layer uses the computed weight")
		})
	}
}

func TestBadInputLeavesTheModelUnchanged(t *testing.T) {
	for _, tc := range []struct {
		name   string
		prune  func(m nn.Module) error
		errHas string
	}{
		{"fraction above 1", func(m nn.Module) error { _, err := prune.L1Unstructured(m, "weight", prune.Fraction(1.1)); return err }, "[0, 1]"},
		{"negative fraction", func(m nn.Module) error { _, err := prune.L1Unstructured(m, "weight", prune.Fraction(-0.1)); return err }, "[0, 1]"},
		{"NaN fraction", func(m nn.Module) error {
			_, err := prune.RandomUnstructured(m, "weight", prune.Fraction(math.NaN()), nil)
			return err
		}, "[0, 1]"},
		{"negative count", func(m nn.Module) error { _, err := prune.L1Unstructured(m, "weight", prune.Count(-1)); return err }, "non-negative"},
		{"count above entries", func(m nn.Module) error { _, err := prune.L1Unstructured(m, "weight", prune.Count(7)); return err }, "larger than the 6"},
		{"count above rows", func(m nn.Module) error { _, err := prune.LnStructured(m, "weight", prune.Count(3), 2, 0); return err }, "larger than the 2"},
		{"not a parameter", func(m nn.Module) error { _, err := prune.L1Unstructured(m, "weights", prune.Count(1)); return err }, `"weights" is not a parameter`},
		{"structured 1-d", func(m nn.Module) error { _, err := prune.LnStructured(m, "bias", prune.Count(1), 2, 0); return err }, "at least 2 dimensions"},
		{"dim out of range", func(m nn.Module) error { _, err := prune.LnStructured(m, "weight", prune.Count(1), 2, 2); return err }, "out of range"},
		{"global with a bad name", func(m nn.Module) error {
			_, err := prune.GlobalUnstructured([]prune.Param{{Module: m, Name: "weight"}, {Module: m, Name: "nope"}}, prune.Count(1))
			return err
		}, `"nope" is not a parameter`},
		{"scores of another shape", func(m nn.Module) error {
			_, err := prune.L1Unstructured(m, "weight", prune.Count(1), prune.ImportanceScores(hostTensor([]float64{1, 2, 3, 4, 5, 6}, 3, 2)))
			return err
		}, "importance scores of shape [3 2], but the parameter has shape [2 3]"},
		{"structured scores of another shape", func(m nn.Module) error {
			_, err := prune.LnStructured(m, "weight", prune.Count(1), 2, 0, prune.ImportanceScores(hostTensor([]float64{1, 2, 3}, 3)))
			return err
		}, "importance scores of shape [3], but the parameter has shape [2 3]"},
		{"global scores of another shape", func(m nn.Module) error {
			_, err := prune.GlobalUnstructured([]prune.Param{
				{Module: m, Name: "weight", Scores: hostTensor([]float64{1, 2, 3, 4, 5, 6}, 2, 3)},
				{Module: m, Name: "bias", Scores: hostTensor([]float64{1, 2, 3}, 3)},
			}, prune.Count(1))
			return err
		}, "Linear.bias: importance scores of shape [3], but the parameter has shape [2]"},
		{"global above all entries", func(m nn.Module) error {
			_, err := prune.GlobalUnstructured([]prune.Param{{Module: m, Name: "weight"}, {Module: m, Name: "bias"}}, prune.Count(9))
			return err
		}, "larger than the 8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dev := newDev(t)
			l := linearWith(t, dev, tieWeights, true)
			w, b := l.Weight, l.Bias
			before, mem := l.Weight.Float64s(), dev.MemoryAllocated()
			err := tc.prune(l)
			require.Error(t, err)
			assert.Contains(t, err.Error(), "prune: ")
			assert.Contains(t, err.Error(), tc.errHas)
			assert.Same(t, w, l.Weight)
			assert.Same(t, b, l.Bias)
			assert.Equal(t, before, l.Weight.Float64s())
			assert.Equal(t, []string{"weight", "bias"}, names(nn.NamedParameters(l)))
			assert.Empty(t, nn.NamedBuffers(l))
			assert.Equal(t, mem, dev.MemoryAllocated())
		})
	}
}

func TestPruningAPrunedLayerDirectlyIsRefused(t *testing.T) {
	dev := newDev(t)
	l := linearWith(t, dev, tieWeights, false)
	_, err := prune.L1Unstructured(l, "weight", prune.Count(1))
	require.NoError(t, err)
	_, err = prune.L1Unstructured(l, "weight", prune.Count(1))
	require.ErrorContains(t, err, "prune the *Pruned")
}

// Memory before, during and after pruning, to the byte: pruning triples
// the weight's memory; Remove brings it back to the dense size, no less.
func TestMemoryBeforeDuringAfter(t *testing.T) {
	dev := newDev(t)
	const W, B = 128 * 256 * 4, 128 * 4 // float32 weight and bias
	ws := simtest.WarmBlas(t, dev)      // the first product's cuBLAS workspace, held for good
	l := nn.NewLinear(256, 128, true, tensor.On(dev))
	orig := l.Weight
	assert.EqualValues(t, ws+W+B, dev.MemoryAllocated())

	p, err := prune.L1Unstructured(l, "weight", prune.Fraction(0.9))
	require.NoError(t, err)
	assert.EqualValues(t, ws+3*W+B, dev.MemoryAllocated(), "original + mask + computed weight")
	assert.Equal(t, []string{"bias", "weight_orig"}, names(nn.NamedParameters(p)))
	assert.Equal(t, []string{"weight_mask"}, names(nn.NamedBuffers(p)))
	assert.EqualValues(t, 2*W+B, nn.Nbytes(p), "the computed weight is neither parameter nor buffer")
	assert.Same(t, orig, p.Orig("weight"))

	x := tensor.Randn([]int{8, 256}, tensor.On(dev))
	const X, Y = 8 * 256 * 4, 8 * 128 * 4
	dev.ResetPeakStats()
	tensor.NoGrad(func() {
		y := p.Forward(x)
		assert.EqualValues(t, ws+4*W+B+X, dev.MaxMemoryAllocated(), "a new computed weight before the old one goes")
		assert.EqualValues(t, ws+3*W+B+X+Y, dev.MemoryAllocated())
		y.Release()
	})
	assert.EqualValues(t, ws+3*W+B+X, dev.MemoryAllocated())

	m, err := prune.Remove(p, "weight")
	require.NoError(t, err)
	assert.Same(t, l, m, "the plain layer comes back")
	assert.Same(t, orig, l.Weight, "the original parameter, now holding the zeros")
	assert.True(t, l.Weight.IsLeaf())
	assert.True(t, l.Weight.RequiresGrad())
	assert.EqualValues(t, ws+W+B+X, dev.MemoryAllocated(), "as dense as before")
	assert.Equal(t, []string{"weight", "bias"}, names(nn.NamedParameters(m)))
	assert.Empty(t, nn.NamedBuffers(m))
	zeros := 0
	for _, v := range l.Weight.Float64s() {
		if v == 0 {
			zeros++
		}
	}
	assert.Equal(t, int(math.RoundToEven(0.9*128*256)), zeros)

	_, err = prune.Remove(p, "weight")
	assert.ErrorContains(t, err, "not pruned")
}

func TestForwardAndGradientsThroughTheMask(t *testing.T) {
	dev := newDev(t)
	l := linearWith(t, dev, tieWeights, true)
	p, err := prune.L1Unstructured(l, "weight", prune.Count(3))
	require.NoError(t, err)
	seq := nn.NewSequential(p)
	assert.Equal(t, []string{"0.bias", "0.weight_orig"}, names(nn.NamedParameters(seq)))
	assert.Equal(t, []string{"0.weight_mask"}, names(nn.NamedBuffers(seq)))

	x := tensor.FromSlice([]float64{1, 2, 3}, []int{1, 3}, tensor.On(dev))
	y := seq.Forward(x)
	b := l.Bias.Float64s()
	// masked weight: 0 -.5 0 / 2 0 .3
	assert.InDeltaSlice(t, []float64{-1 + b[0], 2 + 0.9 + b[1]}, y.Float64s(), 1e-12)
	loss := y.Sum()
	loss.Backward()
	assert.Equal(t, []float64{0, 2, 0, 1, 0, 3}, p.Orig("weight").Grad().Float64s(), "pruned entries get zero gradient")
	loss.Release()
	y.Release()
}

func TestLnStructured(t *testing.T) {
	w := [][]float64{{3, 4, 0}, {1, 1, 1}, {0, 0, 5}, {-1, 0, 0}}
	for _, tc := range []struct {
		name   string
		amount prune.Amount
		n      float64
		dim    int
		want   []float64
	}{
		// L2 row norms 5, √3, 5, 1: prune the two smallest rows.
		{"L2 rows", prune.Count(2), 2, 0, []float64{1, 1, 1, 0, 0, 0, 1, 1, 1, 0, 0, 0}},
		// L1 row norms 7, 3, 5, 1; half of 4 rows is 2.
		{"L1 rows", prune.Fraction(0.5), 1, 0, []float64{1, 1, 1, 0, 0, 0, 1, 1, 1, 0, 0, 0}},
		// L2 row norms tie at 5 for rows 0 and 2: keeping 1 keeps row 0.
		{"tie keeps the lower row", prune.Count(3), 2, 0, []float64{1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0}},
		// L2 column norms √11, √17, √26: prune column 0.
		{"L2 columns", prune.Count(1), 2, 1, []float64{0, 1, 1, 0, 1, 1, 0, 1, 1, 0, 1, 1}},
		{"negative dim", prune.Count(1), 2, -1, []float64{0, 1, 1, 0, 1, 1, 0, 1, 1, 0, 1, 1}},
		// L∞ column norms 3, 4, 5
		{"Linf columns", prune.Count(2), math.Inf(1), 1, []float64{0, 0, 1, 0, 0, 1, 0, 0, 1, 0, 0, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := linearWith(t, newDev(t), w, false)
			p, err := prune.LnStructured(l, "weight", tc.amount, tc.n, tc.dim)
			require.NoError(t, err)
			assert.Equal(t, tc.want, p.Mask("weight").Float64s())
		})
	}
}

func TestRandomUnstructuredIsSeededAndExact(t *testing.T) {
	run := func(seed uint64) []float64 {
		l := nn.NewLinear(10, 10, false, tensor.On(newDev(t)))
		p, err := prune.RandomUnstructured(l, "weight", prune.Fraction(0.3), tensor.NewGenerator(seed))
		require.NoError(t, err)
		return p.Mask("weight").Float64s()
	}
	a, b, c := run(1), run(1), run(2)
	assert.Equal(t, a, b)
	assert.NotEqual(t, a, c)
	zeros := 0
	for _, v := range a {
		if v == 0 {
			zeros++
		}
	}
	assert.Equal(t, 30, zeros)
}

// Pruning twice applies the second amount to what the first left, as
// PyTorch's PruningContainer.
func TestIterativePruningCombinesMasks(t *testing.T) {
	dev := newDev(t)
	l := linearWith(t, dev, [][]float64{{1, 2, 3, 4}, {5, 6, 7, 8}}, false)
	p, err := prune.L1Unstructured(l, "weight", prune.Fraction(0.5))
	require.NoError(t, err)
	assert.Equal(t, []float64{0, 0, 0, 0, 1, 1, 1, 1}, p.Mask("weight").Float64s())
	mem := dev.MemoryAllocated()
	p2, err := prune.L1Unstructured(p, "weight", prune.Fraction(0.5)) // half of the 4 left
	require.NoError(t, err)
	assert.Same(t, p, p2)
	assert.Equal(t, []float64{0, 0, 0, 0, 0, 0, 1, 1}, p.Mask("weight").Float64s())
	assert.Equal(t, mem, dev.MemoryAllocated(), "the new mask replaces the old one")
	_, err = prune.L1Unstructured(p, "weight", prune.Count(3))
	assert.ErrorContains(t, err, "larger than the 2")

	// Structured after unstructured: columns 0 and 1 hold only zeros and
	// are out of the ranking; of columns 2 and 3, the L2-smaller goes.
	p3, err := prune.LnStructured(p, "weight", prune.Count(1), 2, 1)
	require.NoError(t, err)
	assert.Equal(t, []float64{0, 0, 0, 0, 0, 0, 0, 1}, p3.Mask("weight").Float64s())
}

func TestGlobalUnstructuredRanksAcrossLayers(t *testing.T) {
	dev := newDev(t)
	small := linearWith(t, dev, [][]float64{{0.1, -0.2}, {0.3, 0.4}}, true)
	large := linearWith(t, dev, [][]float64{{1, -2}, {0.25, 4}}, false)
	ps, err := prune.GlobalUnstructured([]prune.Param{{Module: small, Name: "weight"}, {Module: large, Name: "weight"}}, prune.Count(3))
	require.NoError(t, err)
	require.Len(t, ps, 2)
	assert.Equal(t, []float64{0, 0, 1, 1}, ps[0].Mask("weight").Float64s())
	assert.Equal(t, []float64{1, 1, 0, 1}, ps[1].Mask("weight").Float64s())

	// Again, on the pruned modules: 0.3 and 0.4 are the smallest left.
	ps2, err := prune.GlobalUnstructured([]prune.Param{{Module: ps[0], Name: "weight"}, {Module: ps[1], Name: "weight"}}, prune.Count(2))
	require.NoError(t, err)
	assert.Same(t, ps[0], ps2[0])
	assert.Equal(t, []float64{0, 0, 0, 0}, ps[0].Mask("weight").Float64s())
	assert.Equal(t, []float64{1, 1, 0, 1}, ps[1].Mask("weight").Float64s())

	// Two parameters of one layer share its wrapper.
	l := linearWith(t, dev, [][]float64{{1, 2}}, true)
	ps3, err := prune.GlobalUnstructured([]prune.Param{{Module: l, Name: "weight"}, {Module: l, Name: "bias"}}, prune.Count(1))
	require.NoError(t, err)
	assert.Same(t, ps3[0], ps3[1])
	assert.Equal(t, []string{"weight_orig", "bias_orig"}, names(nn.NamedParameters(ps3[0])))
	_, err = prune.GlobalUnstructured([]prune.Param{{Module: l, Name: "weight"}, {Module: l, Name: "weight"}}, prune.Count(1))
	assert.Error(t, err)
}

func hostTensor(vals []float64, shape ...int) *tensor.Tensor {
	return tensor.FromSlice(vals, shape, tensor.OnHost(false), tensor.Float64)
}

// Importance scores rank the entries instead of the weights; the masks
// are worked out by hand from the scores, with ties broken by position.
func TestImportanceScores(t *testing.T) {
	scores := func(vals ...float64) prune.Option { return prune.ImportanceScores(hostTensor(vals, 2, 3)) }
	for _, tc := range []struct {
		name  string
		prune func(m nn.Module) (*prune.Pruned, error)
		want  []float64
	}{
		// By weight, Count(2) would give 0 1 0 1 1 1.
		{"L1 by descending scores", func(m nn.Module) (*prune.Pruned, error) {
			return prune.L1Unstructured(m, "weight", prune.Count(2), scores(6, 5, 4, 3, 2, 1))
		}, []float64{1, 1, 1, 1, 0, 0}},
		// |scores| = 1 1 1 / 0 1 1: the 0, then the first of the tied 1s.
		{"L1 ties and signs", func(m nn.Module) (*prune.Pruned, error) {
			return prune.L1Unstructured(m, "weight", prune.Count(2), scores(1, -1, 1, 0, 1, -1))
		}, []float64{0, 1, 1, 0, 1, 1}},
		{"L1 fraction", func(m nn.Module) (*prune.Pruned, error) {
			return prune.L1Unstructured(m, "weight", prune.Fraction(0.5), scores(-9, 0.5, 8, 0.25, 7, -0.75))
		}, []float64{1, 0, 1, 0, 1, 0}},
		// Row norms of the scores: 9 and 1 (by weight row 0 would go).
		{"Ln rows", func(m nn.Module) (*prune.Pruned, error) {
			return prune.LnStructured(m, "weight", prune.Count(1), 2, 0, scores(9, 0, 0, 1, 0, 0))
		}, []float64{1, 1, 1, 0, 0, 0}},
		// L1 column norms 2, 5, 2: keep the largest, then the lower of the tie.
		{"Ln columns with a tie", func(m nn.Module) (*prune.Pruned, error) {
			return prune.LnStructured(m, "weight", prune.Count(1), 1, 1, scores(1, 4, -1, 1, 1, 1))
		}, []float64{1, 1, 0, 1, 1, 0}},
		// Already pruned entries stay pruned whatever their score: of the
		// four left (positions 1, 3, 4, 5, scores 1 2 3 4), position 1 goes.
		{"scores after a first pruning", func(m nn.Module) (*prune.Pruned, error) {
			p, err := prune.L1Unstructured(m, "weight", prune.Count(2))
			if err != nil {
				return nil, err
			}
			return prune.L1Unstructured(p, "weight", prune.Count(1), scores(100, 1, 100, 2, 3, 4))
		}, []float64{0, 0, 0, 1, 1, 1}},
		{"no scores option is by weight", func(m nn.Module) (*prune.Pruned, error) {
			return prune.L1Unstructured(m, "weight", prune.Count(2))
		}, []float64{0, 1, 0, 1, 1, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := linearWith(t, newDev(t), tieWeights, false)
			p, err := tc.prune(l)
			require.NoError(t, err)
			assert.Equal(t, tc.want, p.Mask("weight").Float64s())
		})
	}
}

func TestGlobalImportanceScores(t *testing.T) {
	dev := newDev(t)
	small := linearWith(t, dev, [][]float64{{0.1, -0.2}, {0.3, 0.4}}, false)
	large := linearWith(t, dev, [][]float64{{1, -2}, {0.25, 4}}, false)
	// Ranked together: small's |weights| .1 .2 .3 .4 and large's scores
	// .05 .5 .15 9. The three smallest: .05, .1, .15.
	ps, err := prune.GlobalUnstructured([]prune.Param{
		{Module: small, Name: "weight"},
		{Module: large, Name: "weight", Scores: hostTensor([]float64{0.05, -0.5, 0.15, 9}, 2, 2)},
	}, prune.Count(3))
	require.NoError(t, err)
	assert.Equal(t, []float64{0, 1, 1, 1}, ps[0].Mask("weight").Float64s())
	assert.Equal(t, []float64{0, 1, 0, 1}, ps[1].Mask("weight").Float64s())
}
