package tensor_test

import (
	"runtime"
	"runtime/debug"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpumem/course/gpukit/device"
	"github.com/gpumem/course/gpukit/device/simtest"
	"github.com/gpumem/course/gpukit/tensor"
)

// noGC turns the collector off for the rest of the test, so that what a
// test measures can only come from Release.
func noGC(t *testing.T) {
	old := debug.SetGCPercent(-1)
	t.Cleanup(func() { debug.SetGCPercent(old) })
}

// leafMiB starts a graph test: the collector off, a fresh device, and on
// it x, 1 MiB that requires grad; base is what the device holds then.
func leafMiB(t *testing.T) (dev *device.Device, x *tensor.Tensor, base int64) {
	noGC(t)
	dev = newDev(t)
	x = tensor.Randn([]int{1024, 256}, tensor.On(dev), tensor.RequiresGrad())
	return dev, x, dev.MemoryAllocated()
}

type testMLP struct{ ws, bs []*tensor.Tensor }

func newTestMLP(dev *device.Device, layers, width int) testMLP {
	var m testMLP
	for range layers {
		m.ws = append(m.ws, tensor.Randn([]int{width, width}, tensor.On(dev), tensor.RequiresGrad()))
		m.bs = append(m.bs, tensor.Zeros([]int{width}, tensor.On(dev), tensor.RequiresGrad()))
	}
	return m
}

// forward releases its intermediates: what stays allocated is what the
// graph saved, plus the output.
func (m testMLP) forward(x *tensor.Tensor) *tensor.Tensor {
	h := x
	for i := range m.ws {
		z := h.Matmul(m.ws[i])
		a := z.Add(m.bs[i])
		z.Release()
		next := a.Relu()
		a.Release()
		if h != x {
			h.Release()
		}
		h = next
	}
	return h
}

func TestReleasingTheLossFreesTheGraph(t *testing.T) {
	noGC(t)
	dev := newDev(t)
	simtest.WarmBlas(t, dev) // the first product's cuBLAS workspace stays for good: measure from after it
	m := newTestMLP(dev, 4, 256)
	x := tensor.Randn([]int{512, 256}, tensor.On(dev))
	base := dev.MemoryAllocated()

	out := m.forward(x)
	sq := out.Pow(2)
	loss := sq.Mean()
	sq.Release()
	out.Release()
	// The four ReLU outputs (512 KiB each) are saved; Pow saves out (the
	// last of them) and the loss is 512 bytes.
	assert.Equal(t, base+4*512<<10+512, dev.MemoryAllocated())
	assert.Contains(t, loss.GradFn(), "MeanBackward")

	loss.Release()
	assert.Equal(t, base, dev.MemoryAllocated(), "releasing the loss released the whole graph, without the collector")
	msg := panicMsg(func() { loss.Backward() })
	assert.Contains(t, msg, "use of a released tensor")
	runtime.KeepAlive(m)
	runtime.KeepAlive(x)
}

func TestSharedSubgraphLivesUntilBothLossesGo(t *testing.T) {
	dev, x, base := leafMiB(t)

	h := x.Exp() // saves h (1 MiB)
	l1 := h.Sum()
	h3 := h.Mul(3) // MulBackward saves nothing for a number
	l2 := h3.Mean()
	h3.Release()
	h.Release()
	assert.Equal(t, base+mib+2*512, dev.MemoryAllocated(), "h kept by ExpBackward0, shared by both graphs")

	l1.Release()
	assert.Equal(t, base+mib+512, dev.MemoryAllocated(), "l2's graph still refers to ExpBackward0")
	l1.Release() // idempotent
	assert.Equal(t, base+mib+512, dev.MemoryAllocated())

	l2.Backward()
	assert.Equal(t, base+512+mib, dev.MemoryAllocated(), "backward freed h and made x.Grad() (1 MiB)")
	l2.Release()
	x.SetGrad(nil)
	assert.Equal(t, base, dev.MemoryAllocated())
	runtime.KeepAlive(x)
}

func TestReleaseAfterBackwardAndRetainGraph(t *testing.T) {
	dev, x, base := leafMiB(t)

	// After a backward without RetainGraph the saved tensors are gone
	// already; releasing the loss releases nothing twice. With RetainGraph
	// the graph keeps them until the loss goes.
	for _, tc := range []struct {
		opts  []tensor.BackwardOption
		after int64 // allocated once the loss is back-propagated
	}{
		{nil, base + 512},
		{[]tensor.BackwardOption{tensor.RetainGraph()}, base + mib + 512},
	} {
		y := x.Exp()
		loss := y.Sum()
		y.Release()
		loss.Backward(tc.opts...)
		x.SetGrad(nil)
		assert.Equal(t, tc.after, dev.MemoryAllocated())
		loss.Release()
		assert.Equal(t, base, dev.MemoryAllocated())
	}
	runtime.KeepAlive(x)
}

