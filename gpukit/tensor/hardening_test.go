package tensor_test

import (
	"errors"
	"math"
	"math/big"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpumem/course/gpukit/alloc"
	"github.com/gpumem/course/gpukit/device"
	"github.com/gpumem/course/gpukit/device/simtest"
	"github.com/gpumem/course/gpukit/tensor"
)

// Issue 8, item 2: sizes computed from user input are checked before
// anything is allocated, viewed or iterated.
func TestOverflowingShapesAreRefused(t *testing.T) {
	dev := newDev(t)
	on := tensor.On(dev)
	one := func() *tensor.Tensor { return tensor.Ones([]int{1, 1}, on) }
	cases := []struct {
		name string
		fn   func()
		want string
	}{
		{"Empty 2^62+1 float32", func() { tensor.Empty([]int{1<<62 + 1}, on) }, "storage size calculation overflowed"},
		{"Zeros 2^32 x 2^32", func() { tensor.Zeros([]int{1 << 32, 1 << 32}, on) }, "overflows"},
		{"Ones 3 x 2^62", func() { tensor.Ones([]int{3, 1 << 62}, on) }, "overflows"},
		{"Full MaxInt x 2", func() { tensor.Full([]int{math.MaxInt, 2}, 1, on) }, "overflows"},
		{"Empty with a zero size", func() { tensor.Empty([]int{0, 1 << 62, 1 << 62}, on) }, "overflows"},
		{"negative size", func() { tensor.Zeros([]int{2, -3}, on) }, "negative dimension -3"},
		{"View of an empty tensor", func() { tensor.Zeros([]int{0}, on).View(0, 1<<32, 1<<32) }, "overflows"},
		{"Reshape with -1", func() { tensor.Zeros([]int{4}, on).Reshape(-1, 1<<32, 1<<32) }, "overflows"},
		{"Expand", func() { one().Expand(1<<40, 1<<40) }, "overflows"},
		{"Expand negative new dim", func() { one().Expand(-5, 1, 1) }, "invalid size -5"},
		{"broadcast of two expands", func() {
			a, b := one().Expand(1<<40, 1), one().Expand(1, 1<<40)
			a.Add(b)
		}, "overflows"},
		{"Cat of expands", func() {
			a := one().Expand(math.MaxInt/2+1, 1)
			tensor.Cat([]*tensor.Tensor{a, a}, 0)
		}, "add up to more than an int"},
		{"Narrow past the end", func() { tensor.Zeros([]int{4}, on).Narrow(0, 1, math.MaxInt) }, "out of bounds"},
		{"Arange NaN end", func() { tensor.Arange(0, math.NaN(), 1, on) }, "end is NaN"},
		{"Arange Inf end", func() { tensor.Arange(0, math.Inf(1), 1, on) }, "end is +Inf"},
		{"Arange NaN step", func() { tensor.Arange(0, 1, math.NaN(), on) }, "step is NaN"},
		{"Arange -Inf start", func() { tensor.Arange(math.Inf(-1), 0, 1, on) }, "start is -Inf"},
		{"Arange too many", func() { tensor.Arange(0, 1, 1e-300, on) }, "more than a tensor can hold"},
		{"Arange zero step", func() { tensor.Arange(0, 1, 0, on) }, "step must be nonzero"},
		{"Randperm negative", func() { tensor.Randperm(-1, on) }, "negative n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			base := dev.MemoryAllocated()
			err := tensor.Try(c.fn)
			require.Error(t, err)
			var te *tensor.Error
			require.True(t, errors.As(err, &te), "a *tensor.Error, got %T: %v", err, err)
			assert.True(t, strings.HasPrefix(err.Error(), "tensor: "), err.Error())
			assert.Contains(t, err.Error(), c.want)
			tensor.CollectGarbage()
			assert.Equal(t, base, dev.MemoryAllocated(), "nothing allocated")
		})
	}
	_, err := tensor.TryEmpty([]int{1 << 32, 1 << 32}, on)
	assert.ErrorContains(t, err, "tensor: shape [4294967296, 4294967296] has more elements than an int can count")
	// A huge step is not an overflow: one element, whose stride is never used.
	s := tensor.Arange(0, 8, 1, on).Slice(0, 1, 8, math.MaxInt)
	assert.Equal(t, []int{1}, s.Shape())
	assert.Equal(t, []float64{1}, s.Float64s())
	// A host tensor larger than the machine is refused, not a fatal error
	// of the Go runtime.
	if runtime.GOOS == "linux" {
		err = tensor.Try(func() { tensor.Empty([]int{1 << 60}, tensor.OnHost(false), tensor.Bool) })
		assert.ErrorContains(t, err, "larger than this machine's memory")
	}
	// A huge request that fits in an int64 is the allocator's out-of-memory error.
	err = tensor.Try(func() { tensor.Empty([]int{1 << 40}, on) })
	var oom *alloc.OutOfMemoryError
	assert.True(t, errors.As(err, &oom), "%v", err)
}

