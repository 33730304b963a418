package nn

import (
	"math"

	"github.com/gpumem/course/gpukit/tensor"
)

// MultiheadAttention is self-attention with Heads heads over inputs of
// shape [B, T, D] (torch.nn.MultiheadAttention(D, Heads, batch_first=True)
// called as attn(x, x, x)): one packed input projection in_proj_weight
// [3D, D] and in_proj_bias [3D], then softmax(q kᵀ/√d_head) v per head,
// then out_proj. Causal masks each position from those after it.
type MultiheadAttention struct {
	Base
	Dim, Heads   int
	Causal       bool
	InProjWeight *tensor.Tensor
	InProjBias   *tensor.Tensor
	OutProj      *Linear
}

// NewMultiheadAttention returns an attention layer with PyTorch's
// initialisation: in_proj_weight xavier_uniform_, in_proj_bias and
// out_proj.bias zeros, out_proj.weight as a Linear's.
func NewMultiheadAttention(dim, heads int, opts ...tensor.Option) *MultiheadAttention {
	checkSizes("NewMultiheadAttention", dim, heads)
	if dim%heads != 0 {
		panic(errorf("NewMultiheadAttention: embed_dim %d must be divisible by num_heads %d", dim, heads))
	}
	m := &MultiheadAttention{Dim: dim, Heads: heads}
	m.InProjWeight = newParam([]int{3 * dim, dim}, uniform(xavierUniformBound(dim, 3*dim)), opts)
	m.InProjBias = newParam([]int{3 * dim}, constant(0), opts)
	m.OutProj = NewLinear(dim, dim, true, opts...)
	tensor.NoGrad(func() { m.OutProj.Bias.Fill(0) })
	return m
}

// Members lists in_proj_weight, in_proj_bias and the child out_proj.
func (m *MultiheadAttention) Members() Members {
	return Members{
		Params:   []Named{{"in_proj_weight", m.InProjWeight}, {"in_proj_bias", m.InProjBias}},
		Children: []NamedModule{{"out_proj", m.OutProj}},
	}
}

// Forward attends over x of shape [B, T, D] and returns [B, T, D]. What
// autograd keeps per call is visible in the allocator: the projected
// q, k, v, the [B, H, T, T] attention probabilities, and the inputs of
// the two projections.
func (m *MultiheadAttention) Forward(x *tensor.Tensor) *tensor.Tensor {
	checkInput("MultiheadAttention", x)
	if x.Dim() != 3 || x.Size(2) != m.Dim {
		panic(errorf("MultiheadAttention: input of shape %v, expected [B, T, %d]", x.Shape(), m.Dim))
	}
	q, k, v, release := m.ProjectHeads(x)
	defer release()
	return m.Attend(q, k, v, m.Causal)
}

// ProjectHeads is the packed input projection of x [B, T, D], split into
// the query, key and value heads, each [B, H, T, D/H] (views of one
// projected tensor). release releases them and what made them; call it
// once they are no longer needed.
func (m *MultiheadAttention) ProjectHeads(x *tensor.Tensor) (q, k, v *tensor.Tensor, release func()) {
	b, t, h, hd := x.Size(0), x.Size(1), m.Heads, m.Dim/m.Heads
	w := tensor.AutocastParam(m.InProjWeight)
	wt := w.T()
	xw := x.Matmul(wt)
	bias := tensor.AutocastParam(m.InProjBias)
	qkv := xw.Add(bias) // [B, T, 3D]
	split := qkv.View(b, t, 3, h, hd)
	heads := split.Permute(2, 0, 3, 1, 4) // [3, B, H, T, hd]
	q, k, v = heads.Select(0, 0), heads.Select(0, 1), heads.Select(0, 2)
	return q, k, v, func() {
		for _, made := range []*tensor.Tensor{v, k, q, heads, split, qkv, bias, xw, wt, w} {
			made.Release()
		}
	}
}

// Attend is softmax(q kᵀ/√d_head) v for the query heads q [B, H, C, hd]
// against keys and values [B, H, L, hd], with the heads merged and put
// through out_proj: [B, C, D]. With causal, query i, at position L-C+i,
// sees the positions up to its own: the whole sequence when C = L, or a
// chunk of new tokens after L-C cached ones.
func (m *MultiheadAttention) Attend(q, keys, values *tensor.Tensor, causal bool) *tensor.Tensor {
	b, c, hd, total := q.Size(0), q.Size(2), q.Size(3), keys.Size(2)
	kt := keys.Transpose(-1, -2)
	defer kt.Release()
	raw := q.Matmul(kt) // [B, H, C, L]
	defer raw.Release()
	scores := raw.Mul(1 / math.Sqrt(float64(hd)))
	defer scores.Release()
	if causal {
		mask := causalMask(c, total, scores)
		defer mask.Release()
		masked := scores.Add(mask)
		defer masked.Release()
		scores = masked
	}
	probs := scores.Softmax(-1)
	defer probs.Release()
	ctx := probs.Matmul(values) // [B, H, C, hd]
	defer ctx.Release()
	ctxT := ctx.Transpose(1, 2) // [B, C, H, hd]
	defer ctxT.Release()
	merged := ctxT.Reshape(b, c, m.Dim)
	defer merged.Release()
	return m.OutProj.Forward(merged)
}

// causalMask is the [C, L] mask of C queries at the end of L positions:
// 0 where query i (position L-C+i) may look, -inf after its position,
// like like's dtype and device.
func causalMask(c, total int, like *tensor.Tensor) *tensor.Tensor {
	vals := make([]float64, c*total)
	for i := range c {
		for j := total - c + i + 1; j < total; j++ {
			vals[i*total+j] = math.Inf(-1)
		}
	}
	m := tensor.FromSlice(vals, []int{c, total}, tensor.On(like.Device()))
	defer m.Release()
	return m.ToDtype(like.Dtype())
}

// Block is a pre-norm transformer block (GPT-2's):
//
//	x = x + attn(ln_1(x))
//	x = x + mlp(ln_2(x))      mlp = Linear(D, 4D) → GELU → Linear(4D, D)
type Block struct {
	Base
	LN1  *LayerNorm
	Attn *MultiheadAttention
	LN2  *LayerNorm
	MLP  *Sequential
}

// NewBlock returns a Block of width dim with heads attention heads.
func NewBlock(dim, heads int, opts ...tensor.Option) *Block {
	return &Block{
		LN1:  NewLayerNorm(dim, opts...),
		Attn: NewMultiheadAttention(dim, heads, opts...),
		LN2:  NewLayerNorm(dim, opts...),
		MLP:  NewSequential(NewLinear(dim, 4*dim, true, opts...), NewGELU(), NewLinear(4*dim, dim, true, opts...)),
	}
}

// Members lists the children ln_1, attn, ln_2, mlp.
func (bl *Block) Members() Members {
	return Members{Children: []NamedModule{{"ln_1", bl.LN1}, {"attn", bl.Attn}, {"ln_2", bl.LN2}, {"mlp", bl.MLP}}}
}

// Forward runs the block on x of shape [B, T, D].
func (bl *Block) Forward(x *tensor.Tensor) *tensor.Tensor {
	h := residual(x, bl.LN1, bl.Attn)
	defer h.Release()
	return residual(h, bl.LN2, bl.MLP)
}

// residual returns x + f(norm(x)).
func residual(x *tensor.Tensor, norm, f Module) *tensor.Tensor {
	n := norm.Forward(x)
	defer n.Release()
	y := f.Forward(n)
	defer y.Release()
	return x.Add(y)
}
