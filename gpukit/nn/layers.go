package nn

import (
	"math"
	"slices"

	"github.com/gpumem/course/gpukit/tensor"
)

// Linear is y = x Wᵀ + b (torch.nn.Linear), with weight [out, in] and
// bias [out]. Inputs may have any number of leading dimensions.
type Linear struct {
	Base
	In, Out int
	Weight  *tensor.Tensor
	Bias    *tensor.Tensor // nil without bias
}

// NewLinear returns a Linear with PyTorch's initialisation: weight from
// kaiming_uniform_(a=√5), i.e. U(-1/√in, 1/√in), then bias from
// U(-1/√in, 1/√in), drawn in that order from the generator in opts.
func NewLinear(in, out int, bias bool, opts ...tensor.Option) *Linear {
	checkSizes("NewLinear", in, out)
	l := &Linear{In: in, Out: out}
	l.Weight = newParam([]int{out, in}, uniform(kaimingUniformBound(in)), opts)
	if bias {
		l.Bias = newParam([]int{out}, uniform(1/math.Sqrt(float64(in))), opts)
	}
	return l
}

// checkInput panics with an *Error for a nil input, which a layer's shape
// check would otherwise dereference.
func checkInput(op string, x *tensor.Tensor) {
	if x == nil {
		panic(errorf("%s: input is nil", op))
	}
}

func checkSizes(op string, sizes ...int) {
	for _, n := range sizes {
		if n <= 0 {
			panic(errorf("%s: sizes must be positive, got %v", op, sizes))
		}
	}
}

// Members lists weight and bias.
func (l *Linear) Members() Members {
	ms := Members{Params: []Named{{"weight", l.Weight}}}
	if l.Bias != nil {
		ms.Params = append(ms.Params, Named{"bias", l.Bias})
	}
	return ms
}

// Forward returns x Wᵀ + b. Autograd saves x and W (the matmul's inputs).
func (l *Linear) Forward(x *tensor.Tensor) *tensor.Tensor {
	checkInput("Linear", x)
	if x.Dim() == 0 || x.Size(-1) != l.In {
		panic(errorf("Linear: input of shape %v, expected last dimension %d", x.Shape(), l.In))
	}
	// Under autocast the weight and bias are used in the lower precision,
	// as PyTorch's linear is, and their casts cached on the parameters.
	w := tensor.AutocastParam(l.Weight)
	defer w.Release()
	wt := w.T()
	defer wt.Release()
	y := x.Matmul(wt)
	if l.Bias == nil {
		return y
	}
	defer y.Release()
	b := tensor.AutocastParam(l.Bias)
	defer b.Release()
	return y.Add(b)
}

// Embedding maps integer ids to rows of a [num, dim] table
// (torch.nn.Embedding), initialised from N(0, 1).
type Embedding struct {
	Base
	Num, Dim int
	Weight   *tensor.Tensor
}

// NewEmbedding returns an Embedding of num rows of size dim.
func NewEmbedding(num, dim int, opts ...tensor.Option) *Embedding {
	checkSizes("NewEmbedding", num, dim)
	return &Embedding{Num: num, Dim: dim, Weight: newParam([]int{num, dim}, normal, opts)}
}

// Members lists weight.
func (e *Embedding) Members() Members { return Members{Params: []Named{{"weight", e.Weight}}} }

// Forward looks up ids (an Int64 or Int32 tensor of any shape) and returns
// a tensor of shape ids.shape + [dim]. Backward saves the ids only.
func (e *Embedding) Forward(ids *tensor.Tensor) *tensor.Tensor {
	flat := ids.Reshape(-1)
	defer flat.Release()
	rows := e.Weight.IndexSelect(0, flat)
	defer rows.Release()
	return rows.View(append(ids.Shape(), e.Dim)...)
}

