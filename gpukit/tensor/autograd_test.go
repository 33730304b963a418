package tensor_test

import (
	"runtime"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpumem/course/gpukit/tensor"
)

// COURSE mistake 7: y := x**2; y.add_(1) is legal.
func TestInPlaceOnNonLeafIsLegal(t *testing.T) {
	dev := newDev(t)
	x := f64(dev, []float64{1, 2, 3}, 3).SetRequiresGrad(true)
	y := x.Pow(2)
	require.Empty(t, panicMsg(func() { y.AddInPlace(1) }))
	assert.Equal(t, []float64{2, 5, 10}, y.Float64s())
	assert.Equal(t, "AddBackward0", y.GradFn())
	y.Sum().Backward()
	assert.Equal(t, []float64{2, 4, 6}, x.Grad().Float64s())
}

func TestInPlaceOnLeafRequiringGradIsRefused(t *testing.T) {
	dev := newDev(t)
	x := f64(dev, []float64{1, 2, 3}, 3).SetRequiresGrad(true)
	for name, fn := range map[string]func(){
		"AddInPlace": func() { x.AddInPlace(1) },
		"MulInPlace": func() { x.MulInPlace(x) },
		"Fill":       func() { x.Fill(0) },
		"view":       func() { x.Narrow(0, 0, 2).AddInPlace(1) },
	} {
		msg := panicMsg(fn)
		assert.Regexp(t, "^tensor: ", msg, name)
		assert.Contains(t, msg, "leaf", name)
	}
	assert.Equal(t, int64(0), x.Version(), "nothing was modified")
	// What an optimizer does: in place under NoGrad.
	tensor.NoGrad(func() { x.AddInPlace(1) })
	assert.Equal(t, []float64{2, 3, 4}, x.Float64s())
	assert.Equal(t, int64(1), x.Version())
}

func TestModifiedSavedTensorFailsBackward(t *testing.T) {
	dev := newDev(t)
	x := f64(dev, []float64{1, 2}, 2).SetRequiresGrad(true)
	y := x.Exp()    // ExpBackward0 saves y
	y.AddInPlace(1) // legal now...
	loss := y.Sum()
	msg := panicMsg(func() { loss.Backward() })
	assert.Contains(t, msg, "tensor: ")
	assert.Contains(t, msg, "modified by an inplace operation")
	assert.Contains(t, msg, "ExpBackward0")
	assert.Contains(t, msg, "version 1; expected version 0")

	// A saved input changed in place through a view.
	a := f64(dev, []float64{1, 2}, 2)
	w := f64(dev, []float64{3, 4}, 2).SetRequiresGrad(true)
	p := a.Mul(w) // saves a
	tensor.NoGrad(func() { a.Narrow(0, 0, 1).Fill(9) })
	msg = panicMsg(func() { p.Sum().Backward() })
	assert.Contains(t, msg, "MulBackward0")
}

func TestSecondBackwardNeedsRetainGraph(t *testing.T) {
	dev := newDev(t)
	x := f64(dev, []float64{1, 2}, 2).SetRequiresGrad(true)
	loss := x.Mul(x).Sum()
	loss.Backward(tensor.RetainGraph())
	loss.Backward()
	assert.Equal(t, []float64{4, 8}, x.Grad().Float64s(), "gradients accumulate")
	msg := panicMsg(func() { loss.Backward() })
	assert.Contains(t, msg, "backward through the graph a second time")
	assert.Contains(t, msg, "MulBackward0")
	assert.Contains(t, msg, "RetainGraph")

	x.ZeroGrad()
	assert.Equal(t, []float64{0, 0}, x.Grad().Float64s())
	x.SetGrad(nil)
	assert.Nil(t, x.Grad())
}

func TestBackwardErrors(t *testing.T) {
	dev := newDev(t)
	x := f64(dev, []float64{1, 2}, 2).SetRequiresGrad(true)
	y := x.Mul(3)
	assert.Contains(t, panicMsg(func() { y.Backward() }), "only for scalar outputs")
	y.Backward(tensor.WithGradient(f64(dev, []float64{1, 10}, 2)))
	assert.Equal(t, []float64{3, 30}, x.Grad().Float64s())
	z := f64(dev, []float64{1}, 1)
	assert.Contains(t, panicMsg(func() { z.Backward() }), "does not require grad")
}

func TestDetach(t *testing.T) {
	dev := newDev(t)
	x := f64(dev, []float64{1, 2}, 2).SetRequiresGrad(true)
	y := x.Mul(2)
	before := allocations(dev)
	d := y.Detach()
	assert.Equal(t, before, allocations(dev))
	assert.True(t, d.SameStorage(y))
	assert.False(t, d.RequiresGrad())
	assert.True(t, d.IsLeaf())
	assert.Equal(t, "MulBackward0", y.GradFn(), "the graph is still there")
}

