package tensor_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpumem/course/gpukit/device/simtest"
	"github.com/gpumem/course/gpukit/tensor"
)

// The messages PyTorch's at::assert_no_partial_overlap and
// at::assert_no_internal_overlap raise (aten/src/ATen/MemoryOverlap.cpp),
// as gpukit words them.
const (
	partialOverlap  = "unsupported operation: some elements of the input tensor and the written-to tensor refer to a single memory location"
	internalOverlap = "unsupported operation: more than one element of the written-to tensor"
)

// TestWritesRefuseOverlapAsPyTorch runs every in-place and out= op on views
// of one storage y = [0 1 2 3 4 5] and checks that gpukit refuses exactly
// what PyTorch 2.6 refuses. A refused op leaves y as it was; an accepted
// one gives y the values PyTorch gives. The python line is the torch call
// each case mirrors.
func TestWritesRefuseOverlapAsPyTorch(t *testing.T) {
	dev := simtest.Card(t)
	f64 := func(v ...float64) *tensor.Tensor {
		return tensor.FromSlice(v, []int{len(v)}, tensor.On(dev))
	}
	ones := func(n int) *tensor.Tensor { return tensor.Ones([]int{n}, tensor.On(dev), tensor.Float64) }
	idx := func(v ...int64) *tensor.Tensor { return tensor.FromSlice(v, []int{len(v)}, tensor.On(dev)) }
	expanded := func(y *tensor.Tensor) *tensor.Tensor { return y.Narrow(0, 0, 1).Expand(3) } // y[:1].expand(3)
	square := func(y *tensor.Tensor) *tensor.Tensor { return y.Narrow(0, 0, 4).View(2, 2) }  // y[:4].view(2, 2)

	tests := []struct {
		name string
		op   func(y *tensor.Tensor)
		err  string    // "" when PyTorch accepts the op
		want []float64 // y afterwards when accepted
	}{
		// Partial overlap: refused.
		{"running sum", // y[1:5].add_(y[0:4])
			func(y *tensor.Tensor) { y.Narrow(0, 1, 4).AddInPlace(y.Narrow(0, 0, 4)) }, partialOverlap, nil},
		{"SubInPlace shifted", // y[0:4].sub_(y[1:5])
			func(y *tensor.Tensor) { y.Narrow(0, 0, 4).SubInPlace(y.Narrow(0, 1, 4)) }, partialOverlap, nil},
		{"MulInPlace shifted", // y[2:6].mul_(y[0:4])
			func(y *tensor.Tensor) { y.Narrow(0, 2, 4).MulInPlace(y.Narrow(0, 0, 4)) }, partialOverlap, nil},
		{"DivInPlace shifted", // y[1:6].div_(y[0:5])
			func(y *tensor.Tensor) { y.Narrow(0, 1, 5).DivInPlace(y.Narrow(0, 0, 5)) }, partialOverlap, nil},
		{"same bytes, other strides", // x = y[:4].view(2, 2); x.add_(x.t())
			func(y *tensor.Tensor) { x := square(y); x.AddInPlace(x.T()) }, partialOverlap, nil},
		{"same bytes, other rank", // x = y[:4].view(1, 4); x.add_(x.squeeze(0)): PyTorch compares whole stride lists
			func(y *tensor.Tensor) { x := y.Narrow(0, 0, 4).View(1, 4); x.AddInPlace(x.Squeeze(0)) }, partialOverlap, nil},
		{"broadcast operand inside the destination", // y[1:5].add_(y[1:2]): the operand before broadcasting
			func(y *tensor.Tensor) { y.Narrow(0, 1, 4).AddInPlace(y.Narrow(0, 1, 1)) }, partialOverlap, nil},
		{"AddOut shifted a", // torch.add(y[0:4], 1, out=y[1:5])
			func(y *tensor.Tensor) { tensor.AddOut(y.Narrow(0, 1, 4), y.Narrow(0, 0, 4), ones(4)) }, partialOverlap, nil},
		{"SubOut shifted b", // torch.sub(1, y[2:6], out=y[0:4])
			func(y *tensor.Tensor) { tensor.SubOut(y.Narrow(0, 0, 4), ones(4), y.Narrow(0, 2, 4)) }, partialOverlap, nil},
		{"MulOut shifted b", // torch.mul(1, y[0:4], out=y[2:6])
			func(y *tensor.Tensor) { tensor.MulOut(y.Narrow(0, 2, 4), ones(4), y.Narrow(0, 0, 4)) }, partialOverlap, nil},
		{"DivOut shifted a", // torch.div(y[2:6], 1, out=y[1:5])
			func(y *tensor.Tensor) { tensor.DivOut(y.Narrow(0, 1, 4), y.Narrow(0, 2, 4), ones(4)) }, partialOverlap, nil},
		{"CopyFrom shifted", // y[1:5].copy_(y[0:4])
			func(y *tensor.Tensor) { y.Narrow(0, 1, 4).CopyFrom(y.Narrow(0, 0, 4)) }, partialOverlap, nil},
		{"IndexSelectOut shifted", // torch.index_select(y[1:4], 0, i, out=y[0:3])
			func(y *tensor.Tensor) { tensor.IndexSelectOut(y.Narrow(0, 0, 3), y.Narrow(0, 1, 3), 0, idx(2, 1, 0)) }, partialOverlap, nil},
		{"IndexSelectOut into its source", // torch.index_select(y, 0, i, out=y): at::assert_no_overlap refuses full overlap too
			func(y *tensor.Tensor) { tensor.IndexSelectOut(y, y, 0, idx(5, 4, 3, 2, 1, 0)) }, partialOverlap, nil},
		{"MatmulOut into an operand", // gpukit refuses out == a (PyTorch's mm gives a wrong product, pytorch#85852)
			func(y *tensor.Tensor) { a := square(y); tensor.MatmulOut(a, a, square(f64(1, 0, 0, 1, 0, 0))) }, partialOverlap, nil},

		// Internal overlap of the written-to tensor: refused.
		{"AddInPlace into an expanded tensor", // y[:1].expand(3).add_(1)
			func(y *tensor.Tensor) { expanded(y).AddInPlace(1) }, internalOverlap, nil},
		{"AddOut into an expanded tensor", // torch.add(a, b, out=y[:1].expand(3))
			func(y *tensor.Tensor) { tensor.AddOut(expanded(y), ones(3), ones(3)) }, internalOverlap, nil},
		{"ReluInPlace on an expanded tensor", // y[:1].expand(3).relu_()
			func(y *tensor.Tensor) { expanded(y).ReluInPlace() }, internalOverlap, nil},
		{"ClampInPlace on an expanded tensor", // y[:1].expand(3).clamp_(0, 1)
			func(y *tensor.Tensor) { expanded(y).ClampInPlace(0, 1) }, internalOverlap, nil},
		{"CopyFrom into an expanded tensor", // y[:1].expand(3).copy_(torch.ones(3))
			func(y *tensor.Tensor) { expanded(y).CopyFrom(ones(3)) }, internalOverlap, nil},

		// Full overlap, no overlap and TOO_HARD: accepted.
		{"same tensor", // y.add_(y)
			func(y *tensor.Tensor) { y.AddInPlace(y) }, "", []float64{0, 2, 4, 6, 8, 10}},
		{"same elements, another view", // y.add_(y[0:6])
			func(y *tensor.Tensor) { y.AddInPlace(y.Narrow(0, 0, 6)) }, "", []float64{0, 2, 4, 6, 8, 10}},
		{"same transposed elements, another view", // y[:4].view(2, 2).t().mul_(y[:4].view(2, 2).t())
			func(y *tensor.Tensor) { square(y).T().MulInPlace(square(y).T()) }, "", []float64{0, 1, 4, 9, 4, 5}},
		{"AddOut into both operands", // torch.add(y, y, out=y)
			func(y *tensor.Tensor) { tensor.AddOut(y, y, y) }, "", []float64{0, 2, 4, 6, 8, 10}},
		{"disjoint views", // y[0:3].add_(y[3:6])
			func(y *tensor.Tensor) { y.Narrow(0, 0, 3).AddInPlace(y.Narrow(0, 3, 3)) }, "", []float64{3, 5, 7, 3, 4, 5}},
		{"disjoint broadcast operand", // y[0:5].add_(y[5:6])
			func(y *tensor.Tensor) { y.Narrow(0, 0, 5).AddInPlace(y.Narrow(0, 5, 1)) }, "", []float64{5, 6, 7, 8, 9, 5}},
		{"CopyFrom disjoint", // y[0:3].copy_(y[3:6])
			func(y *tensor.Tensor) { y.Narrow(0, 0, 3).CopyFrom(y.Narrow(0, 3, 3)) }, "", []float64{3, 4, 5, 3, 4, 5}},
		{"TOO_HARD: even += odd", // y[0::2].add_(y[1::2]): neither is dense, PyTorch does not look further
			func(y *tensor.Tensor) { y.Slice(0, 0, 6, 2).AddInPlace(y.Slice(0, 1, 6, 2)) }, "", []float64{1, 1, 5, 3, 9, 5}},
		{"TOO_HARD: strided destination over a dense operand", // y[0::2].add_(y[1:4]) shares y[2], still accepted
			func(y *tensor.Tensor) { y.Slice(0, 0, 6, 2).AddInPlace(y.Narrow(0, 1, 3)) }, "", []float64{1, 1, 4, 3, 7, 5}},
		{"TOO_HARD: MulOut into a strided view", // torch.mul(y[0:3], 2, out=y[0::2])
			func(y *tensor.Tensor) { tensor.MulOut(y.Slice(0, 0, 6, 2), y.Narrow(0, 0, 3), f64(2)) }, "", []float64{0, 1, 2, 3, 4, 5}},
		{"empty views", // y[1:1].add_(y[0:0])
			func(y *tensor.Tensor) { y.Narrow(0, 1, 0).AddInPlace(y.Narrow(0, 0, 0)) }, "", []float64{0, 1, 2, 3, 4, 5}},
		{"empty expanded tensor", // y[:1].expand(0, 3).add_(1): no element, no overlap
			func(y *tensor.Tensor) { y.Narrow(0, 0, 1).Expand(0, 3).AddInPlace(1) }, "", []float64{0, 1, 2, 3, 4, 5}},
		{"Fill an expanded tensor", // y[:1].expand(3).fill_(7): fill_ skips the check (Fill.cpp)
			func(y *tensor.Tensor) { expanded(y).Fill(7) }, "", []float64{7, 1, 2, 3, 4, 5}},
		{"SetAt in an expanded tensor", // y[:1].expand(3)[2] = 7 writes one 0-d element
			func(y *tensor.Tensor) { expanded(y).SetAt(7, 2) }, "", []float64{7, 1, 2, 3, 4, 5}},
		{"CopyFrom itself, expanded", // e.copy_(e): copy_ returns early (Copy.cpp)
			func(y *tensor.Tensor) { e := expanded(y); e.CopyFrom(e) }, "", []float64{0, 1, 2, 3, 4, 5}},
		{"CopyFrom the same expanded data", // y[:1].expand(3).copy_(y[:1].expand(3)): is_same_data
			func(y *tensor.Tensor) { expanded(y).CopyFrom(expanded(y)) }, "", []float64{0, 1, 2, 3, 4, 5}},
		{"IndexSelectOut from a disjoint view", // torch.index_select(y[0:3], 0, i, out=y[3:6])
			func(y *tensor.Tensor) { tensor.IndexSelectOut(y.Narrow(0, 3, 3), y.Narrow(0, 0, 3), 0, idx(2, 0, 1)) }, "", []float64{0, 1, 2, 2, 0, 1}},
		{"MatmulOut from a disjoint view", // torch.mm(y[0:2].view(2, 1), b, out=y[2:6].view(2, 2))
			func(y *tensor.Tensor) {
				tensor.MatmulOut(y.Narrow(0, 2, 4).View(2, 2), y.Narrow(0, 0, 2).View(2, 1), f64(1, 2).View(1, 2))
			}, "", []float64{0, 1, 0, 0, 1, 2}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			y := tensor.Arange(0, 6, 1, tensor.On(dev), tensor.Float64)
			defer y.Release()
			err := tensor.Try(func() { tensor.NoGrad(func() { tc.op(y) }) })
			if tc.err == "" {
				require.NoError(t, err)
				assert.Equal(t, tc.want, y.Float64s())
				return
			}
			require.Error(t, err, "PyTorch refuses this")
			var te *tensor.Error
			require.ErrorAs(t, err, &te)
			assert.Regexp(t, `^tensor: [A-Za-z]+: `, err.Error())
			assert.Contains(t, err.Error(), tc.err)
			assert.Equal(t, []float64{0, 1, 2, 3, 4, 5}, y.Float64s(), "a refused op writes nothing")
		})
	}
}
