package tensor

import (
	"sync"
	"sync/atomic"
)

// Grad modes are per goroutine, as PyTorch's are per thread: NoGrad(fn) and
// InferenceMode(fn) change the mode of the calling goroutine for the
// duration of fn only. A goroutine started inside fn does not inherit the
// mode (as a Python thread does not); call NoGrad inside it.
//
// Implementation: the mode of a goroutine is kept in a map keyed by the
// goroutine's identity, only while a scope is active on it. When no
// goroutine is inside any scope, an atomic counter skips the lookup. When
// some are (data loader workers inside NoGrad, say), every op on every
// goroutine looks its own mode up, so the identity must be cheap: on amd64
// and arm64 it is the address of the goroutine's runtime g, read by one
// instruction (gradmode_getg_*.s), and a goroutine that never entered a
// scope pays one failed map lookup, tens of nanoseconds. With -tags purego
// or on other architectures it is the goroutine id parsed from
// runtime.Stack, about a microsecond. A g is reused only after its
// goroutine has ended, and a goroutine's entry is deleted when its last
// scope ends (also by panic or runtime.Goexit), so keys never go stale.
// BenchmarkStepWhileWorkersInNoGrad measures what other goroutines' scopes
// cost a training step.

type modeState struct {
	inference int // depth of InferenceMode scopes
	hooks     []*savedHooks
	stack     []modeFrame // NoGrad/EnableGrad/... scopes, innermost last
}

// modeFrame remembers which kind of scope was pushed so nested scopes of
// different kinds restore correctly.
type modeFrame uint8

const (
	frameNoGrad modeFrame = iota
	frameEnableGrad
	frameInference
	frameHooks
)

var (
	activeScopes atomic.Int64
	modes        sync.Map // goroutineKey() -> *modeState
)

// currentMode returns the calling goroutine's mode, or nil when it has
// none (grad enabled, no inference mode, no hooks).
func currentMode() *modeState {
	if activeScopes.Load() == 0 {
		return nil
	}
	if m, ok := modes.Load(goroutineKey()); ok {
		return m.(*modeState)
	}
	return nil
}

// withMode runs fn with the calling goroutine's mode changed by push, and
// restores it afterwards, also when fn panics.
func withMode(f modeFrame, h *savedHooks, fn func()) {
	id := goroutineKey()
	var m *modeState
	if v, ok := modes.Load(id); ok {
		m = v.(*modeState)
	} else {
		m = &modeState{}
		modes.Store(id, m)
	}
	activeScopes.Add(1)
	m.stack = append(m.stack, f)
	switch f {
	case frameInference:
		m.inference++
	case frameHooks:
		m.hooks = append(m.hooks, h)
	}
	defer func() {
		m.stack = m.stack[:len(m.stack)-1]
		switch f {
		case frameInference:
			m.inference--
		case frameHooks:
			m.hooks = m.hooks[:len(m.hooks)-1]
		}
		if len(m.stack) == 0 {
			modes.Delete(id)
		}
		activeScopes.Add(-1)
	}()
	fn()
}

// IsGradEnabled reports whether ops called on this goroutine record
// autograd history (torch.is_grad_enabled).
func IsGradEnabled() bool {
	m := currentMode()
	if m == nil {
		return true
	}
	if m.inference > 0 {
		return false
	}
	// The innermost of NoGrad / EnableGrad wins.
	for i := len(m.stack) - 1; i >= 0; i-- {
		switch m.stack[i] {
		case frameNoGrad:
			return false
		case frameEnableGrad:
			return true
		}
	}
	return true
}

// IsInferenceModeEnabled reports whether the calling goroutine is inside
// InferenceMode (torch.is_inference_mode_enabled).
func IsInferenceModeEnabled() bool { return inferenceModeOn() }

func inferenceModeOn() bool {
	m := currentMode()
	return m != nil && m.inference > 0
}

// NoGrad runs fn with gradient recording disabled on the calling goroutine
// (torch.no_grad): ops inside record no graph and save no tensors, and
// their results do not require grad. Tensors made inside are ordinary
// tensors and may be used with autograd afterwards. In-place updates of
// leaves that require grad (what an optimizer does) are allowed inside.
func NoGrad(fn func()) { withMode(frameNoGrad, nil, fn) }

// EnableGrad runs fn with gradient recording enabled again inside a
// NoGrad scope (torch.enable_grad). It has no effect inside InferenceMode.
func EnableGrad(fn func()) { withMode(frameEnableGrad, nil, fn) }

// InferenceMode runs fn in inference mode on the calling goroutine
// (torch.inference_mode): like NoGrad, plus tensors created inside are
// inference tensors, which skip version counting. Views and ops are
// allowed inside. Outside the scope an inference tensor cannot be saved for
// backward (use it in an op with a tensor that requires grad) nor be
// modified in place; Clone it (outside) to get an ordinary tensor.
func InferenceMode(fn func()) { withMode(frameInference, nil, fn) }