func TestInPlaceKeepsThePreviousNode(t *testing.T) {
	dev, x, base := leafMiB(t)
	y := x.Pow(2) // saves x
	y.MulInPlace(3)
	assert.Equal(t, "MulBackward0", y.GradFn())
	z := y.Exp() // saves its output z
	y.Release()
	loss := z.Sum()
	z.Release()
	assert.Equal(t, base+mib+512, dev.MemoryAllocated(), "z, saved by ExpBackward0 (PowBackward0 saved x, not y), and the loss")
	loss.Backward()
	got := x.Grad().Float64s()
	xs := x.Float64s()
	for i := range 5 {
		want := 6 * xs[i] * exp(3*xs[i]*xs[i])
		assert.InDelta(t, want, got[i], 1e-3*max(1, abs(want)))
	}
	x.SetGrad(nil)
	loss.Release()
	assert.Equal(t, base, dev.MemoryAllocated())
	runtime.KeepAlive(x)
}

func TestDroppedGraphIsCollected(t *testing.T) {
	dev := newDev(t)
	simtest.WarmBlas(t, dev) // the first product's cuBLAS workspace stays for good: measure from after it
	m := newTestMLP(dev, 3, 128)
	x := tensor.Randn([]int{256, 128}, tensor.On(dev))
	tensor.CollectGarbage()
	base := dev.MemoryAllocated()
	func() {
		loss := m.forward(x).Sum() // neither the output nor the loss is released
		_ = loss
	}()
	require.Greater(t, dev.MemoryAllocated(), base)
	n := tensor.CollectGarbage()
	assert.Equal(t, 2, n, "the output and the loss")
	assert.Equal(t, base, dev.MemoryAllocated(), "their graph, with its saved tensors, went with them")
	runtime.KeepAlive(m)
	runtime.KeepAlive(x)
}

func TestDroppedParametersAreCollectedWithTheirGraph(t *testing.T) {
	dev := newDev(t)
	tensor.CollectGarbage()
	base := dev.MemoryAllocated()
	func() {
		w := tensor.Randn([]int{64, 64}, tensor.On(dev), tensor.RequiresGrad())
		loss := w.Exp().Sum()
		_ = loss
	}()
	// The graph's edge keeps w reachable until the graph is released;
	// CollectGarbage collects again when a round released something.
	assert.Equal(t, 3, tensor.CollectGarbage(), "w, w.Exp() and the loss")
	assert.Equal(t, base, dev.MemoryAllocated())
}

func TestConcurrentGraphsReleaseAndCollect(t *testing.T) {
	// Run with -race: graphs built, released or dropped on several
	// goroutines while another one collects.
	dev := newDev(t)
	simtest.WarmBlas(t, dev) // the first product's cuBLAS workspace stays for good: measure from after it
	tensor.CollectGarbage()
	base := dev.MemoryAllocated()
	stop := make(chan struct{})
	var collector sync.WaitGroup
	collector.Add(1)
	go func() {
		defer collector.Done()
		for {
			select {
			case <-stop:
				return
			default:
				tensor.CollectGarbage()
			}
		}
	}()
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Each goroutine its own parameter: gradients accumulate in place.
			w := tensor.Randn([]int{16, 16}, tensor.On(dev), tensor.Float64, tensor.RequiresGrad())
			defer func() { w.SetGrad(nil); w.Release() }()
			for i := range 30 {
				x := tensor.Randn([]int{8, 16}, tensor.On(dev), tensor.Float64)
				h := x.Matmul(w).Tanh()
				l1 := h.Sum()
				l2 := h.Pow(2).Mean()
				switch (g + i) % 3 {
				case 0: // release everything
					h.Release()
					l1.Release()
					l2.Release()
				case 1: // backward through one, drop the rest
					tensor.NoGrad(func() {}) // exercise the mode map too
					l2.Backward()
				case 2: // drop everything
				}
				x.Release()
			}
		}()
	}
	wg.Wait()
	close(stop)
	collector.Wait()
	tensor.CollectGarbage()
	assert.Equal(t, base, dev.MemoryAllocated())
}