// LayerNorm normalises over the last dimension and applies a learned
// scale and shift (torch.nn.LayerNorm(dim), eps 1e-5, weight ones, bias
// zeros). It is one op (tensor.LayerNorm, PyTorch's native_layer_norm):
// autograd saves the input and a mean and 1/σ per row, as PyTorch does.
type LayerNorm struct {
	Base
	NormalizedShape []int // the trailing dimensions normalised over
	Eps             float64
	Weight, Bias    *tensor.Tensor // of NormalizedShape; nil without affine
}

// NewLayerNorm returns a LayerNorm over a last dimension of size dim,
// with weight and bias.
func NewLayerNorm(dim int, opts ...tensor.Option) *LayerNorm {
	return NewLayerNormShape([]int{dim}, true, opts...)
}

// NewLayerNormShape returns a LayerNorm over the trailing dimensions
// shape (torch.nn.LayerNorm(normalized_shape, elementwise_affine=affine)):
// with affine, a weight of ones and a bias of zeros of that shape;
// without, no parameters at all.
func NewLayerNormShape(shape []int, affine bool, opts ...tensor.Option) *LayerNorm {
	if len(shape) == 0 {
		panic(errorf("NewLayerNormShape: the normalized shape is empty; give at least one dimension"))
	}
	checkSizes("NewLayerNormShape", shape...)
	n := &LayerNorm{NormalizedShape: slices.Clone(shape), Eps: 1e-5}
	if affine {
		n.Weight = newParam(n.NormalizedShape, constant(1), opts)
		n.Bias = newParam(n.NormalizedShape, constant(0), opts)
	}
	return n
}

// Members lists weight and bias, when the layer has them.
func (n *LayerNorm) Members() Members {
	var ps []Named
	if n.Weight != nil {
		ps = append(ps, Named{"weight", n.Weight})
	}
	if n.Bias != nil {
		ps = append(ps, Named{"bias", n.Bias})
	}
	return Members{Params: ps}
}

// Forward returns (x - mean) / √(var + eps) · weight + bias over the
// trailing NormalizedShape dimensions (biased variance, as PyTorch).
func (n *LayerNorm) Forward(x *tensor.Tensor) *tensor.Tensor {
	checkInput("LayerNorm", x)
	k := len(n.NormalizedShape)
	if x.Dim() < k || !slices.Equal(x.Shape()[x.Dim()-k:], n.NormalizedShape) {
		panic(errorf("LayerNorm: input of shape %v, expected to end in %v", x.Shape(), n.NormalizedShape))
	}
	return tensor.LayerNorm(x, n.NormalizedShape, n.Weight, n.Bias, n.Eps)
}

// BatchNorm1d normalises each feature of [N, C] inputs over the batch, or
// each channel of [N, C, L] inputs over the batch and the length
// (torch.nn.BatchNorm1d(C): eps 1e-5, momentum 0.1, affine, running
// statistics). It is one op (tensor.BatchNorm, PyTorch's
// native_batch_norm). In training it uses the batch's mean and biased
// variance, saves the input, references to its weight and running
// statistics (no new memory) and a mean and 1/σ per feature, and updates
// the buffers running_mean (zeros at start), running_var (ones; updated
// with the unbiased variance) and num_batches_tracked (Int64); in eval it
// uses the running statistics.
type BatchNorm1d struct {
	Base
	Features                            int
	Eps, Momentum                       float64
	Weight, Bias                        *tensor.Tensor
	RunningMean, RunningVar, NumTracked *tensor.Tensor
}

// NewBatchNorm1d returns a BatchNorm1d over features channels.
func NewBatchNorm1d(features int, opts ...tensor.Option) *BatchNorm1d {
	checkSizes("NewBatchNorm1d", features)
	shape := []int{features}
	idOpts := append(append([]tensor.Option{}, opts...), tensor.Int64)
	return &BatchNorm1d{Features: features, Eps: 1e-5, Momentum: 0.1,
		Weight:      newParam(shape, constant(1), opts),
		Bias:        newParam(shape, constant(0), opts),
		RunningMean: tensor.Zeros(shape, opts...),
		RunningVar:  tensor.Ones(shape, opts...),
		NumTracked:  tensor.Zeros(nil, idOpts...),
	}
}