// FuzzShapes creates tensors of arbitrary shapes on a meta device: each is
// refused with a tensor error or the allocator's out-of-memory error, or
// has exactly the element count and byte size of the shape.
func FuzzShapes(f *testing.F) {
	f.Add(int64(1<<62+1), int64(1), int64(1), uint8(0))
	f.Add(int64(1<<32), int64(1<<32), int64(1), uint8(0))
	f.Add(int64(3), int64(1<<62), int64(1), uint8(0))
	f.Add(int64(0), int64(1<<62), int64(1<<62), uint8(4))
	f.Add(int64(2), int64(-3), int64(1), uint8(1))
	f.Add(int64(1<<20), int64(1<<20), int64(4), uint8(2))
	f.Fuzz(func(t *testing.T, a, b, c int64, dt uint8) {
		dev := newMeta(t)
		dtype := tensor.Dtype(dt % 7)
		shape := []int{int(a), int(b), int(c)}
		var x *tensor.Tensor
		err := tensor.Try(func() { x = tensor.Empty(shape, tensor.On(dev), dtype) })
		exact := new(big.Int).SetInt64(1)
		negative := false
		for _, d := range shape {
			negative = negative || d < 0
			exact.Mul(exact, big.NewInt(int64(d)))
		}
		if err != nil {
			var te *tensor.Error
			var oom *alloc.OutOfMemoryError
			if !errors.As(err, &te) && !errors.As(err, &oom) {
				t.Fatalf("shape %v: unexpected error %T: %v", shape, err, err)
			}
			assert.Equal(t, int64(0), dev.MemoryAllocated())
			return
		}
		require.False(t, negative, "shape %v accepted", shape)
		require.True(t, exact.IsInt64(), "shape %v accepted with %v elements", shape, exact)
		assert.Equal(t, exact.Int64(), int64(x.Numel()))
		assert.Equal(t, exact.Int64()*int64(dtype.Size()), x.Nbytes())
		x.Release()
	})
}

// FuzzArange: Arange on a meta device either refuses its bounds with a
// tensor error (NaN, infinite, inconsistent with the step, too many
// elements) or the allocator's out-of-memory error, or has exactly
// ceil((end-start)/step) elements.
func FuzzArange(f *testing.F) {
	f.Add(0.0, math.NaN(), 1.0)
	f.Add(0.0, math.Inf(1), 1.0)
	f.Add(math.Inf(-1), 0.0, 1.0)
	f.Add(0.0, 1.0, math.NaN())
	f.Add(0.0, 10.0, 0.0)
	f.Add(0.0, 1.0, 1e-300)
	f.Add(-1e308, 1e308, 1.0)
	f.Add(0.0, 10.0, 3.0)
	f.Add(5.0, -5.0, -0.5)
	f.Fuzz(func(t *testing.T, start, end, step float64) {
		dev := newMeta(t)
		var x *tensor.Tensor
		err := tensor.Try(func() { x = tensor.Arange(start, end, step, tensor.On(dev)) })
		if err != nil {
			var te *tensor.Error
			var oom *alloc.OutOfMemoryError
			if !errors.As(err, &te) && !errors.As(err, &oom) {
				t.Fatalf("Arange(%v, %v, %v): unexpected error %T: %v", start, end, step, err, err)
			}
			return
		}
		require.False(t, math.IsNaN(start) || math.IsNaN(end) || math.IsNaN(step), "NaN accepted")
		require.False(t, math.IsInf(start, 0) || math.IsInf(end, 0) || math.IsInf(step, 0), "Inf accepted")
		want := math.Ceil((end - start) / step)
		assert.Equal(t, want, float64(x.Numel()), "Arange(%v, %v, %v)", start, end, step)
		x.Release()
	})
}

// Issue 8, item 3: backward passes on many goroutines that share a leaf
// lose no gradient (run with -race).
func TestConcurrentBackwardSharedLeaf(t *testing.T) {
	dev := newDev(t)
	w := tensor.Zeros([]int{8}, tensor.On(dev), tensor.Float64, tensor.RequiresGrad())
	const workers = 64
	var wg sync.WaitGroup
	for k := 1; k <= workers; k++ {
		wg.Go(func() {
			loss := w.Mul(float64(k)).Sum() // d loss / d w = k
			loss.Backward()
			loss.Release()
		})
	}
	wg.Wait()
	want := float64(workers * (workers + 1) / 2)
	for i, g := range w.Grad().Float64s() {
		assert.Equal(t, want, g, "element %d", i)
	}
}