func TestRandint(t *testing.T) {
	dev := newDev(t)
	a := tensor.Randint(-3, 5, []int{1000}, tensor.On(dev), tensor.WithGenerator(tensor.NewGenerator(7)))
	b := tensor.Randint(-3, 5, []int{1000}, tensor.On(dev), tensor.WithGenerator(tensor.NewGenerator(7)))
	assert.Equal(t, tensor.Int64, a.Dtype())
	assert.Equal(t, a.Float64s(), b.Float64s(), "same seed, same values")
	seen := map[float64]bool{}
	for _, v := range a.Float64s() {
		require.True(t, v >= -3 && v < 5, "%v out of [-3, 5)", v)
		seen[v] = true
	}
	assert.Len(t, seen, 8, "every value of the range appears in 1000 draws")
	c := tensor.Randint(0, 10, []int{2, 3}, tensor.On(dev), tensor.Int32)
	assert.Equal(t, tensor.Int32, c.Dtype())
	assert.Equal(t, []int{2, 3}, c.Shape())
	big := tensor.Randint(1<<60, 1<<60+2, []int{4}, tensor.On(dev))
	for _, v := range big.Float64s() {
		assert.GreaterOrEqual(t, v, float64(1<<60))
	}
	assert.Contains(t, panicMsg(func() { tensor.Randint(3, 3, []int{1}) }), "empty range")
}

func TestRandperm(t *testing.T) {
	dev := newDev(t)
	p := tensor.Randperm(100, tensor.On(dev), tensor.WithGenerator(tensor.NewGenerator(1)))
	assert.Equal(t, tensor.Int64, p.Dtype())
	seen := make([]bool, 100)
	for _, v := range p.Float64s() {
		seen[int(v)] = true
	}
	assert.NotContains(t, seen, false, "a permutation of 0..99")
	assert.Equal(t, tensor.NewGenerator(1).Perm(100), tensor.NewGenerator(1).Perm(100))
}

func TestCopyFromAcrossDevices(t *testing.T) {
	dev := newDev(t)
	buf := tensor.Empty([]int{64, 32}, tensor.On(dev))
	host := tensor.Randn([]int{64, 32}, tensor.OnHost(true))
	before := allocations(dev)
	for range 5 {
		buf.CopyFrom(host) // host → device into the preallocated buffer
	}
	assert.Equal(t, before, allocations(dev), "refilling a device buffer from the host allocates nothing")
	assert.True(t, equalValues(host, buf))
	assert.Equal(t, int64(5), buf.Version())

	back := tensor.Zeros([]int{64, 32}, tensor.OnHost(false))
	back.CopyFrom(buf) // device → host
	assert.True(t, equalValues(host, back))

	// Peer copies find their devices in the registry: use two opened ones.
	sim0, other := device.MustOpen("sim:0"), device.MustOpen("sim:1")
	buf0 := tensor.Empty([]int{64, 32}, tensor.On(sim0))
	buf0.CopyFrom(host)
	peer := tensor.Zeros([]int{64, 32}, tensor.On(other))
	n0 := allocations(other)
	peer.CopyFrom(buf0) // device → device
	assert.Equal(t, n0, allocations(other))
	assert.True(t, equalValues(host, peer))

	// A contiguous part of a buffer (a row), broadcasting and conversion
	// on the host side.
	row := buf.Select(0, 3)
	row.CopyFrom(tensor.FromSlice([]float64{7}, []int{1}, tensor.OnHost(false)))
	assert.Equal(t, 7.0, buf.At(3, 31))
	assert.Equal(t, host.At(2, 31), buf.At(2, 31), "the row before is untouched")
	assert.Equal(t, host.At(4, 0), buf.At(4, 0), "the row after is untouched")
	ints := tensor.Zeros([]int{2}, tensor.OnHost(false), tensor.Int64)
	ints.CopyFrom(tensor.FromSlice([]float32{1.9, -2.5}, []int{2}, tensor.On(dev)))
	assert.Equal(t, []float64{1, -2}, ints.Float64s())

	// A non-contiguous destination goes through a temporary.
	col := buf.Select(1, 0)
	n0 = allocations(dev)
	col.CopyFrom(tensor.Arange(0, 64, 1, tensor.OnHost(false), tensor.Float32))
	assert.Equal(t, n0+1, allocations(dev), "one temporary")
	assert.Equal(t, 63.0, buf.At(63, 0))

	msg := panicMsg(func() { peer.CopyFrom(tensor.Zeros([]int{64, 32}, tensor.On(dev), tensor.Float64)) })
	assert.Contains(t, msg, "needs the same dtype")

	// The gradient goes back to the source's device.
	src := tensor.Randn([]int{4}, tensor.OnHost(false), tensor.RequiresGrad())
	dst := tensor.Zeros([]int{2, 4}, tensor.On(dev))
	dst.CopyFrom(src)
	dst.Sum().Backward()
	assert.True(t, src.Grad().IsHost())
	assert.Equal(t, []float64{2, 2, 2, 2}, src.Grad().Float64s())
}

// equalValues compares two tensors' values without printing thousands of
// numbers when they differ.
func equalValues(a, b *tensor.Tensor) bool {
	return slices.Equal(a.Float64s(), b.Float64s())
}
