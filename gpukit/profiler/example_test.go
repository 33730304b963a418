package profiler_test

import (
	"fmt"

	"github.com/gpumem/course/gpukit/device/simtest"
	"github.com/gpumem/course/gpukit/profiler"
	"github.com/gpumem/course/gpukit/tensor"
)

// A Linear layer is a matmul and an add: its range totals both, and the
// release of the matmul's result, outside any op, is its own.
func ExampleRecord() {
	dev, _ := simtest.New()
	x := tensor.Ones([]int{64, 128}, tensor.On(dev))
	w := tensor.Ones([]int{128, 256}, tensor.On(dev))
	b := tensor.Zeros([]int{256}, tensor.On(dev))

	p, err := profiler.Start(profiler.Options{})
	if err != nil {
		panic(err)
	}
	var y *tensor.Tensor
	func() {
		defer profiler.Record("Linear")()
		z := x.Matmul(w)
		y = z.Add(b)
		z.Release()
	}()
	p.Stop()

	rows, _ := p.KeyAverages(false)
	for _, r := range rows {
		fmt.Printf("%-15s calls %d  CUDA Mem %10s  Self CUDA Mem %10s\n", r.Key, r.Count,
			profiler.FormatMemory(r.DeviceMemory), profiler.FormatMemory(r.SelfDeviceMemory))
	}
	// the peak is the allocator's: it includes the cuBLAS workspace that
	// the first product took (8.13 Mb on this card), which no op shows
	peaks, _ := p.PhasePeaks(dev)
	fmt.Println("peak of Linear:", profiler.FormatMemory(peaks[0].Peak))
	y.Release()
	// Output:
	// Linear          calls 1  CUDA Mem   64.00 Kb  Self CUDA Mem  -64.00 Kb
	// tensor::Matmul  calls 1  CUDA Mem   64.00 Kb  Self CUDA Mem   64.00 Kb
	// tensor::Add     calls 1  CUDA Mem   64.00 Kb  Self CUDA Mem   64.00 Kb
	// peak of Linear: 8.41 Mb
}
