package optim

import (
	"errors"

	"github.com/gpumem/course/gpukit/tensor"
)

// SGDConfig holds SGD's hyperparameters (torch.optim.SGD): lr (1e-3 by
// default in PyTorch 2), momentum, dampening, weight_decay (L2 added to
// the gradient) and Nesterov momentum.
type SGDConfig struct {
	LR, Momentum, Dampening, WeightDecay float64
	Nesterov                             bool
}

// DefaultSGD returns PyTorch's defaults: lr 1e-3, no momentum, no weight
// decay.
func DefaultSGD() SGDConfig { return SGDConfig{LR: 1e-3} }

func (c SGDConfig) validate() error {
	if err := checkLR(c.LR); err != nil {
		return err
	}
	if err := checkFinite("momentum value", c.Momentum); err != nil {
		return err
	}
	if err := checkFinite("dampening value", c.Dampening); err != nil {
		return err
	}
	if err := checkWeightDecay(c.WeightDecay); err != nil {
		return err
	}
	if c.Nesterov && (c.Momentum <= 0 || c.Dampening != 0) {
		return errors.New("Nesterov momentum requires a momentum and zero dampening")
	}
	return nil
}

// SGD is stochastic gradient descent with optional momentum:
//
//	g ← grad + weight_decay·p
//	buf ← g                                   (first step)
//	buf ← momentum·buf + (1 − dampening)·g    (later steps)
//	g ← g + momentum·buf  (Nesterov)  or  g ← buf
//	p ← p − lr·g
//
// With momentum, one buffer the size of each parameter is allocated at the
// parameter's first step.
type SGD struct {
	groupList[SGDConfig]
	buf map[*tensor.Tensor]*tensor.Tensor
}

// NewSGD returns an SGD over params with cfg (start from DefaultSGD()).
func NewSGD(params []*tensor.Tensor, cfg SGDConfig) (*SGD, error) {
	return NewSGDGroups([]Group[SGDConfig]{{Params: params, Config: cfg}})
}

// NewSGDGroups returns an SGD over parameter groups with their own
// hyperparameters.
func NewSGDGroups(groups []Group[SGDConfig]) (*SGD, error) {
	if err := checkGroups(groups, SGDConfig.validate); err != nil {
		return nil, err
	}
	return &SGD{groupList: cloneGroups(groups), buf: map[*tensor.Tensor]*tensor.Tensor{}}, nil
}

// Step updates every parameter with a gradient.
func (o *SGD) Step() { o.step(o.update) }

func (o *SGD) update(p *tensor.Tensor, c SGDConfig) {
	d := withDecay(p.Grad(), p, c.WeightDecay)
	// d changes below: the deferred call releases the last one.
	defer func() { d.Release() }()
	if c.Momentum != 0 {
		buf, ok := o.buf[p]
		if !ok {
			buf = d.Clone()
			o.buf[p] = buf
		} else {
			buf.MulInPlace(c.Momentum)
			t := d.Mul(1 - c.Dampening)
			buf.AddInPlace(t)
			t.Release()
		}
		if c.Nesterov {
			t := buf.Mul(c.Momentum)
			t.AddInPlace(d)
			d.Release()
			d = t
		} else {
			d.Release()
			d = buf.Detach()
		}
	}
	step := d.Mul(c.LR)
	p.SubInPlace(step)
	step.Release()
}

// LR is group g's learning rate.
func (o *SGD) LR(g int) float64 { return o.config(g).LR }

// SetLR changes group g's learning rate; a negative, NaN or infinite lr
// panics with an *Error.
func (o *SGD) SetLR(g int, lr float64) {
	c := o.config(g)
	c.LR = validLR(lr)
}

// StateBytes is the memory of the momentum buffers.
func (o *SGD) StateBytes() int64 { return stateBytes(o.buf) }

// Release frees the momentum buffers.
func (o *SGD) Release() { releaseState(o.buf) }
