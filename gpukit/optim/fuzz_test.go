package optim_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/gpumem/course/gpukit/optim"
	"github.com/gpumem/course/gpukit/tensor"
)

// FuzzLoadFile feeds LoadFile arbitrary bytes: it returns an error or
// loads a state that a step keeps finite, and never panics.
func FuzzLoadFile(f *testing.F) {
	dev := newDev(f)
	p := tensor.Ones([]int{3}, tensor.On(dev), tensor.RequiresGrad())
	adam, err := optim.NewAdam([]*tensor.Tensor{p}, optim.DefaultAdam())
	if err != nil {
		f.Fatal(err)
	}
	sgd, err := optim.NewSGD([]*tensor.Tensor{p}, optim.SGDConfig{LR: 0.1, Momentum: 0.9})
	if err != nil {
		f.Fatal(err)
	}
	p.SetGrad(tensor.Ones([]int{3}, tensor.On(dev)))
	adam.Step()
	sgd.Step()
	dir := f.TempDir()
	for _, s := range []interface{ SaveFile(string) error }{adam, sgd} {
		path := filepath.Join(dir, "seed")
		if err := s.SaveFile(path); err != nil {
			f.Fatal(err)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		path := filepath.Join(t.TempDir(), "state.safetensors")
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		q := tensor.Ones([]int{3}, tensor.On(dev), tensor.RequiresGrad())
		defer q.Release()
		a, _ := optim.NewAdam([]*tensor.Tensor{q}, optim.DefaultAdam())
		s, _ := optim.NewSGD([]*tensor.Tensor{q}, optim.SGDConfig{LR: 0.1, Momentum: 0.9})
		defer a.Release()
		defer s.Release()
		errA, errS := a.LoadFile(path), s.LoadFile(path)
		if errA != nil && errS != nil {
			return
		}
		q.SetGrad(tensor.Ones([]int{3}, tensor.On(dev)))
		a.Step()
		s.Step()
		for _, v := range q.Float64s() {
			if v != v {
				t.Fatalf("a loaded state made the parameter NaN: %v", q.Float64s())
			}
		}
	})
}
