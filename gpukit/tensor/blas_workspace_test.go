package tensor_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpumem/course/gpukit/device"
	"github.com/gpumem/course/gpukit/device/simtest"
	"github.com/gpumem/course/gpukit/tensor"
)

// TestFirstMatmulAllocatesTheWorkspace: as in PyTorch, the first matrix
// product on a device's stream takes the cuBLAS workspace from the caching
// allocator (CublasHandlePool.cpp), after its output; later products and
// the other ops do not, and ":0:0" turns it off.
func TestFirstMatmulAllocatesTheWorkspace(t *testing.T) {
	ws, err := device.CublasWorkspaceSize("", 7)
	require.NoError(t, err)
	for _, tc := range []struct {
		name   string
		config []device.Option
		want   int64
	}{
		{"PyTorch's default", []device.Option{device.WithCublasWorkspaceConfig("")}, ws},
		{"gpukit's default: PyTorch's", nil, ws},
		{"off", []device.Option{device.WithCublasWorkspaceConfig(":0:0")}, 0},
		{"one MiB", []device.Option{device.WithCublasWorkspaceConfig(":1024:1")}, 1 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dev := simtest.Card(t, simtest.With(tc.config...))
			a := tensor.Randn([]int{64, 64}, tensor.On(dev))
			b := tensor.Randn([]int{64, 64}, tensor.On(dev))
			sum := a.Add(b) // not a product: no workspace
			assert.Equal(t, 3*int64(64*64*4), dev.MemoryAllocated())

			c := a.Matmul(b)
			assert.Equal(t, 4*int64(64*64*4)+tc.want, dev.MemoryAllocated(), "the first product adds its output and the workspace")
			d := a.Matmul(c)
			assert.Equal(t, 5*int64(64*64*4)+tc.want, dev.MemoryAllocated(), "the second adds only its output")

			for _, x := range []*tensor.Tensor{a, b, sum, c, d} {
				x.Release()
			}
			assert.Equal(t, tc.want, dev.MemoryAllocated(), "the workspace outlives the tensors")
			dev.ClearBlasWorkspaces()
			assert.Zero(t, dev.MemoryAllocated())
		})
	}
}

// TestMatmulWorkspaceOutOfMemory: a product whose workspace does not fit
// fails with the allocator's out-of-memory error and leaves nothing behind.
func TestMatmulWorkspaceOutOfMemory(t *testing.T) {
	dev := simtest.Card(t, simtest.With(device.WithCublasWorkspaceConfig(":4194304:1"))) // 4 GiB
	a := tensor.Randn([]int{8, 8}, tensor.On(dev))
	before := dev.MemoryAllocated()
	err := tensor.Try(func() { a.Matmul(a) })
	require.Error(t, err)
	assert.Contains(t, err.Error(), "out of memory")
	assert.Equal(t, before, dev.MemoryAllocated(), "the product's output is freed again")
}