// Issue 8, item 7: in-place arithmetic that would change a Bool (or an
// integer) tensor's type is refused with PyTorch's message.
func TestInPlaceResultTypeIsChecked(t *testing.T) {
	dev := newDev(t)
	on := tensor.On(dev)
	bools := func() *tensor.Tensor { return tensor.FromSlice([]bool{true, false}, []int{2}, on) }
	ints := func() *tensor.Tensor { return tensor.FromSlice([]int64{1, 2}, []int{2}, on) }
	refused := []struct {
		name string
		fn   func()
		want string
	}{
		{"bool += int", func() { bools().AddInPlace(1) }, "AddInPlace: result type Long can't be cast to the desired output type Bool"},
		{"bool += float", func() { bools().AddInPlace(1.5) }, "result type Float can't be cast to the desired output type Bool"},
		{"bool *= int", func() { bools().MulInPlace(2) }, "result type Long can't be cast to the desired output type Bool"},
		{"bool /= bool", func() { b := bools(); b.DivInPlace(bools()) }, "result type Float can't be cast to the desired output type Bool"},
		{"bool -= bool", func() { b := bools(); b.SubInPlace(bools()) }, "subtraction, the `-` operator, with a bool tensor is not supported"},
		{"int64 += float", func() { ints().AddInPlace(0.5) }, "result type Float can't be cast to the desired output type Long"},
		{"int64 /= int", func() { ints().DivInPlace(2) }, "result type Float can't be cast to the desired output type Long"},
		{"DivOut into int64", func() { a := ints(); tensor.DivOut(a, a, ints()) }, "DivOut: result type Float can't be cast to the desired output type Long"},
		{"SubOut into bool", func() { a := bools(); tensor.SubOut(a, a, bools()) }, "SubOut: subtraction"},
		{"bool - bool", func() { bools().Sub(bools()) }, "Sub: subtraction, the `-` operator, with a bool tensor"},
	}
	for _, c := range refused {
		t.Run(c.name, func(t *testing.T) {
			assert.Contains(t, panicMsg(c.fn), c.want)
		})
	}
	// What keeps the type is allowed: bool + bool is logical or, int + int.
	b := bools()
	b.AddInPlace(bools())
	assert.Equal(t, []float64{1, 0}, b.Float64s())
	i := ints()
	i.AddInPlace(2)
	i.MulInPlace(int64(3))
	assert.Equal(t, []float64{9, 12}, i.Float64s())
	f := tensor.Ones([]int{2}, on)
	f.AddInPlace(1)
	assert.Equal(t, []float64{2, 2}, f.Float64s())
}

func TestTryNil(t *testing.T) {
	err := tensor.Try(nil)
	assert.EqualError(t, err, "tensor: Try: fn is nil; pass the function to run")
}

