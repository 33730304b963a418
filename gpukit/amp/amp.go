package amp

import (
	"errors"
	"fmt"
	"math"

	"github.com/gpumem/course/gpukit/internal/isnil"
	"github.com/gpumem/course/gpukit/optim"
	"github.com/gpumem/course/gpukit/tensor"
)

// Autocast runs fn with automatic mixed precision to dtype, Float16 or
// BFloat16 (torch.autocast("cuda", dtype)). Matmuls (and so Linear and
// attention projections) run in dtype; softmax, log-softmax, exp, log,
// pow, sums, layer norm and the losses run in float32; ops that combine
// tensors (elementwise arithmetic, Where, and PyTorch's promote list:
// Cat, Stack, ScatterAdd) follow their widest input. Casts of parameters
// are cached until fn returns: CacheBytes, called inside fn, says how
// much memory they hold.
// Call Backward after Autocast returns, as PyTorch recommends (gpukit
// pauses autocast inside Backward anyway).
//
// Float64 and integer dtypes and a nil fn are refused with an error, and
// fn does not run.
func Autocast(dtype tensor.Dtype, fn func()) error {
	if fn == nil {
		return errors.New("amp: Autocast: fn is nil")
	}
	if dtype != tensor.Float16 && dtype != tensor.BFloat16 {
		return fmt.Errorf("amp: autocast to %s is not supported; use tensor.Float16 or tensor.BFloat16 (float64 training needs no autocast)", dtype)
	}
	tensor.WithAutocast(dtype, true, fn)
	return nil
}

// Disabled runs fn with autocast turned off inside an Autocast region
// (torch.autocast(enabled=False)), e.g. for a part that must stay float32.
func Disabled(fn func()) { tensor.WithAutocast(tensor.Float32, false, fn) }

// CacheBytes is the memory held by the cast-parameter cache of the
// current Autocast region (0 outside).
func CacheBytes() int64 { return tensor.AutocastCacheBytes() }

// GradScalerConfig holds GradScaler's settings; DefaultGradScaler returns
// PyTorch's.
type GradScalerConfig struct {
	InitScale      float64
	GrowthFactor   float64
	BackoffFactor  float64
	GrowthInterval int
}

// DefaultGradScaler returns torch.amp.GradScaler's defaults: initial scale
// 2¹⁶, growth 2, backoff 0.5, growth interval 2000.
func DefaultGradScaler() GradScalerConfig {
	return GradScalerConfig{InitScale: 65536, GrowthFactor: 2, BackoffFactor: 0.5, GrowthInterval: 2000}
}

// GradScaler scales the loss so that small float16 gradients do not
// underflow, unscales the gradients before the optimizer steps, skips
// steps whose gradients hold inf or NaN, and adapts the scale
// (torch.amp.GradScaler). One iteration is
//
//	loss := ...                               // forward under Autocast
//	scaled := scaler.Scale(loss); scaled.Backward()
//	stepped, err := scaler.Step(opt)           // unscales, skips on inf/NaN
//	scaler.Update()
type GradScaler struct {
	cfg     GradScalerConfig
	scale   float64
	tracker int // consecutive steps without inf/NaN
	scaled  bool
	opts    map[optim.Optimizer]*optState
}

type optState struct {
	unscaled, stepped bool
	foundInf          bool
}

// NewGradScaler returns a scaler with cfg (start from DefaultGradScaler).
func NewGradScaler(cfg GradScalerConfig) (*GradScaler, error) {
	switch {
	case !(cfg.InitScale > 0) || cfg.InitScale > math.MaxFloat32:
		// PyTorch keeps the scale in a float32 tensor: a larger one is inf.
		return nil, fmt.Errorf("amp: GradScaler: init_scale must be a positive number within float32's range, got %v", cfg.InitScale)
	case !(cfg.GrowthFactor > 1) || math.IsInf(cfg.GrowthFactor, 0):
		return nil, fmt.Errorf("amp: GradScaler: the growth factor must be a finite number > 1.0, got %v", cfg.GrowthFactor)
	case !(cfg.BackoffFactor > 0 && cfg.BackoffFactor < 1):
		return nil, fmt.Errorf("amp: GradScaler: the backoff factor must be < 1.0, got %v", cfg.BackoffFactor)
	case cfg.GrowthInterval <= 0:
		return nil, fmt.Errorf("amp: GradScaler: growth_interval must be a positive integer, got %d", cfg.GrowthInterval)
	}
	return &GradScaler{cfg: cfg, scale: cfg.InitScale, opts: map[optim.Optimizer]*optState{}}, nil
}

