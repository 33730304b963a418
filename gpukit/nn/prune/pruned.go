package prune

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/gpumem/course/gpukit/internal/isnil"
	"github.com/gpumem/course/gpukit/nn"
	"github.com/gpumem/course/gpukit/tensor"
)

// Pruned is a module with pruned parameters: it stands where the module
// stood and recomputes each pruned parameter as original · mask before
// every forward pass (PyTorch's forward pre-hook).
type Pruned struct {
	// Module is the wrapped layer; its pruned fields hold the computed
	// weights.
	Module  nn.Module
	entries []*entry
}

// entry is one pruned parameter of the module.
type entry struct {
	name     string
	orig     *tensor.Tensor // the original values, parameter name+"_orig"
	mask     *tensor.Tensor // 0/1 in orig's dtype, buffer name+"_mask"
	computed *tensor.Tensor // orig · mask, what the layer's field holds
	field    reflect.Value  // the layer's field
}

// Members lists the layer's parameters without the pruned ones, then
// name+"_orig" for each pruned one; the layer's buffers, then
// name+"_mask"; the layer's children. Names therefore match PyTorch's
// ("0.bias", "0.weight_orig", "0.weight_mask").
func (p *Pruned) Members() nn.Members {
	inner := p.Module.Members()
	var ms nn.Members
	for _, n := range inner.Params {
		if p.find(n.Name) == nil {
			ms.Params = append(ms.Params, n)
		}
	}
	ms.Buffers = slices.Clone(inner.Buffers)
	for _, e := range p.entries {
		ms.Params = append(ms.Params, nn.Named{Name: e.name + "_orig", Tensor: e.orig})
		ms.Buffers = append(ms.Buffers, nn.Named{Name: e.name + "_mask", Tensor: e.mask})
	}
	ms.Children = inner.Children
	return ms
}

// Training reports the layer's mode.
func (p *Pruned) Training() bool { return p.Module.Training() }

// SetTraining sets the layer's mode.
func (p *Pruned) SetTraining(train bool) { p.Module.SetTraining(train) }

// Forward recomputes every pruned parameter as original · mask (a new
// tensor, then the previous one is released, so for a moment both
// exist), then runs the layer. Gradients reach the originals through the
// product; pruned entries get zero gradient.
func (p *Pruned) Forward(x *tensor.Tensor) *tensor.Tensor {
	for _, e := range p.entries {
		e.recompute()
	}
	return p.Module.Forward(x)
}

// Weight returns the computed value of the pruned parameter name (what
// the layer uses), or nil if name is not pruned.
func (p *Pruned) Weight(name string) *tensor.Tensor {
	if e := p.find(name); e != nil {
		return e.computed
	}
	return nil
}

// Orig and Mask return the original and the mask of the pruned parameter
// name, or nil if name is not pruned.
func (p *Pruned) Orig(name string) *tensor.Tensor {
	if e := p.find(name); e != nil {
		return e.orig
	}
	return nil
}

// Mask returns the mask of the pruned parameter name, or nil.
func (p *Pruned) Mask(name string) *tensor.Tensor {
	if e := p.find(name); e != nil {
		return e.mask
	}
	return nil
}

// Release frees the computed weights (nn.Release frees the originals,
// masks and the layer's other tensors, but does not know of the computed
// weights, which are neither parameters nor buffers).
func (p *Pruned) Release() {
	for _, e := range p.entries {
		e.computed.Release()
	}
}

func (p *Pruned) find(name string) *entry {
	for _, e := range p.entries {
		if e.name == name {
			return e
		}
	}
	return nil
}

func (e *entry) recompute() { e.set(e.orig.Mul(e.mask)) }

// set makes w the computed weight the layer uses, releasing the previous.
func (e *entry) set(w *tensor.Tensor) {
	e.field.Set(reflect.ValueOf(w))
	e.computed.Release()
	e.computed = w
}

// Remove makes the pruning of name permanent (prune.remove): the zeros of
// the mask are written into the original, which becomes the layer's
// parameter name again; the mask and the computed weight are freed. The
// memory of the parameter goes back to what it was before pruning, not
// less. It returns the layer itself when no pruned parameter is left, p
// otherwise (put the result back where p stood).
//
// PyTorch computes the product into a new tensor and swaps it into the
// original's .data; gpukit multiplies in place, which ends in the same
// place with one tensor fewer at the peak.
func Remove(p *Pruned, name string) (nn.Module, error) {
	if p == nil || isnil.Nil(p.Module) {
		return nil, errorf("Remove: nil *Pruned")
	}
	e := p.find(name)
	if e == nil {
		return p, errorf("Remove: parameter %q of %T is not pruned (pruned: %s)", name, p.Module, p.prunedNames())
	}
	tensor.NoGrad(func() { e.orig.MulInPlace(e.mask) })
	e.field.Set(reflect.ValueOf(e.orig))
	e.computed.Release()
	e.mask.Release()
	p.entries = slices.DeleteFunc(p.entries, func(x *entry) bool { return x == e })
	if len(p.entries) == 0 {
		return p.Module, nil
	}
	return p, nil
}

