package gradcheck

import (
	"fmt"
	"math"
	"testing"

	"github.com/gpumem/course/gpukit/tensor"
)

// Options are the tolerances of Check. A gradient element passes when
// |analytical - numerical| ≤ Atol + Rtol·|numerical|.
type Options struct {
	Eps  float64 // finite-difference step (default 1e-6)
	Atol float64 // default 1e-5
	Rtol float64 // default 1e-3
	Seed uint64  // seed of the random output weights (default 1)
}

func (o Options) withDefaults() Options {
	if o.Eps == 0 {
		o.Eps = 1e-6
	}
	if o.Atol == 0 {
		o.Atol = 1e-5
	}
	if o.Rtol == 0 {
		o.Rtol = 1e-3
	}
	if o.Seed == 0 {
		o.Seed = 1
	}
	return o
}

// Func is the function under test.
type Func func(inputs []*tensor.Tensor) *tensor.Tensor

// Check runs Backward through f(inputs) weighted by fixed random weights
// (so that every output element matters, not just their sum) and compares
// each input's gradient with central differences of the same weighted sum.
// It returns an error naming the first input and element that differs,
// or any misuse error that f raised. Gradients of the inputs are reset
// (SetGrad(nil)) before and after.
func Check(f Func, inputs []*tensor.Tensor, opts Options) (err error) {
	o := opts.withDefaults()
	if e := tensor.Try(func() { err = check(f, inputs, o) }); e != nil {
		return e
	}
	return err
}

// Assert is Check that fails the test on error.
func Assert(t testing.TB, f Func, inputs ...*tensor.Tensor) {
	t.Helper()
	if err := Check(f, inputs, Options{}); err != nil {
		t.Fatal(err)
	}
}

func check(f Func, inputs []*tensor.Tensor, o Options) error {
	for i, in := range inputs {
		if in.Dtype() != tensor.Float64 {
			return fmt.Errorf("gradcheck: input %d is %s; gradcheck needs float64 inputs", i, in.Dtype())
		}
		if in.IsMeta() {
			return fmt.Errorf("gradcheck: input %d is on %s, which has no values", i, in.DeviceName())
		}
		in.SetGrad(nil)
	}
	defer func() {
		for _, in := range inputs {
			in.SetGrad(nil)
		}
	}()

	// Weighted loss L = Σ w·f(x).
	y := f(inputs)
	w := tensor.Randn(y.Shape(), tensor.Float64, onSameDevice(y), tensor.WithGenerator(tensor.NewGenerator(o.Seed)))
	defer w.Release()
	loss := func(y *tensor.Tensor) *tensor.Tensor {
		p := y.Mul(w)
		defer p.Release()
		return p.Sum()
	}
	l := loss(y)
	if !l.RequiresGrad() {
		y.Release()
		l.Release()
		return fmt.Errorf("gradcheck: the output does not require grad (no input requires grad?)")
	}
	l.Backward()
	l.Release()
	y.Release()

	value := func() float64 {
		var v float64
		tensor.NoGrad(func() {
			y := f(inputs)
			l := loss(y)
			v = l.Item()
			l.Release()
			y.Release()
		})
		return v
	}
	for i, in := range inputs {
		if !in.RequiresGrad() {
			continue
		}
		var analytical []float64
		if g := in.Grad(); g != nil {
			analytical = g.Float64s()
		} else {
			analytical = make([]float64, in.Numel())
		}
		shape := in.Shape()
		idx := make([]int, len(shape))
		for k := range in.Numel() {
			unravel(k, shape, idx)
			x := in.At(idx...)
			var plus, minus float64
			tensor.NoGrad(func() {
				in.SetAt(x+o.Eps, idx...)
				plus = value()
				in.SetAt(x-o.Eps, idx...)
				minus = value()
				in.SetAt(x, idx...)
			})
			num := (plus - minus) / (2 * o.Eps)
			if d := math.Abs(analytical[k] - num); d > o.Atol+o.Rtol*math.Abs(num) || math.IsNaN(analytical[k]) != math.IsNaN(num) {
				return fmt.Errorf("gradcheck: input %d (shape %v), element %v: analytical gradient %.8g, numerical %.8g (difference %.3g)", i, shape, idx, analytical[k], num, d)
			}
		}
	}
	return nil
}

func unravel(k int, shape, idx []int) {
	for d := len(shape) - 1; d >= 0; d-- {
		idx[d] = k % shape[d]
		k /= shape[d]
	}
}

func onSameDevice(t *tensor.Tensor) tensor.Option {
	if d := t.Device(); d != nil {
		return tensor.On(d)
	}
	return tensor.OnHost(t.IsPinned())
}
