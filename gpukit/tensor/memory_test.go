package tensor_test

import (
	"errors"
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpumem/course/gpukit/alloc"
	"github.com/gpumem/course/gpukit/device/simtest"
	"github.com/gpumem/course/gpukit/tensor"
)

const mib = 1 << 20

func TestReleaseReturnsMemory(t *testing.T) {
	dev := newDev(t)
	base := dev.MemoryAllocated()
	x := tensor.Zeros([]int{1024, 1024}, tensor.On(dev)) // 4 MiB
	assert.Equal(t, base+4*mib, dev.MemoryAllocated())
	v := x.T()
	x.Release()
	assert.Equal(t, base+4*mib, dev.MemoryAllocated(), "a live view keeps its storage")
	assert.Equal(t, 1, v.Storage().Refs())
	v.Release()
	assert.Equal(t, base, dev.MemoryAllocated())
	assert.True(t, v.Storage().Freed())
	x.Release() // idempotent
}

func TestUseAfterReleasePanics(t *testing.T) {
	dev := newDev(t)
	x := tensor.Zeros([]int{2, 3}, tensor.On(dev))
	x.Release()
	msg := panicMsg(func() { x.Add(1) })
	assert.Contains(t, msg, "tensor: Add: use of a released tensor (shape [2, 3]")
	msg = panicMsg(func() { x.View(6) })
	assert.Contains(t, msg, "released tensor")
}

func TestCollectorFallback(t *testing.T) {
	dev := newDev(t)
	base := dev.MemoryAllocated()
	// No collection may run before CollectGarbage, or it would count less.
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	func() {
		for range 10 {
			x := tensor.Ones([]int{256, 1024}, tensor.On(dev)) // 1 MiB each, never released
			y := x.Mul(2).T()
			_ = y
		}
	}()
	require.Greater(t, dev.MemoryAllocated(), base)
	n := tensor.CollectGarbage()
	assert.Equal(t, base, dev.MemoryAllocated(), "dropped tensors must return their blocks after CollectGarbage")
	assert.GreaterOrEqual(t, n, 30, "x, x.Mul(2) and its view, ten times")
	assert.Equal(t, 0, tensor.CollectGarbage(), "nothing left to collect")
}

// TestCollectedViewDropsItsReference is the stale-count case: a view that
// is dropped without Release gives its storage reference back when it is
// collected, so the Release of the last live tensor frees the storage.
func TestCollectedViewDropsItsReference(t *testing.T) {
	dev := newDev(t)
	base := dev.MemoryAllocated()
	x := tensor.Zeros([]int{1024, 1024}, tensor.On(dev))
	func() {
		c := x.Narrow(0, 0, 1).Clone() // the Narrow view is never released
		c.Release()
	}()
	assert.Equal(t, 2, x.Storage().Refs(), "x and the forgotten view")
	assert.GreaterOrEqual(t, tensor.CollectGarbage(), 1)
	assert.Equal(t, 1, x.Storage().Refs())
	x.Release()
	assert.Equal(t, base, dev.MemoryAllocated(), "the last Release frees the storage")
	assert.True(t, x.Storage().Freed())
}

// TestReleaseStopsTheCleanup: a released tensor is never counted again by
// the collector, and releasing twice drops one reference.
func TestReleaseStopsTheCleanup(t *testing.T) {
	dev := newDev(t)
	x := tensor.Zeros([]int{64}, tensor.On(dev))
	v := x.View(8, 8)
	tensor.CollectGarbage()
	v.Release()
	v.Release()
	assert.Equal(t, 1, x.Storage().Refs())
	v = nil
	assert.Equal(t, 0, tensor.CollectGarbage(), "v was released: its cleanup was stopped")
	assert.Equal(t, 1, x.Storage().Refs())
	x.Release()
	assert.True(t, x.Storage().Freed())
}

func TestOutOfMemory(t *testing.T) {
	dev := newDevCap(t, 64*mib)
	var x *tensor.Tensor
	err := tensor.Try(func() { x = tensor.Zeros([]int{1 << 20, 1 << 10}, tensor.On(dev)) }) // 4 GiB
	require.Error(t, err)
	var oom *alloc.OutOfMemoryError
	assert.True(t, errors.As(err, &oom), "errors.As finds the OOM error through Try: %v", err)
	assert.Nil(t, x)
	_, err = tensor.TryEmpty([]int{1 << 20, 1 << 10}, tensor.On(dev))
	assert.True(t, errors.As(err, &oom))
	// and from an op
	a := tensor.Zeros([]int{4 << 10, 1 << 10}, tensor.On(dev)) // 16 MiB
	err = tensor.Try(func() {
		for range 8 {
			a.Add(a) // never released: the device fills up
		}
	})
	assert.True(t, errors.As(err, &oom), "%v", err)
}