func TestInferenceMode(t *testing.T) {
	dev := newDev(t)
	w := f64(dev, []float64{1, 2, 3, 4}, 2, 2).SetRequiresGrad(true)
	var out, view *tensor.Tensor
	tensor.InferenceMode(func() {
		assert.True(t, tensor.IsInferenceModeEnabled())
		assert.False(t, tensor.IsGradEnabled())
		x := tensor.Ones([]int{2, 2}, tensor.On(dev), tensor.Float64)
		out = x.Matmul(w) // ops allowed
		view = out.T()    // views allowed
		view.Contiguous().AddInPlace(1)
		out.AddInPlace(1) // in-place allowed inside
	})
	assert.False(t, tensor.IsInferenceModeEnabled())
	assert.True(t, out.IsInference())
	assert.True(t, view.IsInference())
	assert.False(t, out.RequiresGrad(), "nothing recorded")
	assert.Equal(t, []float64{5, 7, 5, 7}, out.Float64s())

	msg := panicMsg(func() { out.Mul(w) })
	assert.Contains(t, msg, "inference tensors cannot be saved for backward")
	msg = panicMsg(func() { out.AddInPlace(1) })
	assert.Contains(t, msg, "inference tensor")
	assert.Contains(t, msg, "outside InferenceMode")
	msg = panicMsg(func() { out.SetRequiresGrad(true) })
	assert.Contains(t, msg, "inference tensor")

	// Ops that save nothing are allowed, and a Clone is a normal tensor.
	s := out.Add(w)
	assert.True(t, s.RequiresGrad())
	c := out.Clone()
	assert.False(t, c.IsInference())
	require.Empty(t, panicMsg(func() { c.Mul(w).Sum().Backward() }))
}

func TestNoGradIsPerGoroutine(t *testing.T) {
	dev := newDev(t)
	x := f64(dev, []float64{1, 2}, 2).SetRequiresGrad(true)
	inside := make(chan struct{})
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tensor.NoGrad(func() {
			close(inside)
			<-done
		})
	}()
	<-inside
	// Another goroutine is inside NoGrad; this one still records.
	assert.True(t, tensor.IsGradEnabled())
	y := x.Mul(x)
	assert.Equal(t, "MulBackward0", y.GradFn())
	var inner bool
	tensor.NoGrad(func() {
		inner = tensor.IsGradEnabled()
		tensor.EnableGrad(func() { assert.True(t, tensor.IsGradEnabled()) })
		go func() { defer close(done); assert.True(t, tensor.IsGradEnabled(), "not inherited by new goroutines") }()
		<-done
	})
	assert.False(t, inner)
	wg.Wait()
	assert.True(t, tensor.IsGradEnabled())
}

func TestNoGradRestoresOnPanic(t *testing.T) {
	dev := newDev(t)
	x := tensor.Zeros([]int{2}, tensor.On(dev))
	err := tensor.Try(func() {
		tensor.NoGrad(func() { x.View(3) })
	})
	assert.Error(t, err)
	func() {
		defer func() { _ = recover() }()
		tensor.NoGrad(func() { panic("boom") })
	}()
	assert.True(t, tensor.IsGradEnabled())
}

func TestConcurrentTraining(t *testing.T) {
	// Run with -race: independent graphs on several goroutines, some in
	// NoGrad, share one device.
	dev := newDev(t)
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 20 {
				w := tensor.Randn([]int{8, 8}, tensor.On(dev), tensor.Float64, tensor.RequiresGrad())
				x := tensor.Randn([]int{4, 8}, tensor.On(dev), tensor.Float64)
				if i%2 == 0 {
					tensor.NoGrad(func() {
						y := x.Matmul(w)
						assert.False(t, y.RequiresGrad())
						y.Release()
					})
				} else {
					loss := x.Matmul(w).Relu().Sum()
					loss.Backward()
					assert.Equal(t, []int{8, 8}, w.Grad().Shape())
					loss.Release()
				}
				w.SetGrad(nil)
				w.Release()
				x.Release()
			}
		}()
	}
	wg.Wait()
}

func TestSavedTensorHooksOffload(t *testing.T) {
	dev := newDev(t)
	w := tensor.Randn([]int{256, 256}, tensor.On(dev), tensor.Float64, tensor.RequiresGrad())
	x := tensor.Randn([]int{256, 256}, tensor.On(dev), tensor.Float64)
	h0 := x.Matmul(w)
	y0 := h0.Exp()
	ref := y0.Sum()
	ref.Backward()
	want := w.Grad().Float64s()
	w.SetGrad(nil)
	for _, t := range []*tensor.Tensor{h0, y0, ref} {
		t.Release()
	}

	base := dev.MemoryAllocated()
	packs, unpacks := 0, 0
	var loss *tensor.Tensor
	tensor.WithSavedTensorHooks(
		func(t *tensor.Tensor) any { packs++; return t.ToHost(true, true) }, // offload to pinned host
		func(p any) *tensor.Tensor { unpacks++; return p.(*tensor.Tensor).To(dev, true) },
		func() {
			h := x.Matmul(w)
			y := h.Exp()
			loss = y.Sum()
			h.Release()
			y.Release()
		})
	assert.Equal(t, 2, packs, "x (for w's gradient) and Exp's output; w is not saved, since x needs no gradient")
	assert.Equal(t, base+512, dev.MemoryAllocated(), "saved activations live on the host; only loss on the device")
	loss.Backward()
	assert.Equal(t, 2, unpacks)
	assert.InDeltaSlice(t, want, w.Grad().Float64s(), 1e-9)
	w.SetGrad(nil)
	loss.Release()
	assert.Equal(t, base, dev.MemoryAllocated())
	// x is not used after the forward pass: without this, the collector
	// may (rightly) free it early and the baseline would move.
	runtime.KeepAlive(x)
}

func TestSavedTensorHooksIdentity(t *testing.T) {
	dev := newDev(t)
	x := f64(dev, []float64{1, 2}, 2).SetRequiresGrad(true)
	var loss *tensor.Tensor
	tensor.WithSavedTensorHooks(func(t *tensor.Tensor) any { return t }, func(p any) *tensor.Tensor { return p.(*tensor.Tensor) }, func() {
		loss = x.Mul(x).Sum()
	})
	loss.Backward(tensor.RetainGraph())
	loss.Backward()
	assert.Equal(t, []float64{4, 8}, x.Grad().Float64s())
}
