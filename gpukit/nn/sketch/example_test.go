package sketch_test

import (
	"fmt"

	"github.com/gpumem/course/gpukit/device"
	"github.com/gpumem/course/gpukit/nn"
	"github.com/gpumem/course/gpukit/nn/sketch"
	"github.com/gpumem/course/gpukit/tensor"
)

// A sketched layer's random matrices are buffers: they hold as many
// numbers as its trained factors, so counting parameters alone gives half
// its memory.
func ExampleNew() {
	dev := device.MustOpen("sim:3")
	dense := nn.NewLinear(1024, 1024, false, tensor.On(dev))
	s, err := sketch.New(1024, 1024, 2, 64, false, tensor.On(dev))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("dense:    params", nn.NumParams(dense), "buffers", nn.NumBuffers(dense), "bytes", nn.Nbytes(dense))
	fmt.Println("sketched: params", nn.NumParams(s), "buffers", nn.NumBuffers(s), "bytes", nn.Nbytes(s))

	_, err = sketch.New(1024, 1024, 4, 128, false, tensor.On(dev))
	fmt.Println(err)
	nn.Release(dense)
	nn.Release(s)
	// Output:
	// dense:    params 1048576 buffers 0 bytes 4194304
	// sketched: params 262144 buffers 262144 bytes 2097152
	// sketch: SKLinear(in=1024, out=1024, numTerms=4, lowRank=128) holds 2·4·128·(1024+1024) = 2097152 numbers (parameters and buffers), more than the 1048576 of the dense weight it replaces: lower numTerms or lowRank
}