// Members lists weight and bias, and the buffers running_mean,
// running_var and num_batches_tracked.
func (b *BatchNorm1d) Members() Members {
	return Members{
		Params:  []Named{{"weight", b.Weight}, {"bias", b.Bias}},
		Buffers: []Named{{"running_mean", b.RunningMean}, {"running_var", b.RunningVar}, {"num_batches_tracked", b.NumTracked}},
	}
}

// Forward normalises x of shape [N, C] or [N, C, L].
func (b *BatchNorm1d) Forward(x *tensor.Tensor) *tensor.Tensor {
	checkInput("BatchNorm1d", x)
	if (x.Dim() != 2 && x.Dim() != 3) || x.Size(1) != b.Features {
		panic(errorf("BatchNorm1d: input of shape %v, expected [N, %d] or [N, %d, L]", x.Shape(), b.Features, b.Features))
	}
	if !b.Training() {
		return tensor.BatchNorm(x, b.Weight, b.Bias, b.RunningMean, b.RunningVar, false, b.Momentum, b.Eps)
	}
	if x.Numel()/b.Features < 2 {
		panic(errorf("BatchNorm1d: expected more than 1 value per channel when training, got input of shape %v", x.Shape()))
	}
	y := tensor.BatchNorm(x, b.Weight, b.Bias, b.RunningMean, b.RunningVar, true, b.Momentum, b.Eps)
	tensor.NoGrad(func() { b.NumTracked.AddInPlace(1) })
	return y
}

// Dropout zeroes elements with probability P in training
// (torch.nn.Dropout, P 0.5 by default) and scales the rest by 1/(1-P); in
// eval it returns its input (a new reference, no allocation). Gen is the
// generator of the masks (the default one when nil).
type Dropout struct {
	Base
	P   float64
	Gen *tensor.Generator
}

// NewDropout returns a Dropout with probability p.
func NewDropout(p float64) *Dropout {
	if p < 0 || p > 1 || math.IsNaN(p) {
		panic(errorf("NewDropout: dropout probability has to be between 0 and 1, but got %v", p))
	}
	return &Dropout{P: p}
}

// Members is empty: Dropout owns no tensors.
func (d *Dropout) Members() Members { return Members{} }

// Forward applies the mask in training mode.
func (d *Dropout) Forward(x *tensor.Tensor) *tensor.Tensor {
	return x.Dropout(d.P, d.Training(), d.Gen)
}

// ReLU is max(x, 0) (torch.nn.ReLU).
type ReLU struct{ Base }

// NewReLU returns a ReLU.
func NewReLU() *ReLU { return &ReLU{} }

// Members is empty.
func (*ReLU) Members() Members { return Members{} }

// Forward returns max(x, 0).
func (*ReLU) Forward(x *tensor.Tensor) *tensor.Tensor { return x.Relu() }

// GELU is x·Φ(x), the exact erf form (torch.nn.GELU()), or with
// Approximate "tanh" PyTorch's tanh approximation
// (torch.nn.GELU(approximate="tanh"), tensor.GeluTanh).
type GELU struct {
	Base
	Approximate string // "none" (or "") or "tanh"
}

// NewGELU returns a GELU.
func NewGELU() *GELU { return &GELU{} }

// Members is empty.
func (*GELU) Members() Members { return Members{} }

// Forward returns x·Φ(x), or its tanh approximation.
func (g *GELU) Forward(x *tensor.Tensor) *tensor.Tensor {
	switch g.Approximate {
	case "", "none":
		return x.Gelu()
	case "tanh":
		return x.GeluTanh()
	}
	panic(errorf("GELU: approximate %q; use \"none\" or \"tanh\"", g.Approximate))
}
