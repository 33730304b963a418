package optim

import (
	"errors"
	"fmt"
	"math"

	"github.com/gpumem/course/gpukit/internal/isnil"
)

// Scheduler changes the learning rates of an optimizer's groups once per
// epoch (or step): call Step after the optimizer's Step.
type Scheduler struct {
	opt   Optimizer
	base  []float64
	epoch int
	lr    func(base float64, epoch int) float64
}

// NewStepLR multiplies each group's initial learning rate by gamma every
// stepSize epochs: lr = base·gamma^⌊epoch/stepSize⌋ (torch.optim.lr_scheduler.StepLR).
func NewStepLR(opt Optimizer, stepSize int, gamma float64) (*Scheduler, error) {
	if err := checkSchedule(opt, "StepLR", "step_size", stepSize); err != nil {
		return nil, err
	}
	// PyTorch's StepLR (torch/optim/lr_scheduler.py) checks nothing; a
	// NaN gamma makes every rate NaN, a negative one flips its sign.
	if err := checkFinite("gamma", gamma); err != nil {
		return nil, fmt.Errorf("optim: StepLR: %w", err)
	}
	return newScheduler(opt, func(base float64, epoch int) float64 {
		return base * math.Pow(gamma, float64(epoch/stepSize))
	}), nil
}

// NewCosineLR anneals each group's learning rate from its initial value
// to etaMin over tMax epochs: lr = etaMin + (base − etaMin)·(1 + cos(π·epoch/tMax))/2
// (CosineAnnealingLR's closed form).
func NewCosineLR(opt Optimizer, tMax int, etaMin float64) (*Scheduler, error) {
	if err := checkSchedule(opt, "CosineAnnealingLR", "T_max", tMax); err != nil {
		return nil, err
	}
	if err := checkFinite("eta_min", etaMin); err != nil {
		return nil, fmt.Errorf("optim: CosineAnnealingLR: %w", err)
	}
	return newScheduler(opt, func(base float64, epoch int) float64 {
		return etaMin + (base-etaMin)*(1+math.Cos(math.Pi*float64(epoch)/float64(tMax)))/2
	}), nil
}

// errNilOptimizer is the refusal of a schedule without an optimizer.
var errNilOptimizer = errors.New("optim: a learning-rate schedule needs an optimizer, got nil")

// checkSchedule refuses a nil optimizer and a period (PyTorch's argument
// name of schedule sched) that is not positive.
func checkSchedule(opt Optimizer, sched, name string, period int) error {
	if isnil.Nil(opt) {
		return errNilOptimizer
	}
	if period <= 0 {
		return fmt.Errorf("optim: %s: %s must be positive, got %d", sched, name, period)
	}
	return nil
}

func newScheduler(opt Optimizer, lr func(float64, int) float64) *Scheduler {
	s := &Scheduler{opt: opt, lr: lr}
	for g := range opt.Groups() {
		s.base = append(s.base, opt.LR(g))
	}
	return s
}

// Step advances one epoch and sets every group's learning rate.
func (s *Scheduler) Step() {
	s.epoch++
	for g, b := range s.base {
		s.opt.SetLR(g, s.lr(b, s.epoch))
	}
}

// LastLR returns the learning rate of each group after the last Step
// (get_last_lr()).
func (s *Scheduler) LastLR() []float64 {
	out := make([]float64, len(s.base))
	for g := range out {
		out[g] = s.opt.LR(g)
	}
	return out
}
