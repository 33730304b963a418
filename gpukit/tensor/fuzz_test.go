package tensor_test

import (
	"errors"
	"runtime"
	"runtime/debug"
	"slices"
	"testing"

	"github.com/gpumem/course/gpukit/alloc"
	"github.com/gpumem/course/gpukit/device"
	"github.com/gpumem/course/gpukit/device/simtest"
	"github.com/gpumem/course/gpukit/tensor"
)

// refView is an independent model of a view: its shape, and a function
// from an index of the view to the flat index of the base tensor.
type refView struct {
	shape []int
	base  func(idx []int) int
}

func numel(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

// unravel turns a row-major flat index into an index of shape.
func unravel(k int, shape []int) []int {
	idx := make([]int, len(shape))
	for d := len(shape) - 1; d >= 0; d-- {
		idx[d] = k % shape[d]
		k /= shape[d]
	}
	return idx
}

func ravel(idx, shape []int) int {
	k := 0
	for d, i := range idx {
		k = k*shape[d] + i
	}
	return k
}

// FuzzViews applies random chains of view operations to a tensor whose
// values are their own flat indices, and checks every element against the
// model, that views allocate nothing (Reshape only when View cannot
// express the layout), and that releasing everything returns all memory.
func FuzzViews(f *testing.F) {
	f.Add(uint8(3), uint8(4), uint8(5), []byte{0, 1, 2, 3, 4, 5, 6, 7})
	f.Add(uint8(1), uint8(6), uint8(2), []byte{5, 5, 0, 7, 1, 6, 3, 2, 4})
	f.Add(uint8(2), uint8(1), uint8(7), []byte{6, 0, 6, 1, 6, 2})
	f.Fuzz(func(t *testing.T, a, b, c uint8, ops []byte) {
		shape := []int{int(a%4) + 1, int(b%4) + 1, int(c%4) + 1}
		dev := newDev(t)
		baseline := dev.MemoryAllocated()
		flat := tensor.Arange(0, float64(numel(shape)), 1, tensor.On(dev), tensor.Float64)
		base := flat.View(shape...)
		flat.Release()
		cur := base
		ref := refView{shape: shape, base: func(idx []int) int { return ravel(idx, shape) }}
		live := []*tensor.Tensor{base}
		if len(ops) > 24 {
			ops = ops[:24]
		}
		for i, op := range ops {
			arg := int(op >> 3)
			rank := len(ref.shape)
			allocsBefore := dev.Stats()["allocation.all.allocated"]
			mayAllocate := false
			var next *tensor.Tensor
			var nextRef refView
			prev := ref
			switch op % 8 {
			case 0: // transpose
				if rank < 2 {
					continue
				}
				d0, d1 := arg%rank, (arg/rank)%rank
				next = cur.Transpose(d0, d1)
				s := slices.Clone(prev.shape)
				s[d0], s[d1] = s[d1], s[d0]
				nextRef = refView{s, func(idx []int) int {
					j := slices.Clone(idx)
					j[d0], j[d1] = j[d1], j[d0]
					return prev.base(j)
				}}
			case 1: // narrow
				if rank == 0 {
					continue
				}
				d := arg % rank
				size := prev.shape[d]
				start := (arg / rank) % size
				length := 1 + (arg/7)%(size-start)
				next = cur.Narrow(d, start, length)
				s := slices.Clone(prev.shape)
				s[d] = length
				nextRef = refView{s, func(idx []int) int {
					j := slices.Clone(idx)
					j[d] += start
					return prev.base(j)
				}}
			case 2: // select
				if rank == 0 {
					continue
				}
				d := arg % rank
				at := (arg / rank) % prev.shape[d]
				next = cur.Select(d, at)
				nextRef = refView{slices.Delete(slices.Clone(prev.shape), d, d+1), func(idx []int) int {
					return prev.base(slices.Insert(slices.Clone(idx), d, at))
				}}
			case 3: // unsqueeze
				if rank >= 5 {
					continue
				}
				d := arg % (rank + 1)
				next = cur.Unsqueeze(d)
				nextRef = refView{slices.Insert(slices.Clone(prev.shape), d, 1), func(idx []int) int {
					return prev.base(slices.Delete(slices.Clone(idx), d, d+1))
				}}
			case 4: // expand a dimension of size 1
				d := slices.Index(prev.shape, 1)
				if d < 0 {
					continue
				}
				s := slices.Clone(prev.shape)
				s[d] = 1 + arg%3
				next = cur.Expand(s...)
				nextRef = refView{s, func(idx []int) int {
					j := slices.Clone(idx)
					j[d] = 0
					return prev.base(j)
				}}
			case 5, 6: // view or reshape to a flat or regrouped shape
				n := numel(prev.shape)
				s := []int{n}
				if k := 1 + arg%4; n%k == 0 && op%8 == 6 {
					s = []int{k, n / k}
				}
				if err := tensor.Try(func() { next = cur.View(s...) }); err != nil {
					next = cur.Reshape(s...) // View cannot: Reshape may copy
					mayAllocate = true
				}
				nextRef = refView{s, func(idx []int) int {
					return prev.base(unravel(ravel(idx, s), prev.shape))
				}}
			case 7: // contiguous
				next = cur.Contiguous()
				mayAllocate = !cur.IsContiguous()
				nextRef = prev
			}
			if next == nil {
				continue
			}
			if got := dev.Stats()["allocation.all.allocated"] - allocsBefore; got != 0 && !mayAllocate {
				t.Fatalf("op %d (%d) on shape %v allocated %d blocks", i, op%8, prev.shape, got)
			}
			if !slices.Equal(next.Shape(), nextRef.shape) {
				t.Fatalf("op %d (%d): shape %v, model %v", i, op%8, next.Shape(), nextRef.shape)
			}
			values := next.Float64s()
			for k, v := range values {
				if want := float64(nextRef.base(unravel(k, nextRef.shape))); v != want {
					t.Fatalf("op %d (%d): element %v of shape %v (strides %v, offset %d) = %v, model %v",
						i, op%8, unravel(k, nextRef.shape), next.Shape(), next.Stride(), next.StorageOffset(), v, want)
				}
			}
			live = append(live, next)
			cur, ref = next, nextRef
		}
		for _, x := range live {
			x.Release()
		}
		runtime.KeepAlive(live)
		if got := dev.MemoryAllocated(); got != baseline {
			t.Fatalf("after releasing every tensor, %d bytes are allocated (baseline %d)", got, baseline)
		}
	})
}

// FuzzGraphRelease builds random autograd graphs, runs backward passes and
// releases tensors in random order, with the collector off: once every
// tensor and parameter is released, allocated memory must be back at its
// baseline (node reference counts free every saved tensor exactly once).
func FuzzGraphRelease(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9})
	f.Add([]byte{6, 6, 9, 8, 0, 8, 8, 1, 9, 2})
	f.Add([]byte{3, 11, 19, 8, 25, 9, 33, 8})
	f.Add([]byte{0, 26, 21, 42}) // y := x+p; z := y²; y += 1; backward(z) refuses
	f.Fuzz(func(t *testing.T, ops []byte) {
		runGraph(t, newDev(t), 2, 3, tensor.Float64, ops)
	})
}

