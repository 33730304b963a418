package nn

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gpumem/course/gpukit/internal/isnil"
	"github.com/gpumem/course/gpukit/tensor"
)

// Module is a layer or a model: a forward function plus the tensors it
// owns. Parameters are trained (they require grad and receive gradients);
// buffers are state that is saved and moved with the module but not
// trained (a BatchNorm's running statistics). Both occupy device memory,
// so both count in Nbytes.
//
// A module of your own embeds Base (which gives Training and SetTraining)
// and lists what it owns in Members:
//
//	type Twice struct {
//		nn.Base
//		FC *nn.Linear
//	}
//	func (m *Twice) Members() nn.Members {
//		return nn.Members{Children: []nn.NamedModule{{Name: "fc", Module: m.FC}}}
//	}
//	func (m *Twice) Forward(x *tensor.Tensor) *tensor.Tensor { ... }
type Module interface {
	// Forward runs the module on x. The result is a new tensor the caller
	// owns (Release it when done).
	Forward(x *tensor.Tensor) *tensor.Tensor
	// Members lists the module's own parameters and buffers and its child
	// modules, in a fixed order (the order of state dicts and of
	// Parameters).
	Members() Members
	// Training reports whether the module is in training mode (the
	// default); SetTraining changes this module only (Train and Eval walk
	// the children too).
	Training() bool
	SetTraining(train bool)
}

// Members is what a module owns directly.
type Members struct {
	Params   []Named
	Buffers  []Named
	Children []NamedModule
}

// Named is a tensor with its name in the module ("weight", "bias",
// "running_mean").
type Named struct {
	Name   string
	Tensor *tensor.Tensor
}

// NamedModule is a child module with its attribute name ("fc1", "0").
type NamedModule struct {
	Name   string
	Module Module
}

// Base gives a module its training flag. Modules start in training mode,
// as in PyTorch.
type Base struct{ eval bool }

// Training reports whether the module is in training mode.
func (b *Base) Training() bool { return !b.eval }

// SetTraining sets this module's mode (children are not touched; use
// Train or Eval for a whole model).
func (b *Base) SetTraining(train bool) { b.eval = !train }

// walk calls fn for every module under m (m first), with its dotted
// prefix ("" for m, "blocks.0." for a child's child).
func walk(m Module, prefix string, fn func(prefix string, m Module)) {
	if isnil.Nil(m) {
		panic(errorf("module %q is nil", strings.TrimSuffix(prefix, ".")))
	}
	fn(prefix, m)
	for _, c := range m.Members().Children {
		walk(c.Module, prefix+c.Name+".", fn)
	}
}

// NamedParameters returns every parameter of m and its children with its
// full dotted name ("0.weight", "blocks.1.attn.in_proj_weight"), in
// module order (model.named_parameters()). A tensor shared by two
// modules is listed once, under its first name, as PyTorch does.
func NamedParameters(m Module) []Named {
	return collect(m, func(ms Members) []Named { return ms.Params })
}

// NamedBuffers returns every buffer of m and its children, named like
// NamedParameters (model.named_buffers()).
func NamedBuffers(m Module) []Named {
	return collect(m, func(ms Members) []Named { return ms.Buffers })
}

// Parameters returns the tensors of NamedParameters (model.parameters()).
func Parameters(m Module) []*tensor.Tensor {
	var ps []*tensor.Tensor
	for _, p := range NamedParameters(m) {
		ps = append(ps, p.Tensor)
	}
	return ps
}

func collect(m Module, pick func(Members) []Named) []Named {
	var out []Named
	seen := map[*tensor.Tensor]bool{}
	walk(m, "", func(prefix string, m Module) {
		for _, n := range pick(m.Members()) {
			if n.Tensor == nil || seen[n.Tensor] {
				continue
			}
			seen[n.Tensor] = true
			out = append(out, Named{Name: prefix + n.Name, Tensor: n.Tensor})
		}
	})
	return out
}

// Train puts m and all its children in training mode (model.train()).
func Train(m Module) { setMode(m, true) }

// Eval puts m and all its children in evaluation mode (model.eval()):
// Dropout passes its input through, BatchNorm uses its running
// statistics.
func Eval(m Module) { setMode(m, false) }

func setMode(m Module, train bool) {
	walk(m, "", func(_ string, m Module) { m.SetTraining(train) })
}

// ZeroGrad clears the gradients of m's parameters. With setToNone (the
// default of PyTorch 2's model.zero_grad()) each gradient is released, so
// its memory goes back to the allocator until the next backward; without,
// gradients are filled with zeros in place and keep their memory.
func ZeroGrad(m Module, setToNone bool) {
	for _, p := range Parameters(m) {
		if setToNone {
			p.SetGrad(nil)
		} else {
			p.ZeroGrad()
		}
	}
}

// NumParams is the number of parameter elements of m
// (sum(p.numel() for p in model.parameters())).
func NumParams(m Module) int64 { return numel(NamedParameters(m)) }

// NumBuffers is the number of buffer elements of m.
func NumBuffers(m Module) int64 { return numel(NamedBuffers(m)) }

// Nbytes is the device memory m's parameters and buffers hold, in bytes:
// what the model costs before any input arrives. Gradients and optimizer
// state come on top.
func Nbytes(m Module) int64 {
	var n int64
	for _, t := range append(NamedParameters(m), NamedBuffers(m)...) {
		n += t.Tensor.Nbytes()
	}
	return n
}

func numel(ts []Named) int64 {
	var n int64
	for _, t := range ts {
		n += int64(t.Tensor.Numel())
	}
	return n
}

// Release frees m's parameters, their gradients and m's buffers at once
// (the model can no longer be used). Memory comes back deterministically,
// without waiting for the collector.
func Release(m Module) {
	for _, p := range NamedParameters(m) {
		p.Tensor.SetGrad(nil)
		p.Tensor.Release()
	}
	for _, b := range NamedBuffers(m) {
		b.Tensor.Release()
	}
}

// Sequential runs its modules one after the other (torch.nn.Sequential);
// its children are named "0", "1", ...
type Sequential struct {
	Base
	Layers []Module
}

// NewSequential returns a Sequential of layers; a nil layer panics with an
// *Error.
func NewSequential(layers ...Module) *Sequential {
	for i, l := range layers {
		if isnil.Nil(l) {
			panic(errorf("NewSequential: layer %d is nil", i))
		}
	}
	return &Sequential{Layers: slices.Clone(layers)}
}

// Members lists the layers as children "0", "1", ...
func (s *Sequential) Members() Members {
	var ms Members
	for i, l := range s.Layers {
		ms.Children = append(ms.Children, NamedModule{Name: fmt.Sprint(i), Module: l})
	}
	return ms
}

// Forward runs the layers in order, releasing each intermediate output as
// soon as the next layer has consumed it (autograd keeps what backward
// needs).
func (s *Sequential) Forward(x *tensor.Tensor) *tensor.Tensor {
	return RunLayers(s.Layers, x)
}

// RunLayers runs layers on x in order and returns the last output,
// releasing the intermediate outputs (not x). With no layers it returns a
// new reference to x.
func RunLayers(layers []Module, x *tensor.Tensor) *tensor.Tensor {
	for i, l := range layers {
		if isnil.Nil(l) {
			panic(errorf("RunLayers: layer %d is nil", i))
		}
	}
	if len(layers) == 0 {
		checkInput("RunLayers", x)
		return x.Reshape(x.Shape()...) // a new reference (a view), gradients flow
	}
	h := layers[0].Forward(x)
	for _, l := range layers[1:] {
		next := l.Forward(h)
		h.Release()
		h = next
	}
	return h
}
