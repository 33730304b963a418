package tensor_test

import (
	"fmt"

	"github.com/gpumem/course/gpukit/device"
	"github.com/gpumem/course/gpukit/tensor"
)

// As PyTorch, an in-place op refuses an input that partially overlaps the
// tensor it writes: y[1:5] += y[0:4] would read elements it has already
// written (a running sum). The same elements, or other elements of the
// same storage, are fine.
func ExampleTensor_AddInPlace_overlap() {
	dev := device.MustOpen("sim:1")
	y := tensor.Arange(0, 6, 1, tensor.On(dev), tensor.Float32)
	defer y.Release()
	head, tail := y.Narrow(0, 0, 4), y.Narrow(0, 1, 4)
	defer head.Release()
	defer tail.Release()

	err := tensor.Try(func() { tail.AddInPlace(head) })
	fmt.Println(err)
	fmt.Println("y is unchanged:", y.Float64s())

	first, last := y.Narrow(0, 0, 3), y.Narrow(0, 3, 3)
	defer first.Release()
	defer last.Release()
	first.AddInPlace(last) // disjoint views of one storage
	fmt.Println("y[0:3] += y[3:6]:", y.Float64s())
	y.AddInPlace(y) // the same elements
	fmt.Println("y += y:", y.Float64s())
	// Output:
	// tensor: AddInPlace: unsupported operation: some elements of the input tensor and the written-to tensor refer to a single memory location (the written-to tensor, shape [4] stride [1] offset 1, shares storage with other, shape [4] stride [1] offset 0); Clone other first
	// y is unchanged: [0 1 2 3 4 5]
	// y[0:3] += y[3:6]: [3 5 7 3 4 5]
	// y += y: [6 10 14 6 8 10]
}