func TestSavedActivationsHoldMemoryUntilBackward(t *testing.T) {
	dev := newDev(t)
	simtest.WarmBlas(t, dev)                                                    // the first product's cuBLAS workspace stays for good: measure from after it
	w := tensor.Randn([]int{1024, 1024}, tensor.On(dev), tensor.RequiresGrad()) // 4 MiB
	x := tensor.Randn([]int{1024, 1024}, tensor.On(dev))
	base := dev.MemoryAllocated()

	h := x.Matmul(w) // saves x and w (already counted)
	y := h.Exp()     // saves its output y
	loss := y.Sum()
	h.Release()
	y.Release()
	// y's storage is still held by ExpBackward0: 4 MiB over base (+ loss).
	assert.Equal(t, base+4*mib+512, dev.MemoryAllocated())
	loss.Backward()
	loss.Release()
	// saved y is gone; w.grad (4 MiB) is new.
	assert.Equal(t, base+4*mib, dev.MemoryAllocated())
	w.SetGrad(nil)
	assert.Equal(t, base, dev.MemoryAllocated())
	runtime.KeepAlive(x) // or the collector may free x early and move the baseline
}

func TestNoGradSavesNothing(t *testing.T) {
	dev := newDev(t)
	simtest.WarmBlas(t, dev) // the first product's cuBLAS workspace stays for good: measure from after it
	w := tensor.Randn([]int{512, 512}, tensor.On(dev), tensor.RequiresGrad())
	x := tensor.Randn([]int{512, 512}, tensor.On(dev))
	base := dev.MemoryAllocated()
	var y *tensor.Tensor
	tensor.NoGrad(func() {
		h := x.Matmul(w)
		y = h.Exp()
		h.Release()
	})
	assert.False(t, y.RequiresGrad())
	assert.Equal(t, "", y.GradFn())
	assert.Equal(t, base+1*mib, dev.MemoryAllocated(), "only y itself")
	y.Release()

	// Same with grad: Exp saves its output, Matmul saves x and w. While
	// y (the graph's only handle) lives, its graph keeps y's storage.
	h := x.Matmul(w)
	y = h.Exp()
	assert.Equal(t, "ExpBackward0", y.GradFn())
	h.Release()
	yt := y.T() // a view: its storage reference, no graph
	y.Release()
	assert.Equal(t, base+1*mib, dev.MemoryAllocated(), "y released, its storage still viewed by yt")
	yt.Release()
	assert.Equal(t, base, dev.MemoryAllocated(), "releasing y released its graph, and yt the storage")
	runtime.KeepAlive(x)
}

func TestOutVariantsAllocateNothing(t *testing.T) {
	dev := newDev(t)
	a := tensor.Randn([]int{64, 32}, tensor.On(dev))
	b := tensor.Randn([]int{32, 16}, tensor.On(dev))
	out := tensor.Empty([]int{64, 16}, tensor.On(dev))
	sum := tensor.Empty([]int{64, 16}, tensor.On(dev))
	want := a.Matmul(b)
	before := allocations(dev)
	for range 5 {
		tensor.MatmulOut(out, a, b)
		tensor.AddOut(sum, out, out)
	}
	assert.Equal(t, before, allocations(dev), "out= variants allocate nothing")
	assert.InDeltaSlice(t, want.Float64s(), out.Float64s(), 1e-5)
	assert.InDeltaSlice(t, want.Mul(2).Float64s(), sum.Float64s(), 1e-5)

	wg := tensor.Randn([]int{32, 16}, tensor.On(dev), tensor.RequiresGrad())
	msg := panicMsg(func() { tensor.MatmulOut(out, a, wg) })
	assert.Contains(t, msg, "do not support automatic differentiation")
	msg = panicMsg(func() { tensor.MatmulOut(tensor.Empty([]int{2, 2}, tensor.On(dev)), a, b) })
	assert.Contains(t, msg, "out has shape [2, 2]")
}

func TestToCopiesBetweenDevices(t *testing.T) {
	dev := newDev(t)
	host := tensor.FromSlice([]float32{1, 2, 3, 4, 5, 6}, []int{2, 3}, tensor.OnHost(true))
	base := dev.MemoryAllocated()
	d := host.To(dev, true)
	assert.Equal(t, base+512, dev.MemoryAllocated())
	assert.Equal(t, host.Float64s(), d.Float64s())
	dt := d.T()
	back := dt.ToHost(false, false) // non-contiguous source
	dt.Release()
	assert.Equal(t, []float64{1, 4, 2, 5, 3, 6}, back.Float64s())
	same := d.To(dev, false)
	assert.True(t, same.SameStorage(d), "To the same device copies nothing")
	// ToHost does not free device memory (COURSE mistake 5)
	assert.Equal(t, base+512, dev.MemoryAllocated())
	d.Release()
	same.Release()
	assert.Equal(t, base, dev.MemoryAllocated())
}