// Issue 10: an op saves for backward only what the gradients it will
// compute use (PyTorch's should_compute_output). Measured by memory: after
// the forward pass, the inputs' handles are released; what stays
// allocated is the output and what the node saved.
func TestSaveOnlyWhatNeededGradientsUse(t *testing.T) {
	const kib = 1 << 10
	type op struct {
		name         string
		aShape       []int
		bShape       []int
		fn           func(a, b *tensor.Tensor) *tensor.Tensor
		outBytes     int64
		aDiff, bDiff bool // which inputs can require grad
	}
	idx := func(dev *device.Device, n int) *tensor.Tensor {
		return tensor.Randint(0, 4, []int{n}, tensor.On(dev))
	}
	// a is 256 KiB, b a different size, so that the saved set is visible.
	ops := []op{
		{"Matmul", []int{128, 512}, []int{512, 64}, func(a, b *tensor.Tensor) *tensor.Tensor { return a.Matmul(b) }, 32 * kib, true, true},
		{"Mul", []int{256, 256}, []int{256}, func(a, b *tensor.Tensor) *tensor.Tensor { return a.Mul(b) }, 256 * kib, true, true},
		{"Div", []int{256, 256}, []int{256}, func(a, b *tensor.Tensor) *tensor.Tensor { return a.Div(b) }, 256 * kib, true, true},
	}
	type save struct{ a, b bool }
	rules := map[string]func(ra, rb bool) save{
		"Matmul": func(ra, rb bool) save { return save{a: rb, b: ra} },
		"Mul":    func(ra, rb bool) save { return save{a: rb, b: ra} },
		"Div":    func(ra, rb bool) save { return save{a: rb, b: true} },
	}
	for _, o := range ops {
		for _, req := range []save{{true, false}, {false, true}, {true, true}} {
			t.Run(o.name+map[save]string{{true, false}: "/a requires grad", {false, true}: "/b requires grad", {true, true}: "/both"}[req], func(t *testing.T) {
				noGC(t)
				dev := newDev(t)
				simtest.WarmBlas(t, dev) // the first product's cuBLAS workspace stays for good: measure from after it
				base := dev.MemoryAllocated()
				a := tensor.Randn(o.aShape, tensor.On(dev)).SetRequiresGrad(req.a)
				b := tensor.Rand(o.bShape, tensor.On(dev)).AddInPlace(1).SetRequiresGrad(req.b)
				aBytes, bBytes := a.Nbytes(), b.Nbytes()
				out := o.fn(a, b)
				a.Release()
				b.Release()
				want := rules[o.name](req.a, req.b)
				held := o.outBytes
				if want.a {
					held += aBytes
				}
				if want.b {
					held += bBytes
				}
				assert.Equal(t, base+held, dev.MemoryAllocated(), "saved a: %v, saved b: %v", want.a, want.b)
				out.Release()
				assert.Equal(t, base, dev.MemoryAllocated(), "the graph is released with its output")
			})
		}
	}
	t.Run("ScatterAdd", func(t *testing.T) {
		noGC(t)
		dev := newDev(t)
		base := dev.MemoryAllocated()
		for _, srcReq := range []bool{false, true} {
			x := tensor.Zeros([]int{4, 1024}, tensor.On(dev), tensor.RequiresGrad()) // 16 KiB
			src := tensor.Ones([]int{4, 1024}, tensor.On(dev)).SetRequiresGrad(srcReq)
			index := tensor.Randint(0, 4, []int{4, 1024}, tensor.On(dev)) // 32 KiB
			out := x.ScatterAdd(0, index, src)
			x.Release()
			src.Release()
			index.Release()
			held := out.Nbytes()
			if srcReq {
				held += 32 * kib // the index, for src's gradient
			}
			assert.Equal(t, base+held, dev.MemoryAllocated(), "src requires grad: %v", srcReq)
			out.Release()
		}
	})
	t.Run("IndexSelect and Gather save the index, not the source", func(t *testing.T) {
		noGC(t)
		dev := newDev(t)
		base := dev.MemoryAllocated()
		w := tensor.Randn([]int{4, 16 * 1024}, tensor.On(dev), tensor.RequiresGrad()) // 256 KiB
		ids := idx(dev, 2)                                                            // 16 B → one 512 B block
		sel := w.IndexSelect(0, ids)                                                  // 128 KiB
		gi := tensor.Zeros([]int{1, 16 * 1024}, tensor.On(dev), tensor.Int64)         // 128 KiB
		gat := w.Gather(0, gi)                                                        // 64 KiB
		w.Release()
		ids.Release()
		gi.Release()
		assert.Equal(t, base+512+128*kib+128*kib+64*kib, dev.MemoryAllocated(), "w is freed; both indices stay")
		sel.Release()
		gat.Release()
		assert.Equal(t, base, dev.MemoryAllocated())
	})
}

// The gradients an op computes with part of its operands saved equal
// those it computes with everything saved.
func TestPartialSavesGiveTheSameGradients(t *testing.T) {
	dev := newDev(t)
	on := tensor.On(dev)
	ops := map[string]func(a, b *tensor.Tensor) *tensor.Tensor{
		"Matmul":   func(a, b *tensor.Tensor) *tensor.Tensor { return a.Matmul(b.View(3, 3)) },
		"Mul":      func(a, b *tensor.Tensor) *tensor.Tensor { return a.Mul(b.View(3, 3)) },
		"Div":      func(a, b *tensor.Tensor) *tensor.Tensor { return a.Div(b.View(3, 3)) },
		"bmm":      func(a, b *tensor.Tensor) *tensor.Tensor { return a.View(1, 3, 3).Matmul(b.View(1, 3, 3)) },
		"Maximum":  func(a, b *tensor.Tensor) *tensor.Tensor { return a.Maximum(b.View(3, 3)) },
		"MulInPlc": func(a, b *tensor.Tensor) *tensor.Tensor { return a.Mul(1).MulInPlace(b.View(3, 3)) },
	}
	av := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9}
	bv := []float64{2, 1, 4, 3, 6, 5, 8, 7, 10}
	grads := func(fn func(a, b *tensor.Tensor) *tensor.Tensor, ra, rb bool) (ga, gb []float64) {
		a := tensor.FromSlice(av, []int{3, 3}, on).SetRequiresGrad(ra)
		b := tensor.FromSlice(bv, []int{9}, on).SetRequiresGrad(rb)
		fn(a, b).Pow(2).Sum().Backward()
		if ra {
			ga = a.Grad().Float64s()
		}
		if rb {
			gb = b.Grad().Float64s()
		}
		return ga, gb
	}
	for name, fn := range ops {
		wantA, wantB := grads(fn, true, true)
		gotA, _ := grads(fn, true, false)
		_, gotB := grads(fn, false, true)
		assert.InDeltaSlice(t, wantA, gotA, 1e-9, name)
		assert.InDeltaSlice(t, wantB, gotB, 1e-9, name)
	}
}

