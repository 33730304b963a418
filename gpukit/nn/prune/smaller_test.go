package prune_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpumem/course/gpukit/device"
	"github.com/gpumem/course/gpukit/device/simtest"
	"github.com/gpumem/course/gpukit/nn"
	"github.com/gpumem/course/gpukit/nn/prune"
	"github.com/gpumem/course/gpukit/tensor"
)

// Structured pruning, made permanent and then shrunk, gives the pruned
// model's outputs with smaller layers.
func TestShrinkAfterStructuredPruning(t *testing.T) {
	dev := newDev(t)
	ws := simtest.WarmBlas(t, dev) // the first product's cuBLAS workspace, held for good
	opts := []tensor.Option{tensor.On(dev), tensor.WithGenerator(tensor.NewGenerator(3))}
	fc1, fc2 := nn.NewLinear(16, 12, false, opts...), nn.NewLinear(12, 4, true, opts...)
	model := nn.NewSequential(fc1, &nn.ReLU{}, fc2)
	x := tensor.Randn([]int{5, 16}, opts...)

	p, err := prune.LnStructured(fc1, "weight", prune.Count(9), 2, 0)
	require.NoError(t, err)
	model.Layers[0] = p
	var want *tensor.Tensor
	tensor.NoGrad(func() { want = model.Forward(x) })
	model.Layers[0], err = prune.Remove(p, "weight")
	require.NoError(t, err)
	const dense = (16*12 + 12*4 + 4) * 4
	assert.EqualValues(t, dense, nn.Nbytes(model))

	keep, err := prune.KeptSlices(fc1.Weight, 0)
	require.NoError(t, err)
	assert.Len(t, keep, 3)
	small1, err := prune.ShrinkOutputs(fc1, keep)
	require.NoError(t, err)
	small2, err := prune.ShrinkInputs(fc2, keep)
	require.NoError(t, err)
	nn.Release(model)
	small := nn.NewSequential(small1, &nn.ReLU{}, small2)
	assert.EqualValues(t, (16*3+3*4+4)*4, nn.Nbytes(small))
	// five tensors are left (two weights, a bias, x, want), each under the
	// allocator's 512-byte rounding
	// and the cuBLAS workspace the first product took
	assert.EqualValues(t, ws+5*512, dev.MemoryAllocated(), "only the small model, x and want")
	got := small.Forward(x)
	assert.InDeltaSlice(t, want.Float64s(), got.Float64s(), 1e-6)
	assert.Equal(t, []int{5, 4}, got.Shape())

	_, err = prune.ShrinkOutputs(small1, []int{0, 3})
	assert.ErrorContains(t, err, "out of range")
	_, err = prune.ShrinkOutputs(small1, nil)
	assert.ErrorContains(t, err, "nothing to keep")
	_, err = prune.ShrinkInputs(small2, []int{1, 1})
	assert.ErrorContains(t, err, "twice")
}

func TestCSRLayoutAndBytes(t *testing.T) {
	dev := newDev(t)
	w := tensor.FromSlice([]float32{0, 2, 0, 0, 0, 0, 3, 4, 0}, []int{3, 3}, tensor.On(dev))
	for _, tc := range []struct {
		index tensor.Dtype
		bytes int64
	}{
		{tensor.Int64, 3*4 + 3*8 + 4*8},
		{tensor.Int32, 3*4 + 3*4 + 4*4},
	} {
		t.Run(tc.index.String(), func(t *testing.T) {
			before := dev.MemoryAllocated()
			c, err := prune.ToCSR(w, tc.index)
			require.NoError(t, err)
			assert.Equal(t, []float64{2, 3, 4}, c.Values.Float64s())
			assert.Equal(t, []float64{1, 0, 1}, c.ColIndices.Float64s())
			assert.Equal(t, []float64{0, 1, 1, 3}, c.RowOffsets.Float64s())
			assert.Equal(t, tc.index, c.RowOffsets.Dtype())
			assert.Equal(t, tensor.Float32, c.Values.Dtype())
			assert.Equal(t, tc.bytes, c.Nbytes())
			assert.Greater(t, dev.MemoryAllocated(), before, "three blocks, each rounded up by the allocator")
			assert.InDelta(t, 1.0/3, c.Density(), 1e-12)
			c.Release()
			assert.Equal(t, before, dev.MemoryAllocated())
		})
	}
	_, err := prune.ToCSR(tensor.Zeros([]int{4}, tensor.On(dev)), tensor.Int64)
	assert.ErrorContains(t, err, "2-d")
	_, err = prune.ToCSR(w, tensor.Float32)
	assert.ErrorContains(t, err, "Int64 or Int32")
}