// FuzzOutOfMemory runs the same random graphs with tensors of 256 KiB on
// a device of 6 MiB (and the 20 MiB segment of cuBLAS's workspace), so
// that ops and backward passes run out of memory part way: a failed op
// must return everything it had allocated.
func FuzzOutOfMemory(f *testing.F) {
	f.Add([]byte{0, 1, 5, 21, 37, 4, 9, 25, 41, 57, 9})
	f.Add([]byte{5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 9, 8, 9})
	f.Fuzz(func(t *testing.T, ops []byte) {
		runGraph(t, newDevCap(t, 26<<20), 128, 512, tensor.Float32, ops)
	})
}

// runGraph interprets ops as a program over rows×cols tensors on dev (see
// the cases), with every op that allocates run under Try so that running
// out of memory is an outcome, then releases everything and checks that
// allocated memory is back at its baseline. The collector is off
// throughout, so nothing is freed behind the program's back; only after an
// out-of-memory error, whose op may have left temporaries to the collector
// fallback (see the package doc), is CollectGarbage called first.
func runGraph(t *testing.T, dev *device.Device, rows, cols int, dt tensor.Dtype, ops []byte) {
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	oom := false
	refused := func(what string, err error) {
		t.Logf("%s refused: %v", what, err)
		var o *alloc.OutOfMemoryError
		oom = oom || errors.As(err, &o)
	}
	simtest.WarmBlas(t, dev) // the first product's cuBLAS workspace stays for good: measure from after it
	baseline := dev.MemoryAllocated()
	g := tensor.NewGenerator(1)
	opts := []tensor.Option{tensor.On(dev), dt, tensor.WithGenerator(g), tensor.RequiresGrad()}
	var p, w, x0 *tensor.Tensor
	err := tensor.Try(func() {
		p = tensor.Randn([]int{rows, cols}, opts...)
		w = tensor.Randn([]int{cols, cols}, opts...)
		x0 = tensor.Randn([]int{rows, cols}, opts[:3]...)
	})
	if err != nil {
		t.Fatalf("the parameters do not fit: %v", err)
	}
	live := []*tensor.Tensor{x0}
	if len(ops) > 32 {
		ops = ops[:32]
	}
	for _, op := range ops {
		x := live[int(op>>4)%len(live)]
		var y *tensor.Tensor
		step := func(f func() *tensor.Tensor) {
			if err := tensor.Try(func() { y = f() }); err != nil {
				refused("op", err)
			}
		}
		switch op % 11 {
		case 0:
			step(func() *tensor.Tensor { return x.Add(p) })
		case 1:
			step(func() *tensor.Tensor { return x.Mul(p) })
		case 2:
			step(x.Tanh)
		case 3:
			step(x.Relu)
		case 4:
			step(func() *tensor.Tensor { return x.Pow(2) })
		case 5:
			step(func() *tensor.Tensor { return x.Matmul(w) })
		case 6:
			step(func() *tensor.Tensor {
				return chain(x, (*tensor.Tensor).T, (*tensor.Tensor).Contiguous, (*tensor.Tensor).T)
			})
		case 7:
			step(func() *tensor.Tensor {
				return chain(x,
					func(t *tensor.Tensor) *tensor.Tensor { return t.Narrow(1, 0, 2) },
					func(t *tensor.Tensor) *tensor.Tensor { return t.Sum(1) },
					func(t *tensor.Tensor) *tensor.Tensor { return t.Unsqueeze(1) },
					func(t *tensor.Tensor) *tensor.Tensor { return t.Expand(rows, cols) })
			})
		case 8: // release a tensor, keeping at least one
			if len(live) > 1 {
				i := int(op>>4) % len(live)
				live[i].Release()
				live = slices.Delete(live, i, i+1)
			}
		case 9: // backward through a tensor's graph, if it has one
			var loss *tensor.Tensor
			step(func() *tensor.Tensor { loss = x.Sum(); return nil })
			if loss != nil && loss.RequiresGrad() {
				if err := tensor.Try(func() { loss.Backward() }); err != nil {
					refused("backward", err)
				}
			}
			if loss != nil {
				loss.Release()
			}
		case 10: // in place: refused on a leaf, and a later backward
			// through a graph that saved x refuses too
			if err := tensor.Try(func() { x.AddInPlace(1) }); err != nil {
				refused("in-place op", err)
			}
		}
		if y != nil {
			live = append(live, y)
		}
	}
	for _, x := range live {
		x.Release()
	}
	for _, param := range []*tensor.Tensor{p, w} {
		param.SetGrad(nil)
		param.Release()
	}
	if oom {
		tensor.CollectGarbage()
	}
	if got := dev.MemoryAllocated(); got != baseline {
		t.Fatalf("after releasing every tensor and parameter, %d bytes are allocated (baseline %d; out of memory on the way: %v)", got, baseline, oom)
	}
}

// chain applies steps in turn and releases each intermediate result, as a
// Go program must (an intermediate dropped without Release waits for the
// collector).
func chain(x *tensor.Tensor, steps ...func(*tensor.Tensor) *tensor.Tensor) *tensor.Tensor {
	cur := x
	for _, step := range steps {
		next := step(cur)
		if cur != x {
			cur.Release()
		}
		cur = next
	}
	return cur
}