// Node names as PyTorch prints them (grad_fn), checked against
// tools/autograd/derivatives.yaml: an overload's number is its position
// among the entries of that name; Python numbers are wrapped into tensors,
// so x + 1 is add.Tensor (AddBackward0).
func TestNodeNamesFollowPyTorch(t *testing.T) {
	dev := newDev(t)
	x := tensor.Randn([]int{2, 3}, tensor.On(dev), tensor.RequiresGrad())
	y := tensor.Randn([]int{2, 3}, tensor.On(dev), tensor.RequiresGrad())
	w := tensor.Randn([]int{3, 4}, tensor.On(dev), tensor.RequiresGrad())
	ids := tensor.FromSlice([]int64{0, 1}, []int{2}, tensor.On(dev))
	cases := []struct {
		got  func() *tensor.Tensor
		want string
	}{
		{func() *tensor.Tensor { return x.Add(y) }, "AddBackward0"},
		{func() *tensor.Tensor { return x.Add(1) }, "AddBackward0"},
		{func() *tensor.Tensor { return x.Sub(1) }, "SubBackward0"},
		{func() *tensor.Tensor { return x.Mul(y) }, "MulBackward0"},
		{func() *tensor.Tensor { return x.Mul(2) }, "MulBackward0"},
		{func() *tensor.Tensor { return x.Div(2) }, "DivBackward0"},
		{func() *tensor.Tensor { return x.Mul(1).AddInPlace(1) }, "AddBackward0"},
		{func() *tensor.Tensor { return x.Pow(2) }, "PowBackward0"},
		{func() *tensor.Tensor { return x.Sum() }, "SumBackward0"},
		{func() *tensor.Tensor { return x.Sum(1) }, "SumBackward1"},
		{func() *tensor.Tensor { return x.SumDims([]int{0}, true) }, "SumBackward1"},
		{func() *tensor.Tensor { return x.Mean() }, "MeanBackward0"},
		{func() *tensor.Tensor { return x.Mean(0) }, "MeanBackward1"},
		{func() *tensor.Tensor { return x.Matmul(w) }, "MmBackward0"},
		{func() *tensor.Tensor { return x.View(1, 2, 3).Matmul(w.View(1, 3, 4)) }, "BmmBackward0"},
		{func() *tensor.Tensor { return x.Clamp(-1, 1) }, "ClampBackward1"},
		{func() *tensor.Tensor { return x.Max(1, false) }, "MaxBackward0"},
		{func() *tensor.Tensor { return x.Maximum(y) }, "MaximumBackward0"},
		{func() *tensor.Tensor { return x.Var(nil, false, true) }, "VarBackward0"},
		{func() *tensor.Tensor { return x.IndexSelect(0, ids) }, "IndexSelectBackward0"},
		{func() *tensor.Tensor { return x.T() }, "TransposeBackward0"},
		{func() *tensor.Tensor { return x.View(6) }, "ViewBackward0"},
		{func() *tensor.Tensor { return x.Expand(2, 2, 3) }, "ExpandBackward0"},
		{func() *tensor.Tensor { return tensor.Cat([]*tensor.Tensor{x, y}, 0) }, "CatBackward0"},
		{func() *tensor.Tensor { return x.Softmax(1) }, "SoftmaxBackward0"},
		{func() *tensor.Tensor { return tensor.MSELoss(x, y) }, "MseLossBackward0"},
		{func() *tensor.Tensor { return tensor.CrossEntropy(x, ids) }, "NllLossBackward0"},
		{func() *tensor.Tensor { return x.Mul(1).CopyFrom(y) }, "CopyBackwards"},
	}
	for _, c := range cases {
		out := c.got()
		assert.Equal(t, c.want, out.GradFn())
		out.Release()
	}
}
