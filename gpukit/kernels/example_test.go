package kernels_test

import (
	"fmt"

	"github.com/gpumem/course/gpukit/kernels"
	"github.com/gpumem/course/gpukit/layout"
	"github.com/gpumem/course/gpukit/ops"
)

func ExampleSgemm() {
	// C (2×2) = A (2×3) · B (3×2), row-major.
	a := []float32{1, 2, 3, 4, 5, 6}
	b := []float32{7, 8, 9, 10, 11, 12}
	c := make([]float32, 4)
	kernels.Sgemm(false, false, 2, 2, 3, 1, a, 3, b, 2, 0, c, 2)
	fmt.Println(c)
	// Output: [58 64 139 154]
}

func ExampleBinaryStrided() {
	// Add a bias row vector to every row of a 2×3 matrix by broadcasting it
	// along dimension 0 (stride 0).
	x := []float32{1, 2, 3, 4, 5, 6}
	bias := []float32{10, 20, 30}
	shape := []int{2, 3}
	bst, _ := layout.BroadcastStrides(shape, []int{3}, []int{1})
	out := make([]float32, 6)
	kernels.BinaryStrided(ops.Add, shape,
		kernels.Contiguous(out, shape),
		kernels.Contiguous(x, shape),
		kernels.Strided[float32]{Data: bias, Strides: bst})
	fmt.Println(out)
	// Output: [11 22 33 14 25 36]
}

func ExampleCopy() {
	// Materialise the transpose of a 2×3 matrix: view it as 3×2 with
	// swapped strides, then copy into contiguous memory.
	x := []float32{1, 2, 3, 4, 5, 6}
	out := make([]float32, 6)
	kernels.Copy([]int{3, 2}, out, kernels.Strided[float32]{Data: x, Strides: []int{1, 3}})
	fmt.Println(out)
	// Output: [1 4 2 5 3 6]
}

func ExampleReduce() {
	// Sum a 2×3 matrix along dimension 1 (outer=2, n=3, inner=1) and take
	// the argmax along dimension 0 (outer=1, n=2, inner=3).
	x := []float32{1, 2, 3, 6, 5, 4}
	sums := make([]float32, 2)
	kernels.Reduce(ops.ReduceSum, sums, x, 2, 3, 1)
	idx := make([]int, 3)
	kernels.ArgMax(idx, x, 1, 2, 3)
	fmt.Println(sums, idx)
	// Output: [6 15] [1 1 1]
}
