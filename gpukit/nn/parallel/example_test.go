package parallel_test

import (
	"fmt"

	"github.com/gpumem/course/gpukit/device"
	"github.com/gpumem/course/gpukit/nn"
	"github.com/gpumem/course/gpukit/nn/parallel"
	"github.com/gpumem/course/gpukit/tensor"
)

// A ReLU has no weight, so it has no device of its own: ask Where, not
// the layer's weight.
func ExampleWhere() {
	d0 := device.MustOpen("sim:0")
	model := nn.NewSequential(nn.NewLinear(4, 4, true, tensor.On(d0)), nn.NewReLU())
	for i, l := range model.Layers {
		fmt.Println(i, parallel.Where(l))
	}
	_, err := parallel.DeviceOf(model.Layers[1])
	fmt.Println(err)
	nn.Release(model)
	// Output:
	// 0 [sim:0]
	// 1 []
	// parallel: *nn.ReLU owns no parameters or buffers, so it has no device of its own (it runs where its input is)
}

// Two halves of an MLP on sim:0 and sim:1: run naively, one device idles
// while the other works; cut into 8 micro-batches, GPipe keeps both busy
// except at the start and the end: a bubble of 1/9 for two equal stages,
// a little more with the copies, and smaller kernels pay their launch
// overhead more often, so the run is shorter but not twice as short.
func ExampleSchedule() {
	d0, d1 := device.MustOpen("sim:0"), device.MustOpen("sim:1")
	half := func(d *device.Device) *nn.Sequential {
		return nn.NewSequential(nn.NewLinear(1024, 1024, true, tensor.On(d)), nn.NewReLU(),
			nn.NewLinear(1024, 1024, true, tensor.On(d)), nn.NewReLU())
	}
	first, second := half(d0), half(d1)
	x := tensor.Randn([]int{256, 1024}, tensor.On(d0))
	for _, micro := range []int{1, 8} {
		p, err := parallel.NewPipeline([]parallel.Stage{{first, d0}, {second, d1}}, micro, x)
		if err != nil {
			fmt.Println(err)
			return
		}
		tensor.NoGrad(func() { p.Forward(x).Release() })
		tl := parallel.Schedule(p.Last)
		fmt.Printf("micro-batches %d: %v modelled, bubble %.0f%%\n", micro, tl.Total, 100*tl.Bubble)
	}
	x.Release()
	nn.Release(first)
	nn.Release(second)
	// Output:
	// micro-batches 1: 1.371904ms modelled, bubble 50%
	// micro-batches 8: 1.194368ms modelled, bubble 15%
}
