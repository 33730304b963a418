package tensor_test

import (
	"errors"
	"fmt"

	"github.com/gpumem/course/gpukit/alloc"
	"github.com/gpumem/course/gpukit/device"
	"github.com/gpumem/course/gpukit/tensor"
)

// A view shares its base's storage: no allocation, another offset and
// other strides, and the address formula offset + Σ i·stride.
func ExampleTensor_Transpose() {
	dev := device.MustOpen("sim:1")
	a := tensor.Arange(0, 6, 1, tensor.On(dev), tensor.Float32)
	x := a.View(2, 3)
	before := dev.Stats()["allocation.all.allocated"]
	xt := x.Transpose(0, 1)
	fmt.Println("allocations:", dev.Stats()["allocation.all.allocated"]-before)
	fmt.Println("same storage:", xt.SameStorage(x))
	fmt.Println("shape", xt.Shape(), "stride", xt.Stride(), "contiguous", xt.IsContiguous())
	fmt.Println("xt[2,1] at element offset", xt.ElementOffset(2, 1), "=", xt.At(2, 1))
	fmt.Println("byte distance from x[0,0]:", xt.ElementAddr(2, 1)-x.DataPtr())
	xt.Release()
	x.Release()
	a.Release()
	// Output:
	// allocations: 0
	// same storage: true
	// shape [3 2] stride [1 3] contiguous false
	// xt[2,1] at element offset 5 = 5
	// byte distance from x[0,0]: 20
}

// View never copies; on a transposed tensor it refuses, and Reshape copies.
func ExampleTensor_Reshape() {
	dev := device.MustOpen("sim:1")
	x := tensor.Zeros([]int{2, 3}, tensor.On(dev))
	xt := x.T()
	fmt.Println(tensor.Try(func() { xt.View(6) }) != nil)
	r := xt.Reshape(6)
	fmt.Println("copied:", !r.SameStorage(xt))
	r.Release()
	xt.Release()
	x.Release()
	// Output:
	// true
	// copied: true
}

// Autograd saves activations, and they occupy device memory until
// backward, even after the user has released them.
func ExampleTensor_Backward() {
	dev := device.MustOpen("sim:1")
	w := tensor.Randn([]int{1024, 1024}, tensor.On(dev), tensor.RequiresGrad())
	x := tensor.Randn([]int{1024, 1024}, tensor.On(dev))
	tensor.CollectGarbage() // what earlier examples dropped on sim:1 must not move the count below
	base := dev.MemoryAllocated()

	h := x.Matmul(w) // the first product also takes cuBLAS's workspace (8.125 MiB), for good
	y := h.Exp()     // saves its output (4 MiB) for backward
	loss := y.Sum()
	h.Release()
	y.Release()
	fmt.Println("held by the graph, and the workspace:", (dev.MemoryAllocated()-base)>>20, "MiB")
	loss.Backward()
	loss.Release()
	fmt.Println("after backward, w.grad and the workspace:", (dev.MemoryAllocated()-base)>>20, "MiB")
	w.SetGrad(nil)
	fmt.Println("after SetGrad(nil), the workspace:", dev.MemoryAllocated()-base)
	x.Release()
	w.Release()
	// Output:
	// held by the graph, and the workspace: 12 MiB
	// after backward, w.grad and the workspace: 12 MiB
	// after SetGrad(nil), the workspace: 8519680
}

// Misuse panics with a *tensor.Error; Try turns it into an error, and
// out-of-memory errors come through it as *alloc.OutOfMemoryError.
func ExampleTry() {
	dev := device.MustOpen("sim:1")
	a := tensor.Zeros([]int{2, 3}, tensor.On(dev))
	err := tensor.Try(func() { a.Matmul(a) })
	fmt.Println(err)

	err = tensor.Try(func() { tensor.Empty([]int{1 << 40}, tensor.On(dev)) })
	var oom *alloc.OutOfMemoryError
	fmt.Println("out of memory:", errors.As(err, &oom))
	// Output:
	// tensor: Matmul: mat1 and mat2 shapes cannot be multiplied (2x3 and 2x3)
	// out of memory: true
}

