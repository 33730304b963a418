package nn_test

import (
	"testing"

	"github.com/gpumem/course/gpukit/device/simtest"
	"github.com/gpumem/course/gpukit/nn"
	"github.com/gpumem/course/gpukit/nn/nntest"
	"github.com/gpumem/course/gpukit/tensor"
)

// FuzzLoadFile feeds a module's LoadFile arbitrary bytes: it returns an
// error and leaves the module as it was, or loads every parameter; it
// never panics.
func FuzzLoadFile(f *testing.F) {
	dev := simtest.Card(f)
	newModel := func() nn.Module {
		return nn.NewSequential(nn.NewLinear(3, 2, true, tensor.On(dev)), nn.NewLayerNorm(2, tensor.On(dev)))
	}
	nntest.AddSavedFile(f, func(path string) error { return nn.SaveFile(path, newModel()) })
	f.Fuzz(func(t *testing.T, b []byte) {
		path := nntest.WriteTemp(t, "m.safetensors", b)
		m := newModel()
		before := nntest.StateValues(m)
		if err := nn.LoadFile(path, m); err != nil {
			after := nntest.StateValues(m)
			for name, v := range before {
				if len(after[name]) != len(v) {
					t.Fatalf("a refused load changed %s", name)
				}
				for i := range v {
					if v[i] != after[name][i] && !(v[i] != v[i] && after[name][i] != after[name][i]) {
						t.Fatalf("a refused load changed %s", name)
					}
				}
			}
		}
		for _, p := range nn.Parameters(m) {
			p.Release()
		}
	})
}