func (p *Pruned) prunedNames() string {
	var names []string
	for _, e := range p.entries {
		names = append(names, e.name)
	}
	return strings.Join(names, ", ")
}

// target is a parameter about to be pruned: where it lives, its values
// and, if already pruned, its current mask.
type target struct {
	layer  nn.Module
	pruned *Pruned // nil when the layer is not yet wrapped
	name   string
	param  *tensor.Tensor // the original (weight_orig when already pruned)
	entry  *entry         // non-nil when already pruned
	field  reflect.Value
}

// resolve finds parameter name of m (a layer or a *Pruned).
func resolve(m nn.Module, name string) (target, error) {
	t := target{layer: m, name: name}
	if isnil.Nil(m) {
		return t, errorf("the module is nil")
	}
	if p, ok := m.(*Pruned); ok {
		if isnil.Nil(p.Module) {
			return t, errorf("the *Pruned wraps no module")
		}
		t.pruned, t.layer = p, p.Module
		if e := p.find(name); e != nil {
			t.entry, t.param, t.field = e, e.orig, e.field
			return t, nil
		}
	}
	var names []string
	for _, n := range t.layer.Members().Params {
		names = append(names, n.Name)
		if n.Name == name && n.Tensor != nil {
			t.param = n.Tensor
		}
	}
	if t.param == nil {
		return t, errorf("%q is not a parameter of %T (its parameters: %s)", name, t.layer, strings.Join(names, ", "))
	}
	if !t.param.IsLeaf() {
		return t, errorf("%q of %T is computed (already pruned?): prune the *Pruned that wraps the layer, not the layer", name, t.layer)
	}
	f, err := fieldHolding(t.layer, t.param)
	if err != nil {
		return t, err
	}
	t.field = f
	return t, nil
}

// fieldHolding returns the exported *tensor.Tensor field of the struct
// that layer points to whose value is param.
func fieldHolding(layer nn.Module, param *tensor.Tensor) (reflect.Value, error) {
	v := reflect.ValueOf(layer)
	if v.Kind() == reflect.Pointer && v.Elem().Kind() == reflect.Struct {
		s := v.Elem()
		want := reflect.TypeFor[*tensor.Tensor]()
		for i := range s.NumField() {
			f := s.Field(i)
			if f.Type() == want && f.CanSet() && f.Interface().(*tensor.Tensor) == param {
				return f, nil
			}
		}
	}
	return reflect.Value{}, errorf("%T does not keep the parameter in an exported *tensor.Tensor field, so it cannot be pruned", layer)
}

// placeLike returns options that create a tensor where t is, in t's dtype.
func placeLike(t *tensor.Tensor) []tensor.Option {
	if t.IsHost() {
		return []tensor.Option{tensor.OnHost(t.IsPinned()), t.Dtype()}
	}
	return []tensor.Option{tensor.On(t.Device()), t.Dtype()}
}

// prepared is a new mask and the weight it gives, allocated before
// anything changes, so that running out of memory leaves the model as
// it was.
type prepared struct{ mask, weight *tensor.Tensor }

func (t target) prepare(mask []float64) (prepared, error) {
	var pr prepared
	err := tensor.Try(func() {
		pr.mask = tensor.FromSlice(mask, t.param.Shape(), placeLike(t.param)...)
		pr.weight = t.param.Mul(pr.mask)
	})
	if err != nil {
		pr.release()
		return prepared{}, errorf("allocating the mask of %q: %v", t.name, err)
	}
	return pr, nil
}

func (pr prepared) release() {
	pr.mask.Release()
	pr.weight.Release()
}

// install puts a prepared mask in place and returns the module that now
// stands where t.layer stood.
func (t target) install(pr prepared) *Pruned {
	p := t.pruned
	if p == nil {
		p = &Pruned{Module: t.layer}
	}
	e := t.entry
	if e == nil {
		e = &entry{name: t.name, orig: t.param, field: t.field}
		p.entries = append(p.entries, e)
	}
	old := e.mask
	e.mask = pr.mask
	e.set(pr.weight)
	old.Release()
	return p
}

// currentMask returns the target's mask on the host (ones when not yet
// pruned).
func (t target) currentMask() []float64 {
	if t.entry != nil {
		return t.entry.mask.Float64s()
	}
	ones := make([]float64, t.param.Numel())
	for i := range ones {
		ones[i] = 1
	}
	return ones
}

func (t target) String() string { return fmt.Sprintf("%T.%s", t.layer, t.name) }