// Scale returns loss × scale (a new tensor; call Backward on it).
func (s *GradScaler) Scale(loss *tensor.Tensor) *tensor.Tensor {
	s.scaled = true
	return loss.Mul(s.scale)
}

// GetScale is the current scale.
func (s *GradScaler) GetScale() float64 { return s.scale }

// ErrNoScaledBackward is returned by Unscale and Step when no loss was
// scaled since the last Update: the gradients are not scaled, and
// dividing them by the scale would silently shrink them.
var ErrNoScaledBackward = errors.New("amp: GradScaler: no loss was scaled since the last Update; call Scale(loss).Backward() before Step")

var errNilOptimizer = errors.New("amp: GradScaler: the optimizer is nil")

func (s *GradScaler) state(opt optim.Optimizer) *optState {
	st, ok := s.opts[opt]
	if !ok {
		st = &optState{}
		s.opts[opt] = st
	}
	return st
}

// Unscale divides opt's gradients by the scale in place (unscale_) and
// records whether any holds inf or NaN. Call it before clipping
// gradients; Step calls it when you have not.
func (s *GradScaler) Unscale(opt optim.Optimizer) error {
	if isnil.Nil(opt) {
		return errNilOptimizer
	}
	if !s.scaled {
		return ErrNoScaledBackward
	}
	st := s.state(opt)
	if st.unscaled {
		return errors.New("amp: GradScaler: Unscale has already been called on this optimizer since the last Update")
	}
	if st.stepped {
		return errors.New("amp: GradScaler: Unscale is being called after Step")
	}
	checked := 0
	inv := 1 / s.scale
	for _, p := range opt.Params() {
		g := p.Grad()
		if g == nil {
			continue
		}
		checked++
		tensor.NoGrad(func() { g.MulInPlace(inv) })
		if !st.foundInf && !finite(g) {
			st.foundInf = true
		}
	}
	if checked == 0 {
		return errors.New("amp: GradScaler: no inf checks were recorded for this optimizer: none of its parameters has a gradient (did Backward run?)")
	}
	st.unscaled = true
	return nil
}

// finite reports whether every element of g is finite. A tensor on a
// meta device has no values and counts as finite.
func finite(g *tensor.Tensor) bool {
	if g.IsMeta() {
		return true
	}
	for _, v := range g.Float64s() {
		if math.IsInf(v, 0) || math.IsNaN(v) {
			return false
		}
	}
	return true
}

// Step unscales opt's gradients (unless Unscale was called) and runs
// opt.Step, unless a gradient holds inf or NaN: then the step is skipped
// (stepped is false) and Update will lower the scale.
func (s *GradScaler) Step(opt optim.Optimizer) (stepped bool, err error) {
	if isnil.Nil(opt) {
		return false, errNilOptimizer
	}
	st := s.state(opt)
	if st.stepped {
		return false, errors.New("amp: GradScaler: Step has already been called since the last Update")
	}
	if !st.unscaled {
		if err := s.Unscale(opt); err != nil {
			return false, err
		}
	}
	st.stepped = true
	if st.foundInf {
		return false, nil
	}
	opt.Step()
	return true, nil
}

// Update adapts the scale after the iteration's steps: multiplied by the
// backoff factor if any step found inf or NaN (and the growth count reset),
// otherwise multiplied by the growth factor after GrowthInterval
// consecutive clean iterations, unless that would take it past float32's
// range (it then stays, as in PyTorch). It resets the per-iteration state.
func (s *GradScaler) Update() {
	found := false
	for _, st := range s.opts {
		found = found || st.foundInf
	}
	if found {
		s.scale *= s.cfg.BackoffFactor
		s.tracker = 0
	} else if s.scaled {
		s.tracker++
		if s.tracker == s.cfg.GrowthInterval {
			// PyTorch keeps the scale in a float32 tensor and does not
			// grow it past float32's range to inf
			// (aten/src/ATen/native/cpu/AmpGradScalerKernels.cpp,
			// _amp_update_scale_cpu_kernel).
			if grown := s.scale * s.cfg.GrowthFactor; !math.IsInf(float64(float32(grown)), 0) {
				s.scale = grown
			}
			s.tracker = 0
		}
	}
	s.scaled = false
	clear(s.opts)
}
