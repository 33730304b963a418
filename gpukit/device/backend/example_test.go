package backend_test

import (
	"fmt"

	"github.com/gpumem/course/gpukit/device"
	"github.com/gpumem/course/gpukit/device/backend"
	"github.com/gpumem/course/gpukit/dtypes"
)

// A caller asks a Compute's table before calling, rather than discovering
// an UnsupportedError: here whether to run the fused Adam kernel or to
// compose the step from elementwise ops, as gpukit/tensor does.
func ExampleCapabilities() {
	var caps backend.Capabilities = device.HostCompute().Capabilities()
	for _, dt := range []dtypes.Dtype{dtypes.Float32, dtypes.Float16} {
		if caps.Supports("Adam", dt) {
			fmt.Println(dt, "Adam: the fused kernel")
		} else {
			fmt.Println(dt, "Adam: composed from elementwise ops")
		}
	}
	fmt.Println("Softmax in", caps["Softmax"])
	// Output:
	// float32 Adam: the fused kernel
	// float16 Adam: composed from elementwise ops
	// Softmax in [float32 float64 float16 bfloat16]
}