func TestCSRLinearForwardEqualsDense(t *testing.T) {
	dev := newDev(t)
	for _, density := range []float64{0, 0.1, 0.5, 1} {
		t.Run(fmt.Sprint(density), func(t *testing.T) {
			g := tensor.NewGenerator(7)
			w := tensor.Randn([]int{20, 30}, tensor.On(dev), tensor.WithGenerator(g))
			keep := tensor.Rand([]int{20, 30}, tensor.On(dev), tensor.WithGenerator(g)).Lt(density).ToDtype(tensor.Float32)
			sparse := w.Mul(keep)
			x := tensor.Randn([]int{6, 30}, tensor.On(dev), tensor.WithGenerator(g))
			c, err := prune.ToCSR(sparse, tensor.Int64)
			require.NoError(t, err)
			wt := sparse.T()
			want := x.Matmul(wt)
			// The mask's temporaries wait for the collector: collect them
			// now, or one of their cleanups may land inside the call.
			tensor.CollectGarbage()
			before := dev.MemoryAllocated()
			got := c.LinearForward(x)
			assert.Equal(t, []int{6, 20}, got.Shape())
			assert.InDeltaSlice(t, want.Float64s(), got.Float64s(), 1e-4)
			got.Release()
			assert.Equal(t, before, dev.MemoryAllocated(), "only the result was left allocated")
		})
	}
}

// Gradients through the CSR form are the dense layer's: for x, and for
// the kept weights.
func TestCSRLinearForwardGradients(t *testing.T) {
	dev := newDev(t)
	g := tensor.NewGenerator(9)
	w := tensor.Randn([]int{5, 7}, tensor.On(dev), tensor.Float64, tensor.WithGenerator(g))
	keep := tensor.Rand([]int{5, 7}, tensor.On(dev), tensor.Float64, tensor.WithGenerator(g)).Lt(0.4).ToDtype(tensor.Float64)
	sparse := w.Mul(keep)
	c, err := prune.ToCSR(sparse, tensor.Int32)
	require.NoError(t, err)
	c.Values.SetRequiresGrad(true)
	sparse.SetRequiresGrad(true)
	xv := tensor.Randn([]int{3, 7}, tensor.On(dev), tensor.Float64, tensor.WithGenerator(g)).Float64s()
	x1 := tensor.FromSlice(xv, []int{3, 7}, tensor.On(dev), tensor.Float64, tensor.RequiresGrad())
	x2 := tensor.FromSlice(xv, []int{3, 7}, tensor.On(dev), tensor.Float64, tensor.RequiresGrad())
	y1 := c.LinearForward(x1)
	sq1 := y1.Mul(y1)
	sq1.Sum().Backward()
	st := sparse.T()
	y2 := x2.Matmul(st)
	sq2 := y2.Mul(y2)
	sq2.Sum().Backward()
	assert.InDeltaSlice(t, x2.Grad().Float64s(), x1.Grad().Float64s(), 1e-12)
	var want []float64
	for i, v := range sparse.Float64s() {
		if v != 0 {
			want = append(want, sparse.Grad().Float64s()[i])
		}
	}
	assert.InDeltaSlice(t, want, c.Values.Grad().Float64s(), 1e-12)
}

// The break-even of CSR against dense float32, in bytes and in time, for
// a Linear(1024, 1024) weight and a batch of 64 inputs. It reports the
// weight's device bytes (bytes/weight), the modelled time of the device's
// clock (model-µs/op) and the CPU's wall time (ns/op).
//
//	go test -run - -bench CSR -benchtime 3x ./gpukit/nn/prune
func BenchmarkCSRVsDense(b *testing.B) {
	for _, density := range []float64{0.1, 0.3, 0.5, 1} {
		for _, form := range []string{"dense", "csr-int64", "csr-int32"} {
			if density == 1 && form != "dense" {
				continue
			}
			b.Run(fmt.Sprintf("density=%v/%s", density, form), func(b *testing.B) {
				dev := device.MustOpen("sim:3")
				g := tensor.NewGenerator(1)
				var fwd func(*tensor.Tensor) *tensor.Tensor
				var bytes int64
				tensor.NoGrad(func() {
					w := tensor.Randn([]int{1024, 1024}, tensor.On(dev), tensor.WithGenerator(g))
					draws := tensor.Rand([]int{1024, 1024}, tensor.On(dev), tensor.WithGenerator(g))
					kept := draws.Lt(density)
					keep := kept.ToDtype(tensor.Float32)
					draws.Release()
					kept.Release()
					pruned := w.Mul(keep)
					w.Release()
					keep.Release()
					switch form {
					case "dense":
						wt := pruned.T()
						bytes = pruned.Nbytes()
						fwd = func(x *tensor.Tensor) *tensor.Tensor { return x.Matmul(wt) }
					default:
						index := tensor.Int64
						if form == "csr-int32" {
							index = tensor.Int32
						}
						c, err := prune.ToCSR(pruned, index)
						require.NoError(b, err)
						pruned.Release()
						bytes = c.Nbytes()
						fwd = c.LinearForward
					}
				})
				x := tensor.Randn([]int{16, 1024}, tensor.On(dev), tensor.WithGenerator(g))
				dev.Synchronize()
				start := dev.Now()
				b.ResetTimer()
				for range b.N {
					tensor.NoGrad(func() { fwd(x).Release() })
				}
				dev.Synchronize()
				b.ReportMetric(float64((dev.Now()-start).Microseconds())/float64(b.N), "model-µs/op")
				b.ReportMetric(float64(bytes), "bytes/weight")
			})
		}
	}
}
