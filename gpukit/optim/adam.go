package optim

import (
	"fmt"
	"math"

	"github.com/gpumem/course/gpukit/tensor"
)

// AdamConfig holds Adam's and AdamW's hyperparameters (torch.optim.Adam,
// AdamW). Start from DefaultAdam or DefaultAdamW. Amsgrad normalises by
// the running maximum of exp_avg_sq, kept in a third state tensor,
// max_exp_avg_sq (amsgrad=True).
type AdamConfig struct {
	LR          float64
	Betas       [2]float64
	Eps         float64
	WeightDecay float64
	Amsgrad     bool
}

// DefaultAdam returns torch.optim.Adam's defaults: lr 1e-3, betas (0.9,
// 0.999), eps 1e-8, weight_decay 0.
func DefaultAdam() AdamConfig { return AdamConfig{LR: 1e-3, Betas: [2]float64{0.9, 0.999}, Eps: 1e-8} }

// DefaultAdamW returns torch.optim.AdamW's defaults: Adam's, with
// weight_decay 0.01.
func DefaultAdamW() AdamConfig {
	c := DefaultAdam()
	c.WeightDecay = 0.01
	return c
}

func (c AdamConfig) validate() error {
	if err := checkLR(c.LR); err != nil {
		return err
	}
	if err := checkFinite("epsilon value", c.Eps); err != nil {
		return err
	}
	for i, b := range c.Betas {
		if b < 0 || b >= 1 || math.IsNaN(b) {
			return fmt.Errorf("Invalid beta parameter at index %d: %v", i, b)
		}
	}
	return checkWeightDecay(c.WeightDecay)
}

// adamState is one parameter's state: PyTorch's step, exp_avg,
// exp_avg_sq and, with amsgrad, max_exp_avg_sq (nil without).
type adamState struct {
	step                          int
	expAvg, expAvgSq, maxExpAvgSq *tensor.Tensor
}

// Release frees the state tensors.
func (s *adamState) Release() {
	s.expAvg.Release()
	s.expAvgSq.Release()
	s.maxExpAvgSq.Release()
}

// Nbytes is the memory of the state tensors.
func (s *adamState) Nbytes() int64 {
	n := s.expAvg.Nbytes() + s.expAvgSq.Nbytes()
	if s.maxExpAvgSq != nil {
		n += s.maxExpAvgSq.Nbytes()
	}
	return n
}

// Adam is torch.optim.Adam (and AdamW when decoupled): per parameter,
// at step t,
//
//	p ← p·(1 − lr·weight_decay)        (AdamW only)
//	g ← grad + weight_decay·p          (Adam only)
//	m ← β1·m + (1 − β1)·g              exp_avg
//	v ← β2·v + (1 − β2)·g²             exp_avg_sq
//	v̂ ← max(v̂, v)                      max_exp_avg_sq (amsgrad only; else v̂ = v)
//	p ← p − lr/(1 − β1ᵗ) · m / (√v̂/√(1 − β2ᵗ) + eps)
//
// exp_avg and exp_avg_sq, each the size of the parameter, are allocated
// at the parameter's first step, which is when a real card's memory grows
// by twice the model's size. The update itself is one fused kernel per
// parameter (tensor.FusedAdam, PyTorch's fused=True) that allocates
// nothing; PyTorch's default foreach implementation would also hold
// temporaries for a whole group at once. Where the step cannot be fused
// (float16 or bfloat16 parameters, non-contiguous ones, a device without
// an Adam kernel, amsgrad) it is composed of elementwise ops, as PyTorch's single-tensor
// implementation is, with two temporaries of one parameter's size at a
// time. Amsgrad adds a third state tensor the size of the parameter.
type Adam struct {
	groupList[AdamConfig]
	decoupled bool
	state     map[*tensor.Tensor]*adamState
}

// NewAdam returns Adam over params with cfg.
func NewAdam(params []*tensor.Tensor, cfg AdamConfig) (*Adam, error) {
	return NewAdamGroups([]Group[AdamConfig]{{Params: params, Config: cfg}})
}

// NewAdamGroups returns Adam over parameter groups.
func NewAdamGroups(groups []Group[AdamConfig]) (*Adam, error) { return newAdam(groups, false) }

