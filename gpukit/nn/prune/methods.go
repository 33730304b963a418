package prune

import (
	"math"
	"slices"

	"github.com/gpumem/course/gpukit/nn"
	"github.com/gpumem/course/gpukit/tensor"
)

// method computes a mask from scores and a default mask, as a PyTorch
// BasePruningMethod's compute_mask.
type method struct {
	structured bool
	dim        int // structured only, non-negative
	compute    func(scores, def []float64, shape []int) ([]float64, error)
}

// L1Unstructured prunes the amount of entries of m's parameter name with
// the smallest absolute value (prune.l1_unstructured), or of the smallest
// absolute importance score when given ImportanceScores.
func L1Unstructured(m nn.Module, name string, amount Amount, opts ...Option) (*Pruned, error) {
	t, err := resolve(m, name)
	if err != nil {
		return nil, err
	}
	return pruneTarget(t, l1(amount), opts)
}

// Option changes how a parameter is ranked for pruning.
type Option func(*options)

type options struct{ scores *tensor.Tensor }

// ImportanceScores ranks the entries (for LnStructured, the slices) by
// scores instead of by the parameter's values, as PyTorch's
// importance_scores argument: scores must have the parameter's shape, and
// are read once, when the mask is computed. Entries already pruned stay
// pruned whatever their score.
func ImportanceScores(scores *tensor.Tensor) Option {
	return func(o *options) { o.scores = scores }
}

// rankingValues returns what ranks t's entries: the importance scores
// from opts, checked against the parameter's shape, or the original
// values (PyTorch's default importance_scores).
func (t target) rankingValues(opts []Option) ([]float64, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if o.scores == nil {
		return t.param.Float64s(), nil
	}
	return t.checkScores(o.scores)
}

func (t target) checkScores(scores *tensor.Tensor) ([]float64, error) {
	if !slices.Equal(scores.Shape(), t.param.Shape()) {
		return nil, errorf("%s: importance scores of shape %v, but the parameter has shape %v; give one score per entry", t, scores.Shape(), t.param.Shape())
	}
	return scores.Float64s(), nil
}

func l1(amount Amount) method {
	return method{compute: func(scores, def []float64, _ []int) ([]float64, error) {
		k, err := amount.toPrune(len(scores))
		if err != nil {
			return nil, err
		}
		abs := make([]float64, len(scores))
		for i, v := range scores {
			abs[i] = math.Abs(v)
		}
		return unstructuredMask(abs, def, k, false), nil
	}}
}

// RandomUnstructured prunes the amount of entries of m's parameter name
// chosen at random (prune.random_unstructured): each entry draws a
// uniform number from gen (the default generator when nil) and those of
// largest draw are pruned.
func RandomUnstructured(m nn.Module, name string, amount Amount, gen *tensor.Generator) (*Pruned, error) {
	t, err := resolve(m, name)
	if err != nil {
		return nil, err
	}
	return pruneTarget(t, random(amount, gen), nil)
}

func random(amount Amount, gen *tensor.Generator) method {
	return method{compute: func(scores, def []float64, _ []int) ([]float64, error) {
		k, err := amount.toPrune(len(scores))
		if err != nil {
			return nil, err
		}
		opts := []tensor.Option{tensor.OnHost(false), tensor.Float64}
		if gen != nil {
			opts = append(opts, tensor.WithGenerator(gen))
		}
		draws := tensor.Rand([]int{len(scores)}, opts...)
		defer draws.Release()
		return unstructuredMask(draws.Float64s(), def, k, true), nil
	}}
}

// LnStructured prunes the amount of slices along dim of m's parameter
// name with the smallest Ln norm (prune.ln_structured): with dim 0 on a
// Linear's weight [out, in], whole output rows. n may be any positive
// number, 0 (count of non-zeros) or ±Inf; dim may be negative. The
// amount counts slices, not entries.
func LnStructured(m nn.Module, name string, amount Amount, n float64, dim int, opts ...Option) (*Pruned, error) {
	t, err := resolve(m, name)
	if err != nil {
		return nil, err
	}
	shape := t.param.Shape()
	if len(shape) <= 1 {
		return nil, errorf("LnStructured: %s has shape %v; structured pruning needs at least 2 dimensions", t, shape)
	}
	d := dim
	if d < 0 {
		d += len(shape)
	}
	if d < 0 || d >= len(shape) {
		return nil, errorf("LnStructured: dim %d is out of range for %s of shape %v", dim, t, shape)
	}
	if math.IsNaN(n) {
		return nil, errorf("LnStructured: the norm order n is NaN")
	}
	return pruneTarget(t, method{structured: true, dim: d,
		compute: func(scores, def []float64, shape []int) ([]float64, error) {
			k, err := amount.toPrune(shape[d])
			if err != nil {
				return nil, err
			}
			return structuredMask(scores, def, shape, d, n, k), nil
		}}, opts)
}

// pruneTarget computes the new mask on the host (the model is untouched
// if that fails), then installs it.
func pruneTarget(t target, meth method, opts []Option) (*Pruned, error) {
	scores, err := t.rankingValues(opts)
	if err != nil {
		return nil, err
	}
	mask, err := combine(meth, scores, t.param.Shape(), t.currentMask())
	if err != nil {
		return nil, errorf("%s: %s", t, reason(err))
	}
	pr, err := t.prepare(mask)
	if err != nil {
		return nil, err
	}
	return t.install(pr), nil
}

