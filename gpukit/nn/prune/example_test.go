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

// A pruned weight saves memory only in a sparse form, and only when few
// entries are left: float32 values with int64 indices cost 12 bytes per
// kept entry against 4 per entry dense.
func ExampleToCSR() {
	dev := device.MustOpen("sim:3")
	l := nn.NewLinear(512, 512, false, tensor.On(dev))
	fmt.Println("dense weight:", l.Weight.Nbytes())
	for _, keep := range []float64{0.5, 0.3, 0.1} {
		p, _ := prune.L1Unstructured(l, "weight", prune.Fraction(1-keep))
		csr, _ := prune.ToCSR(p.Weight("weight"), tensor.Int64)
		fmt.Printf("density %.1f: CSR %d bytes\n", csr.Density(), csr.Nbytes())
		csr.Release()
		prune.Remove(p, "weight")                  // zeros written into the weight
		tensor.NoGrad(func() { l.Weight.Fill(1) }) // dense again for the next round
	}
	nn.Release(l)
	// Output:
	// dense weight: 1048576
	// density 0.5: CSR 1576968 bytes
	// density 0.3: CSR 947820 bytes
	// density 0.1: CSR 318672 bytes
}
