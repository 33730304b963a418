package optim_test

import (
	"fmt"

	"github.com/gpumem/course/gpukit/device"
	"github.com/gpumem/course/gpukit/nn"
	"github.com/gpumem/course/gpukit/optim"
	"github.com/gpumem/course/gpukit/tensor"
)

// Adam's state is allocated at the first step: two tensors the size of
// each parameter, so the model's memory triples.
func ExampleAdam() {
	dev := device.MustOpen("sim:4")
	model := nn.NewLinear(512, 512, true, tensor.On(dev))
	opt, err := optim.NewAdam(nn.Parameters(model), optim.DefaultAdam())
	if err != nil {
		panic(err)
	}
	fmt.Println("model:", nn.Nbytes(model), "optimizer state:", opt.StateBytes())
	x := tensor.Randn([]int{8, 512}, tensor.On(dev))
	y := model.Forward(x)
	loss := y.Pow(2).Mean()
	loss.Backward()
	opt.Step()
	opt.ZeroGrad(true)
	fmt.Println("after the first step, optimizer state:", opt.StateBytes())
	_, err = optim.NewAdam(nil, optim.DefaultAdam())
	fmt.Println(err)
	// Output:
	// model: 1050624 optimizer state: 0
	// after the first step, optimizer state: 2101248
	// optim: optimizer got an empty parameter list
}