// NewAdamW returns AdamW (decoupled weight decay) over params with cfg.
func NewAdamW(params []*tensor.Tensor, cfg AdamConfig) (*Adam, error) {
	return NewAdamWGroups([]Group[AdamConfig]{{Params: params, Config: cfg}})
}

// NewAdamWGroups returns AdamW over parameter groups.
func NewAdamWGroups(groups []Group[AdamConfig]) (*Adam, error) { return newAdam(groups, true) }

func newAdam(groups []Group[AdamConfig], decoupled bool) (*Adam, error) {
	if err := checkGroups(groups, AdamConfig.validate); err != nil {
		return nil, err
	}
	return &Adam{groupList: cloneGroups(groups), decoupled: decoupled, state: map[*tensor.Tensor]*adamState{}}, nil
}

// Step updates every parameter with a gradient.
func (o *Adam) Step() { o.step(o.update) }

func (o *Adam) update(p *tensor.Tensor, c AdamConfig) {
	s, ok := o.state[p]
	if !ok {
		s = &adamState{expAvg: tensor.ZerosLike(p), expAvgSq: tensor.ZerosLike(p)}
		o.state[p] = s
	}
	if c.Amsgrad && s.maxExpAvgSq == nil {
		s.maxExpAvgSq = tensor.ZerosLike(p)
	}
	s.step++
	sc := tensor.AdamScalars{LR: c.LR, Beta1: c.Betas[0], Beta2: c.Betas[1], Eps: c.Eps,
		WeightDecay: c.WeightDecay, Decoupled: o.decoupled, Step: s.step}
	if c.Amsgrad || !tensor.FusedAdam(p, p.Grad(), s.expAvg, s.expAvgSq, sc) {
		o.composedUpdate(p, s, c)
	}
}

// composedUpdate is the step as separate elementwise ops (PyTorch's
// single-tensor implementation), for what FusedAdam cannot fuse: half
// precision, non-contiguous tensors, a device without the kernel. It holds two temporaries of
// the parameter's size at a time (three for a moment with amsgrad).
func (o *Adam) composedUpdate(p *tensor.Tensor, s *adamState, c AdamConfig) {
	b1, b2 := c.Betas[0], c.Betas[1]
	var g *tensor.Tensor
	if o.decoupled {
		p.MulInPlace(1 - c.LR*c.WeightDecay)
		g = p.Grad().Detach()
	} else {
		g = withDecay(p.Grad(), p, c.WeightDecay)
	}
	defer g.Release()

	t := g.Mul(1 - b1)
	s.expAvg.MulInPlace(b1).AddInPlace(t)
	t.Release()
	sq := g.Mul(g)
	s.expAvgSq.MulInPlace(b2).AddInPlace(sq.MulInPlace(1 - b2))
	sq.Release()

	v := s.expAvgSq
	if c.Amsgrad {
		// torch.maximum(max_exp_avg_sqs[i], exp_avg_sq, out=max_exp_avg_sqs[i])
		// in torch/optim/adam.py, _single_tensor_adam
		m := s.maxExpAvgSq.Maximum(s.expAvgSq)
		s.maxExpAvgSq.CopyFrom(m)
		m.Release()
		v = s.maxExpAvgSq
	}
	bc1 := 1 - math.Pow(b1, float64(s.step))
	bc2 := 1 - math.Pow(b2, float64(s.step))
	denom := v.Sqrt()
	denom.DivInPlace(math.Sqrt(bc2)).AddInPlace(c.Eps)
	upd := s.expAvg.Div(denom)
	denom.Release()
	p.SubInPlace(upd.MulInPlace(c.LR / bc1))
	upd.Release()
}

// LR is group g's learning rate.
func (o *Adam) LR(g int) float64 { return o.config(g).LR }

// SetLR changes group g's learning rate; a negative, NaN or infinite lr
// panics with an *Error.
func (o *Adam) SetLR(g int, lr float64) {
	c := o.config(g)
	c.LR = validLR(lr)
}

// Steps is the number of steps p has taken (0 before its first).
func (o *Adam) Steps(p *tensor.Tensor) int {
	if s, ok := o.state[p]; ok {
		return s.step
	}
	return 0
}

// StateBytes is the memory of exp_avg and exp_avg_sq (and max_exp_avg_sq
// with amsgrad) of every parameter.
func (o *Adam) StateBytes() int64 { return stateBytes(o.state) }

// Release frees the optimizer's state.
func (o *Adam) Release() { releaseState(o.state) }
