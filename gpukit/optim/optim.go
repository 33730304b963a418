package optim

import (
	"errors"
	"fmt"
	"math"

	"github.com/gpumem/course/gpukit/tensor"
)

// Optimizer updates parameters from their gradients. Step, ZeroGrad and
// the learning rates of the parameter groups (which schedules change) are
// common to SGD, Adam and AdamW.
type Optimizer interface {
	// Step applies one update to every parameter that has a gradient
	// (parameters without one are skipped, as in PyTorch). State tensors
	// are allocated on a parameter's first step.
	Step()
	// ZeroGrad releases every gradient (setToNone, PyTorch 2's default) or
	// fills them with zeros in place.
	ZeroGrad(setToNone bool)
	// Groups is the number of parameter groups; LR and SetLR read and
	// change a group's learning rate.
	Groups() int
	LR(group int) float64
	SetLR(group int, lr float64)
	// Params returns the parameters of every group, in order (the index
	// a parameter has in a state dict).
	Params() []*tensor.Tensor
	// StateBytes is the device memory the optimizer's state holds.
	StateBytes() int64
}

// Group is a list of parameters with their own hyperparameters
// (PyTorch's param_groups): C is SGDConfig or AdamConfig.
type Group[C any] struct {
	Params []*tensor.Tensor
	Config C
}

// ErrEmptyParams is PyTorch's refusal of an optimizer without parameters.
var ErrEmptyParams = errors.New("optim: optimizer got an empty parameter list")

// checkGroups refuses an empty parameter list, a parameter that is not a
// float leaf requiring grad, and a parameter listed twice (in one group
// or in two), with PyTorch's wording.
func checkGroups[C any](groups []Group[C], validate func(C) error) error {
	n := 0
	seen := map[*tensor.Tensor]bool{}
	for gi, g := range groups {
		if err := validate(g.Config); err != nil {
			return fmt.Errorf("optim: parameter group %d: %w", gi, err)
		}
		for i, p := range g.Params {
			switch {
			case p == nil:
				return fmt.Errorf("optim: parameter group %d: parameter %d is nil", gi, i)
			case p.Released():
				return fmt.Errorf("optim: parameter group %d: parameter %d was released", gi, i)
			case !p.IsLeaf():
				return fmt.Errorf("optim: parameter group %d: parameter %d: can't optimize a non-leaf Tensor", gi, i)
			case !p.Dtype().IsFloat():
				return fmt.Errorf("optim: parameter group %d: parameter %d has dtype %s; optimizers update floating-point tensors", gi, i, p.Dtype())
			case seen[p]:
				return fmt.Errorf("optim: some parameters appear in more than one parameter group (parameter %d of group %d)", i, gi)
			}
			seen[p] = true
			n++
		}
	}
	if n == 0 {
		return ErrEmptyParams
	}
	return nil
}

// Error is the panic value of misuse in a method that has no error
// result (SetLR with a NaN rate, a group index out of range); its message
// starts with "optim: ". Constructors and LoadFile return errors instead.
type Error struct{ msg string }

func (e *Error) Error() string { return "optim: " + e.msg }

func panicf(format string, args ...any) { panic(&Error{fmt.Sprintf(format, args...)}) }

// Hyperparameter checks. PyTorch (torch/optim/sgd.py, adam.py) refuses
// only negative values with these messages ("Invalid learning rate: -1");
// a NaN passes its `< 0.0` tests and an infinite one is accepted, and
// either turns the parameters into NaN or stalls training, so gpukit
// refuses them too, with the same wording.

func checkLR(lr float64) error { return checkFinite("learning rate", lr) }

func checkWeightDecay(wd float64) error { return checkFinite("weight_decay value", wd) }

// checkFinite refuses a negative, NaN or infinite hyperparameter.
func checkFinite(what string, v float64) error {
	if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return fmt.Errorf("Invalid %s: %v", what, v)
	}
	return nil
}

// groupList is an optimizer's parameter groups, with the methods SGD and
// Adam share over them.
type groupList[C any] []Group[C]

func cloneGroups[C any](groups []Group[C]) groupList[C] {
	out := make(groupList[C], len(groups))
	for i, g := range groups {
		out[i] = Group[C]{Params: append([]*tensor.Tensor{}, g.Params...), Config: g.Config}
	}
	return out
}

// Groups is the number of parameter groups.
func (gs groupList[C]) Groups() int { return len(gs) }

// Params returns the parameters of every group in order.
func (gs groupList[C]) Params() []*tensor.Tensor {
	var ps []*tensor.Tensor
	for _, g := range gs {
		ps = append(ps, g.Params...)
	}
	return ps
}

// ZeroGrad clears the gradients of every parameter.
func (gs groupList[C]) ZeroGrad(setToNone bool) {
	for _, p := range gs.Params() {
		if setToNone {
			p.SetGrad(nil)
		} else {
			p.ZeroGrad()
		}
	}
}

// step calls update, with autograd off, on every parameter that has a
// gradient (parameters without one are skipped), with its group's config.
func (gs groupList[C]) step(update func(p *tensor.Tensor, c C)) {
	tensor.NoGrad(func() {
		for _, g := range gs {
			for _, p := range g.Params {
				if p.Grad() != nil {
					update(p, g.Config)
				}
			}
		}
	})
}

// config is group g's config; a g out of range panics with an *Error.
func (gs groupList[C]) config(g int) *C {
	if g < 0 || g >= len(gs) {
		panicf("parameter group %d out of range [0, %d)", g, len(gs))
	}
	return &gs[g].Config
}

// setConfigs gives group i the config cfgs[i].
func (gs groupList[C]) setConfigs(cfgs []C) {
	for i, c := range cfgs {
		gs[i].Config = c
	}
}

// stateBytes is the memory of an optimizer's per-parameter state.
func stateBytes[S interface{ Nbytes() int64 }](state map[*tensor.Tensor]S) int64 {
	var n int64
	for _, s := range state {
		n += s.Nbytes()
	}
	return n
}

// releaseState frees an optimizer's per-parameter state and empties it.
func releaseState[S interface{ Release() }](state map[*tensor.Tensor]S) {
	for p, s := range state {
		s.Release()
		delete(state, p)
	}
}

// validLR returns lr, or panics with SetLR's *Error if it is not a valid
// learning rate.
func validLR(lr float64) float64 {
	if err := checkLR(lr); err != nil {
		panicf("SetLR: %v", err)
	}
	return lr
}

// withDecay returns grad + wd·p as a new tensor (L2 regularisation as
// SGD and Adam apply it), or a new reference to grad when wd is 0.
func withDecay(grad, p *tensor.Tensor, wd float64) *tensor.Tensor {
	if wd == 0 {
		return grad.Detach()
	}
	d := p.Mul(wd)
	d.AddInPlace(grad)
	return d
}
