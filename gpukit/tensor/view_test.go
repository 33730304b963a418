package tensor_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpumem/course/gpukit/tensor"
)

func TestCreation(t *testing.T) {
	dev := newDev(t)
	tests := []struct {
		name  string
		make  func() *tensor.Tensor
		shape []int
		dtype tensor.Dtype
		want  []float64
	}{
		{"zeros", func() *tensor.Tensor { return tensor.Zeros([]int{2, 2}, tensor.On(dev)) }, []int{2, 2}, tensor.Float32, []float64{0, 0, 0, 0}},
		{"ones f16", func() *tensor.Tensor { return tensor.Ones([]int{3}, tensor.On(dev), tensor.Float16) }, []int{3}, tensor.Float16, []float64{1, 1, 1}},
		{"full bf16", func() *tensor.Tensor {
			return tensor.Full([]int{2}, 1.5, tensor.On(dev), tensor.Dtype(tensor.BFloat16))
		}, []int{2}, tensor.BFloat16, []float64{1.5, 1.5}},
		{"arange int", func() *tensor.Tensor { return tensor.Arange(0, 5, 1, tensor.On(dev)) }, []int{5}, tensor.Int64, []float64{0, 1, 2, 3, 4}},
		{"arange float", func() *tensor.Tensor { return tensor.Arange(0, 1, 0.25, tensor.On(dev)) }, []int{4}, tensor.Float32, []float64{0, 0.25, 0.5, 0.75}},
		{"from int32", func() *tensor.Tensor { return tensor.FromSlice([]int32{1, -2}, []int{2}, tensor.On(dev)) }, []int{2}, tensor.Int32, []float64{1, -2}},
		{"from bool", func() *tensor.Tensor { return tensor.FromSlice([]bool{true, false}, []int{2}, tensor.On(dev)) }, []int{2}, tensor.Bool, []float64{1, 0}},
		{"from int -1", func() *tensor.Tensor { return tensor.FromSlice([]int{1, 2, 3, 4, 5, 6}, []int{-1, 3}, tensor.On(dev)) }, []int{2, 3}, tensor.Int64, []float64{1, 2, 3, 4, 5, 6}},
		{"host", func() *tensor.Tensor { return tensor.FromSlice([]float64{1, 2}, []int{2}, tensor.OnHost(false)) }, []int{2}, tensor.Float64, []float64{1, 2}},
		{"pinned", func() *tensor.Tensor { return tensor.Ones([]int{2}, tensor.OnHost(true)) }, []int{2}, tensor.Float32, []float64{1, 1}},
		{"scalar", func() *tensor.Tensor { return tensor.Scalar(3, tensor.On(dev)) }, []int{}, tensor.Float32, []float64{3}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			x := tc.make()
			defer x.Release()
			assert.Equal(t, tc.shape, x.Shape())
			assert.Equal(t, tc.dtype, x.Dtype())
			assert.Equal(t, tc.want, x.Float64s())
			assert.True(t, x.IsContiguous())
		})
	}
}

func TestRandIsSeeded(t *testing.T) {
	dev := newDev(t)
	a := tensor.Randn([]int{4}, tensor.On(dev), tensor.WithGenerator(tensor.NewGenerator(7)))
	b := tensor.Randn([]int{4}, tensor.On(dev), tensor.WithGenerator(tensor.NewGenerator(7)))
	c := tensor.Rand([]int{1000}, tensor.On(dev), tensor.Float64)
	assert.Equal(t, a.Float64s(), b.Float64s())
	for _, v := range c.Float64s() {
		require.True(t, v >= 0 && v < 1)
	}
}

func TestHostTensors(t *testing.T) {
	x := tensor.Ones([]int{2, 3}, tensor.OnHost(true))
	assert.True(t, x.IsHost())
	assert.True(t, x.IsPinned())
	assert.Equal(t, "cpu", x.DeviceName())
	assert.Nil(t, x.Device())
	y := x.Add(x)
	assert.Equal(t, []float64{2, 2, 2, 2, 2, 2}, y.Float64s())
	assert.False(t, y.IsPinned(), "op results on the host are pageable, as in PyTorch")
	x.Release()
	y.Release()
}

func TestAddressFormula(t *testing.T) {
	dev := newDev(t)
	x := tensor.Arange(0, 12, 1, tensor.On(dev), tensor.Float32).View(3, 4)
	assert.Equal(t, []int{4, 1}, x.Stride())
	// element [i, j] lives at offset + i*stride[0] + j*stride[1]
	for i := range 3 {
		for j := range 4 {
			off := x.ElementOffset(i, j)
			assert.Equal(t, x.StorageOffset()+i*4+j, off)
			assert.Equal(t, x.Storage().DataPtr()+uint64(off*4), x.ElementAddr(i, j))
			assert.Equal(t, float64(off), x.At(i, j))
		}
	}
	row := x.Select(0, 2)
	assert.Equal(t, 8, row.StorageOffset())
	assert.Equal(t, x.DataPtr()+8*4, row.DataPtr(), "DataPtr = block address + offset*itemsize")
	assert.Equal(t, x.Storage().Block().Addr()+32, row.DataPtr())
}

