package prune_test

import (
	"fmt"

	"github.com/gpumem/course/gpukit/device"
	"github.com/gpumem/course/gpukit/nn"
	"github.com/gpumem/course/gpukit/nn/prune"
	"github.com/gpumem/course/gpukit/tensor"
)

// Pruning 90% of a Linear's weight triples the weight's memory (original,
// mask, computed weight); Remove brings it back to the dense size.
func ExampleL1Unstructured() {
	dev := device.MustOpen("sim:3")
	model := nn.NewSequential(nn.NewLinear(1024, 1024, false, tensor.On(dev)))
	fmt.Println("dense:", dev.MemoryAllocated())

	p, err := prune.L1Unstructured(model.Layers[0], "weight", prune.Fraction(0.9))
	if err != nil {
		fmt.Println(err)
		return
	}
	model.Layers[0] = p
	fmt.Println("pruned:", dev.MemoryAllocated())
	for _, n := range append(nn.NamedParameters(model), nn.NamedBuffers(model)...) {
		fmt.Println(" ", n.Name, n.Tensor.Shape())
	}

	model.Layers[0], _ = prune.Remove(p, "weight")
	fmt.Println("removed:", dev.MemoryAllocated())

	_, err = prune.L1Unstructured(model.Layers[0], "weight", prune.Fraction(1.5))
	fmt.Println(err)
	nn.Release(model)
	// Output:
	// dense: 4194304
	// pruned: 12582912
	//   0.weight_orig [1024 1024]
	//   0.weight_mask [1024 1024]
	// removed: 4194304
	// prune: *nn.Linear.weight: amount Fraction(1.5): a fraction must be in [0, 1] (use Count for a number of entries)
}