// combine is PyTorch's PruningContainer._combine_masks: the method sees
// only what the current mask leaves (the unpruned entries, flattened, for
// an unstructured method; the slices along its dim that still hold a
// non-zero, for a structured one) and its mask is written back there.
func combine(meth method, scores []float64, shape []int, mask []float64) ([]float64, error) {
	if !meth.structured {
		var keep []int
		for i, v := range mask {
			if v == 1 {
				keep = append(keep, i)
			}
		}
		sub, subDef := gather(scores, keep), gather(mask, keep)
		partial, err := meth.compute(sub, subDef, []int{len(keep)})
		if err != nil {
			return nil, err
		}
		return scatter(mask, keep, partial), nil
	}
	var channels []int
	for j := range shape[meth.dim] {
		for _, p := range slicePositions(shape, meth.dim, j) {
			if mask[p] != 0 {
				channels = append(channels, j)
				break
			}
		}
	}
	// The positions of the kept channels in the order of the sub-tensor
	// (row-major over shape with shape[dim] = len(channels)).
	subShape := slices.Clone(shape)
	subShape[meth.dim] = len(channels)
	pos := make([]int, 0, len(scores))
	outer, inner := 1, 1
	for d := range meth.dim {
		outer *= shape[d]
	}
	for d := meth.dim + 1; d < len(shape); d++ {
		inner *= shape[d]
	}
	for o := range outer {
		for _, j := range channels {
			base := (o*shape[meth.dim] + j) * inner
			for i := range inner {
				pos = append(pos, base+i)
			}
		}
	}
	partial, err := meth.compute(gather(scores, pos), gather(mask, pos), subShape)
	if err != nil {
		return nil, err
	}
	return scatter(mask, pos, partial), nil
}

func gather(vals []float64, pos []int) []float64 {
	out := make([]float64, len(pos))
	for i, p := range pos {
		out[i] = vals[p]
	}
	return out
}

func scatter(base []float64, pos []int, vals []float64) []float64 {
	out := slices.Clone(base)
	for i, p := range pos {
		out[p] = vals[i]
	}
	return out
}

// Param names a parameter of a module for GlobalUnstructured, and
// optionally its importance scores (PyTorch's importance_scores dict,
// keyed by (module, name)): a tensor of the parameter's shape that ranks
// its entries instead of their current values.
type Param struct {
	Module nn.Module
	Name   string
	Scores *tensor.Tensor // nil: rank by the parameter's current values
}

// GlobalUnstructured prunes the amount of entries with the smallest
// absolute value among all the given parameters together
// (prune.global_unstructured with L1Unstructured): a layer whose weights
// are small loses more than one whose weights are large. The scores are
// the parameters' current values (already pruned entries are skipped),
// the amount is of the entries still unpruned across all of them. A
// Param with Scores is ranked by its scores instead (the scores of
// different parameters are compared with one another, so give them one
// scale). It
// returns one *Pruned per entry of params, in order (the same one for two
// parameters of one module); put each where its module stood.
func GlobalUnstructured(params []Param, amount Amount) ([]*Pruned, error) {
	return global(params, l1(amount))
}

// GlobalRandomUnstructured is GlobalUnstructured with RandomUnstructured's
// random choice.
func GlobalRandomUnstructured(params []Param, amount Amount, gen *tensor.Generator) ([]*Pruned, error) {
	return global(params, random(amount, gen))
}

func global(params []Param, meth method) ([]*Pruned, error) {
	if len(params) == 0 {
		return nil, errorf("GlobalUnstructured: no parameters given")
	}
	targets := make([]target, len(params))
	var scores, mask []float64
	seen := map[*tensor.Tensor]bool{}
	for i, p := range params {
		t, err := resolve(p.Module, p.Name)
		if err != nil {
			return nil, err
		}
		if seen[t.param] {
			return nil, errorf("GlobalUnstructured: %s is listed twice", t)
		}
		seen[t.param] = true
		targets[i] = t
		cur := t.currentMask()
		var vals []float64
		if p.Scores != nil {
			if vals, err = t.checkScores(p.Scores); err != nil {
				return nil, err
			}
		} else {
			vals = t.param.Float64s()
			for j := range vals {
				vals[j] *= cur[j] // the current value of the parameter
			}
		}
		scores = append(scores, vals...)
		mask = append(mask, cur...)
	}
	final, err := combine(meth, scores, []int{len(scores)}, mask)
	if err != nil {
		return nil, errorf("GlobalUnstructured: %s", reason(err))
	}
	// Allocate every mask first: if one does not fit, nothing has changed.
	preps := make([]prepared, len(targets))
	off := 0
	for i, t := range targets {
		n := t.param.Numel()
		pr, err := t.prepare(final[off : off+n])
		if err != nil {
			for _, done := range preps[:i] {
				done.release()
			}
			return nil, err
		}
		preps[i] = pr
		off += n
	}
	// Install them; parameters of one module share its wrapper.
	out := make([]*Pruned, len(params))
	wrappers := map[nn.Module]*Pruned{}
	for i, t := range targets {
		if w, ok := wrappers[t.layer]; ok {
			t.pruned = w
		}
		out[i] = t.install(preps[i])
		wrappers[t.layer] = out[i]
	}
	return out, nil
}