func TestViewsShareStorageAndAllocateNothing(t *testing.T) {
	dev := newDev(t)
	x := tensor.Arange(0, 24, 1, tensor.On(dev), tensor.Float32).View(2, 3, 4)
	before := allocations(dev)
	views := map[string]*tensor.Tensor{
		"View":      x.View(6, 4),
		"Reshape":   x.Reshape(4, -1),
		"Transpose": x.Transpose(0, 2),
		"Permute":   x.Permute(2, 0, 1),
		"Narrow":    x.Narrow(1, 1, 2),
		"Slice":     x.Slice(2, 0, 4, 2),
		"Select":    x.Select(1, 1),
		"Expand":    x.Unsqueeze(0).Expand(5, 2, 3, 4),
		"Squeeze":   x.Unsqueeze(1).Squeeze(),
		"Unsqueeze": x.Unsqueeze(-1),
		"Flatten":   x.Flatten(0, 1),
		"Detach":    x.Detach(),
		"Contig":    x.Contiguous(),
	}
	assert.Equal(t, before, allocations(dev), "views must not allocate")
	for name, v := range views {
		assert.True(t, v.SameStorage(x), name)
	}
	// x, the Arange it views, the views, and the two Unsqueeze intermediates
	assert.Equal(t, 2+len(views)+2, x.Storage().Refs(), "each view holds a reference")

	// values
	tr := views["Transpose"]
	assert.Equal(t, []int{4, 3, 2}, tr.Shape())
	assert.Equal(t, []int{1, 4, 12}, tr.Stride())
	assert.False(t, tr.IsContiguous())
	assert.Equal(t, x.At(1, 2, 3), tr.At(3, 2, 1))
	assert.Equal(t, []int{2, 2, 4}, views["Narrow"].Shape())
	assert.Equal(t, 4, views["Narrow"].StorageOffset())
	assert.Equal(t, []float64{0, 2, 4, 6, 8, 10}, views["Slice"].Select(0, 0).Float64s())
	ex := views["Expand"]
	assert.Equal(t, []int{0, 12, 4, 1}, ex.Stride(), "expand uses stride 0")
	assert.Equal(t, x.At(1, 2, 3), ex.At(4, 1, 2, 3))
}

func TestViewOnIncompatibleLayoutPanics(t *testing.T) {
	dev := newDev(t)
	x := tensor.Zeros([]int{2, 3}, tensor.On(dev))
	xt := x.T()
	msg := panicMsg(func() { xt.View(6) })
	assert.Contains(t, msg, "tensor: View:")
	assert.Contains(t, msg, "Reshape")
	assert.Contains(t, msg, "Contiguous")

	before := allocations(dev)
	r := xt.Reshape(6) // must copy
	assert.False(t, r.SameStorage(x))
	assert.Equal(t, before+1, allocations(dev))
	r2 := x.Reshape(3, 2) // can view
	assert.True(t, r2.SameStorage(x))
	c := xt.Contiguous()
	assert.False(t, c.SameStorage(x))
	assert.True(t, c.IsContiguous())
	v := c.View(6)
	assert.True(t, v.SameStorage(c))
}

func TestTransposeValues(t *testing.T) {
	dev := newDev(t)
	x := f64(dev, []float64{1, 2, 3, 4, 5, 6}, 2, 3)
	xt := x.T()
	assert.Equal(t, []float64{1, 4, 2, 5, 3, 6}, xt.Float64s())
	assert.Equal(t, []float64{1, 4, 2, 5, 3, 6}, xt.Contiguous().Float64s())
	assert.Equal(t, []float64{1, 4, 2, 5, 3, 6}, xt.Clone().Float64s())
}

func TestMisuseErrors(t *testing.T) {
	dev := newDev(t)
	other := newDev(t)
	a := tensor.Zeros([]int{2, 3}, tensor.On(dev))
	tests := []struct {
		name string
		fn   func()
		want string
	}{
		{"shape", func() { a.Add(tensor.Zeros([]int{4}, tensor.On(dev))) }, "not broadcastable"},
		{"dtype", func() { a.Add(tensor.Zeros([]int{2, 3}, tensor.On(dev), tensor.Float64)) }, "dtype mismatch"},
		{"device", func() { a.Add(tensor.Zeros([]int{2, 3}, tensor.OnHost(false))) }, "same device"},
		{"matmul", func() { a.Matmul(a) }, "cannot be multiplied"},
		{"item", func() { a.Item() }, "cannot be converted to a scalar"},
		{"operand", func() { a.Add("x") }, "operand must be"},
		{"expand", func() { a.Expand(3, 3) }, "must match the existing size"},
		{"narrow", func() { a.Narrow(1, 2, 2) }, "out of bounds"},
		{"dim", func() { a.Sum(2) }, "out of range"},
		{"int grad", func() { tensor.Zeros([]int{2}, tensor.On(dev), tensor.Int64, tensor.RequiresGrad()) }, "floating point"},
	}
	_ = other
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			msg := panicMsg(tc.fn)
			assert.Regexp(t, "^tensor: ", msg)
			assert.Contains(t, msg, tc.want)
		})
	}
}
