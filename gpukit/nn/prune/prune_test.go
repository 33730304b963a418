package prune_test

import (
	"fmt"
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
			dev := simtest.Card(t)
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
			dev := simtest.Card(t)
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
	dev := simtest.Card(t)
	l := linearWith(t, dev, tieWeights, false)
	_, err := prune.L1Unstructured(l, "weight", prune.Count(1))
	require.NoError(t, err)
	_, err = prune.L1Unstructured(l, "weight", prune.Count(1))
	require.ErrorContains(t, err, "prune the *Pruned")
}

// Memory before, during and after pruning, to the byte: pruning triples
// the weight's memory; Remove brings it back to the dense size, no less.
func TestMemoryBeforeDuringAfter(t *testing.T) {
	dev := simtest.Card(t)
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
	dev := simtest.Card(t)
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
			l := linearWith(t, simtest.Card(t), w, false)
			p, err := prune.LnStructured(l, "weight", tc.amount, tc.n, tc.dim)
			require.NoError(t, err)
			assert.Equal(t, tc.want, p.Mask("weight").Float64s())
		})
	}
}

func TestRandomUnstructuredIsSeededAndExact(t *testing.T) {
	run := func(seed uint64) []float64 {
		l := nn.NewLinear(10, 10, false, tensor.On(simtest.Card(t)))
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
	dev := simtest.Card(t)
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
	dev := simtest.Card(t)
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
			l := linearWith(t, simtest.Card(t), tieWeights, false)
			p, err := tc.prune(l)
			require.NoError(t, err)
			assert.Equal(t, tc.want, p.Mask("weight").Float64s())
		})
	}
}