// In-place on a non-leaf is legal; on a leaf that requires grad it is
// refused (COURSE mistake 7).
func ExampleTensor_AddInPlace() {
	dev := device.MustOpen("sim:1")
	x := tensor.FromSlice([]float32{1, 2, 3}, []int{3}, tensor.On(dev), tensor.RequiresGrad())
	y := x.Pow(2)
	y.AddInPlace(1)
	y.Sum().Backward()
	fmt.Println(x.Grad().Float64s())
	fmt.Println(tensor.Try(func() { x.AddInPlace(1) }) != nil)
	// Output:
	// [2 4 6]
	// true
}

// CrossEntropy takes raw logits [N, C] and class indices [N]; it computes
// a stable log-softmax once and saves it for backward. The gradient of
// the mean loss is (softmax - onehot)/N.
func ExampleCrossEntropy() {
	dev := device.MustOpen("sim:1")
	logits := tensor.FromSlice([]float64{
		2, 0, 0, // confident in class 0
		0, 0, 0, // undecided
	}, []int{2, 3}, tensor.On(dev), tensor.RequiresGrad())
	targets := tensor.FromSlice([]int64{0, 2}, []int{2}, tensor.On(dev))
	loss := tensor.CrossEntropy(logits, targets)
	fmt.Printf("loss %.4f (grad_fn %s)\n", loss.Item(), loss.GradFn())
	loss.Backward()
	for _, g := range logits.Grad().Float64s() {
		fmt.Printf("%.4f ", g)
	}
	fmt.Println()
	// Output:
	// loss 0.6691 (grad_fn NllLossBackward0)
	// -0.1065 0.0533 0.0533 0.1667 0.1667 -0.3333
}

// IndexSelectOut gathers rows (an embedding lookup) into a buffer that is
// reused from batch to batch: no allocation after the first.
func ExampleIndexSelectOut() {
	dev := device.MustOpen("sim:1")
	table := tensor.Arange(0, 12, 1, tensor.On(dev), tensor.Float32).View(4, 3)
	buf := tensor.Empty([]int{2, 3}, tensor.On(dev))
	batches := []*tensor.Tensor{
		tensor.FromSlice([]int64{3, 0}, []int{2}, tensor.On(dev)),
		tensor.FromSlice([]int64{1, 1}, []int{2}, tensor.On(dev)),
	}
	before := dev.Stats()["allocation.all.allocated"]
	for _, ids := range batches {
		tensor.IndexSelectOut(buf, table, 0, ids)
		fmt.Println(buf.Float64s())
	}
	fmt.Println("allocations by IndexSelectOut:", dev.Stats()["allocation.all.allocated"]-before)
	// Output:
	// [9 10 11 0 1 2]
	// [3 4 5 3 4 5]
	// allocations by IndexSelectOut: 0
}

// A node saves only what the gradients it will compute use (PyTorch's
// rule): with a frozen weight, Matmul keeps the weight and not the input,
// so releasing the input frees it; with a trained weight, the input is
// saved for the weight's gradient and stays.
func ExampleTensor_Matmul() {
	dev := device.MustOpen("sim:1")
	tensor.CollectGarbage() // what earlier examples dropped must not move the count below
	p := tensor.Randn([]int{1024, 1024}, tensor.On(dev), tensor.RequiresGrad())
	for _, trained := range []bool{false, true} {
		w := tensor.Randn([]int{1024, 1024}, tensor.On(dev)).SetRequiresGrad(trained)
		h := p.Mul(2) // an activation that requires grad: 4 MiB
		before := dev.MemoryAllocated()
		y := h.Matmul(w) // 4 MiB
		h.Release()
		fmt.Printf("%s, weight requires grad %v: %+d MiB after h.Release()\n", y.GradFn(), trained, (dev.MemoryAllocated()-before)>>20)
		y.Release()
		w.Release()
	}
	p.Release()
	// Output:
	// MmBackward0, weight requires grad false: +0 MiB after h.Release()
	// MmBackward0, weight requires grad true: +4 MiB after h.Release()
}

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
