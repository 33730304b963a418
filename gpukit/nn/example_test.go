package nn_test

import (
	"fmt"

	"github.com/gpumem/course/gpukit/device"
	"github.com/gpumem/course/gpukit/nn"
	"github.com/gpumem/course/gpukit/tensor"
)

// A Linear(1024, 1024) holds its weight and bias in device memory; the
// forward pass keeps its input for backward, and backward adds gradients
// the size of the parameters.
func ExampleLinear() {
	dev := device.MustOpen("sim:3")
	l := nn.NewLinear(1024, 1024, true, tensor.On(dev))
	fmt.Println("parameters:", nn.NumParams(l), "bytes:", dev.MemoryAllocated())
	x := tensor.Randn([]int{64, 1024}, tensor.On(dev))
	y := l.Forward(x)
	loss := y.Sum()
	loss.Backward()
	loss.Release()
	y.Release()
	x.Release()
	// the gradients, and cuBLAS's workspace, which the first product on the
	// stream took (8519680 bytes on this pre-Hopper card) and which stays
	fmt.Println("after backward:", dev.MemoryAllocated())
	nn.ZeroGrad(l, true)
	fmt.Println("after ZeroGrad(set to none):", dev.MemoryAllocated())
	nn.Release(l)
	// Output:
	// parameters: 1049600 bytes: 4198400
	// after backward: 16916480
	// after ZeroGrad(set to none): 12718080
}