func TestGlobalImportanceScores(t *testing.T) {
	dev := simtest.Card(t)
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

// Structured pruning, made permanent and then shrunk, gives the pruned
// model's outputs with smaller layers.
func TestShrinkAfterStructuredPruning(t *testing.T) {
	dev := simtest.Card(t)
	ws := simtest.WarmBlas(t, dev) // the first product's cuBLAS workspace, held for good
	opts := []tensor.Option{tensor.On(dev), tensor.WithGenerator(tensor.NewGenerator(3))}
	fc1, fc2 := nn.NewLinear(16, 12, false, opts...), nn.NewLinear(12, 4, true, opts...)
	model := nn.NewSequential(fc1, &nn.ReLU{}, fc2)
	x := tensor.Randn([]int{5, 16}, opts...)

	p, err := prune.LnStructured(fc1, "weight", prune.Count(9), 2, 0)
	require.NoError(t, err)
	model.Layers[0] = p
	var want *tensor.Tensor
	tensor.NoGrad(func() { want = model.Forward(x) })
	model.Layers[0], err = prune.Remove(p, "weight")
	require.NoError(t, err)
	const dense = (16*12 + 12*4 + 4) * 4
	assert.EqualValues(t, dense, nn.Nbytes(model))

	keep, err := prune.KeptSlices(fc1.Weight, 0)
	require.NoError(t, err)
	assert.Len(t, keep, 3)
	small1, err := prune.ShrinkOutputs(fc1, keep)
	require.NoError(t, err)
	small2, err := prune.ShrinkInputs(fc2, keep)
	require.NoError(t, err)
	nn.Release(model)
	small := nn.NewSequential(small1, &nn.ReLU{}, small2)
	assert.EqualValues(t, (16*3+3*4+4)*4, nn.Nbytes(small))
	// five tensors are left (two weights, a bias, x, want), each under the
	// allocator's 512-byte rounding
	// and the cuBLAS workspace the first product took
	assert.EqualValues(t, ws+5*512, dev.MemoryAllocated(), "only the small model, x and want")
	got := small.Forward(x)
	assert.InDeltaSlice(t, want.Float64s(), got.Float64s(), 1e-6)
	assert.Equal(t, []int{5, 4}, got.Shape())

	_, err = prune.ShrinkOutputs(small1, []int{0, 3})
	assert.ErrorContains(t, err, "out of range")
	_, err = prune.ShrinkOutputs(small1, nil)
	assert.ErrorContains(t, err, "nothing to keep")
	_, err = prune.ShrinkInputs(small2, []int{1, 1})
	assert.ErrorContains(t, err, "twice")
}

func TestCSRLayoutAndBytes(t *testing.T) {
	dev := simtest.Card(t)
	w := tensor.FromSlice([]float32{0, 2, 0, 0, 0, 0, 3, 4, 0}, []int{3, 3}, tensor.On(dev))
	for _, tc := range []struct {
		index tensor.Dtype
		bytes int64
	}{
		{tensor.Int64, 3*4 + 3*8 + 4*8},
		{tensor.Int32, 3*4 + 3*4 + 4*4},
	} {
		t.Run(tc.index.String(), func(t *testing.T) {
			before := dev.MemoryAllocated()
			c, err := prune.ToCSR(w, tc.index)
			require.NoError(t, err)
			assert.Equal(t, []float64{2, 3, 4}, c.Values.Float64s())
			assert.Equal(t, []float64{1, 0, 1}, c.ColIndices.Float64s())
			assert.Equal(t, []float64{0, 1, 1, 3}, c.RowOffsets.Float64s())
			assert.Equal(t, tc.index, c.RowOffsets.Dtype())
			assert.Equal(t, tensor.Float32, c.Values.Dtype())
			assert.Equal(t, tc.bytes, c.Nbytes())
			assert.Greater(t, dev.MemoryAllocated(), before, "three blocks, each rounded up by the allocator")
			assert.InDelta(t, 1.0/3, c.Density(), 1e-12)
			c.Release()
			assert.Equal(t, before, dev.MemoryAllocated())
		})
	}
	_, err := prune.ToCSR(tensor.Zeros([]int{4}, tensor.On(dev)), tensor.Int64)
	assert.ErrorContains(t, err, "2-d")
	_, err = prune.ToCSR(w, tensor.Float32)
	assert.ErrorContains(t, err, "Int64 or Int32")
}

func TestCSRLinearForwardEqualsDense(t *testing.T) {
	dev := simtest.Card(t)
	for _, density := range []float64{0, 0.1, 0.5, 1} {
		t.Run(fmt.Sprint(density), func(t *testing.T) {
			g := tensor.NewGenerator(7)
			w := tensor.Randn([]int{20, 30}, tensor.On(dev), tensor.WithGenerator(g))
			keep := tensor.Rand([]int{20, 30}, tensor.On(dev), tensor.WithGenerator(g)).Lt(density).ToDtype(tensor.Float32)
			sparse := w.Mul(keep)
			x := tensor.Randn([]int{6, 30}, tensor.On(dev), tensor.WithGenerator(g))
			c, err := prune.ToCSR(sparse, tensor.Int64)
			require.NoError(t, err)
			wt := sparse.T()
			want := x.Matmul(wt)
			// The mask's temporaries wait for the collector: collect them
			// now, or one of their cleanups may land inside the call.
			tensor.CollectGarbage()
			before := dev.MemoryAllocated()
			got := c.LinearForward(x)
			assert.Equal(t, []int{6, 20}, got.Shape())
			assert.InDeltaSlice(t, want.Float64s(), got.Float64s(), 1e-4)
			got.Release()
			assert.Equal(t, before, dev.MemoryAllocated(), "only the result was left allocated")
		})
	}
}

// Gradients through the CSR form are the dense layer's: for x, and for
// the kept weights.
func TestCSRLinearForwardGradients(t *testing.T) {
	dev := simtest.Card(t)
	g := tensor.NewGenerator(9)
	w := tensor.Randn([]int{5, 7}, tensor.On(dev), tensor.Float64, tensor.WithGenerator(g))
	keep := tensor.Rand([]int{5, 7}, tensor.On(dev), tensor.Float64, tensor.WithGenerator(g)).Lt(0.4).ToDtype(tensor.Float64)
	sparse := w.Mul(keep)
	c, err := prune.ToCSR(sparse, tensor.Int32)
	require.NoError(t, err)
	c.Values.SetRequiresGrad(true)
	sparse.SetRequiresGrad(true)
	xv := tensor.Randn([]int{3, 7}, tensor.On(dev), tensor.Float64, tensor.WithGenerator(g)).Float64s()
	x1 := tensor.FromSlice(xv, []int{3, 7}, tensor.On(dev), tensor.Float64, tensor.RequiresGrad())
	x2 := tensor.FromSlice(xv, []int{3, 7}, tensor.On(dev), tensor.Float64, tensor.RequiresGrad())
	y1 := c.LinearForward(x1)
	sq1 := y1.Mul(y1)
	sq1.Sum().Backward()
	st := sparse.T()
	y2 := x2.Matmul(st)
	sq2 := y2.Mul(y2)
	sq2.Sum().Backward()
	assert.InDeltaSlice(t, x2.Grad().Float64s(), x1.Grad().Float64s(), 1e-12)
	var want []float64
	for i, v := range sparse.Float64s() {
		if v != 0 {
			want = append(want, sparse.Grad().Float64s()[i])
		}
	}
	assert.InDeltaSlice(t, want, c.Values.Grad().Float64s(), 1e-12)
}

// The break-even of CSR against dense float32, in bytes and in time, for
// a Linear(1024, 1024) weight and a batch of 64 inputs. It reports the
// weight's device bytes (bytes/weight), the modelled time of the device's
// clock (model-µs/op) and the CPU's wall time (ns/op).
//
//	go test -run - -bench CSR -benchtime 3x ./gpukit/nn/prune
func BenchmarkCSRVsDense(b *testing.B) {
	for _, density := range []float64{0.1, 0.3, 0.5, 1} {
		for _, form := range []string{"dense", "csr-int64", "csr-int32"} {
			if density == 1 && form != "dense" {
				continue
			}
			b.Run(fmt.Sprintf("density=%v/%s", density, form), func(b *testing.B) {
				dev := device.MustOpen("sim:3")
				g := tensor.NewGenerator(1)
				var fwd func(*tensor.Tensor) *tensor.Tensor
				var bytes int64
				tensor.NoGrad(func() {
					w := tensor.Randn([]int{1024, 1024}, tensor.On(dev), tensor.WithGenerator(g))
					draws := tensor.Rand([]int{1024, 1024}, tensor.On(dev), tensor.WithGenerator(g))
					kept := draws.Lt(density)
					keep := kept.ToDtype(tensor.Float32)
					draws.Release()
					kept.Release()
					pruned := w.Mul(keep)
					w.Release()
					keep.Release()
					switch form {
					case "dense":
						wt := pruned.T()
						bytes = pruned.Nbytes()
						fwd = func(x *tensor.Tensor) *tensor.Tensor { return x.Matmul(wt) }
					default:
						index := tensor.Int64
						if form == "csr-int32" {
							index = tensor.Int32
						}
						c, err := prune.ToCSR(pruned, index)
						require.NoError(b, err)
						pruned.Release()
						bytes = c.Nbytes()
						fwd = c.LinearForward
					}
				})
				x := tensor.Randn([]int{16, 1024}, tensor.On(dev), tensor.WithGenerator(g))
				dev.Synchronize()
				start := dev.Now()
				b.ResetTimer()
				for range b.N {
					tensor.NoGrad(func() { fwd(x).Release() })
				}
				dev.Synchronize()
				b.ReportMetric(float64((dev.Now()-start).Microseconds())/float64(b.N), "model-µs/op")
				b.ReportMetric(float64(bytes), "bytes/weight")
			})
		}
	}
}
