package parallel_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpumem/course/gpukit/nn"
	"github.com/gpumem/course/gpukit/nn/parallel"
	"github.com/gpumem/course/gpukit/tensor"
)

func TestPipelineMisuse(t *testing.T) {
	d0, d1 := twoCards(t)
	first, second := mlp(d0, d1)
	stages := []parallel.Stage{{Module: first, Device: d0}, {Module: second, Device: d1}}
	var nilSeq *nn.Sequential
	_, err := parallel.NewPipeline([]parallel.Stage{{Module: nilSeq, Device: d0}}, 2, tensor.Zeros([]int{1, 16}, tensor.On(d0)))
	assert.EqualError(t, err, "parallel: NewPipeline: stage 0 needs a module and a device")
	_, err = parallel.NewPipeline(stages, 2, nil)
	assert.EqualError(t, err, "parallel: NewPipeline: probe is nil; give an example input (a batch of one is enough)")

	p, err := parallel.NewPipeline(stages, 2, tensor.Zeros([]int{1, 16}, tensor.On(d0), tensor.Float64))
	require.NoError(t, err)
	x := tensor.Zeros([]int{4, 16}, tensor.On(d0), tensor.Float64)
	loss := func(out *tensor.Tensor, _ int) *tensor.Tensor { return out.Sum() }
	tests := []struct {
		name string
		run  func()
		want string
	}{
		{"ForwardBackwardNilLoss", func() { p.ForwardBackward(x, nil) }, "parallel: ForwardBackward: the model or loss function is nil"},
		{"ForwardBackwardNilX", func() { p.ForwardBackward(nil, loss) }, "parallel: ForwardBackward: x is nil"},
		{"ForwardNilX", func() { p.Forward(nil) }, "parallel: Forward: x is nil"},
		{"ReferenceNilModel", func() { parallel.Reference(nil, x, 2) }, "parallel: Reference: the model or loss function is nil"},
		{"ReferenceStepNilLoss", func() { parallel.ReferenceStep(nn.NewReLU(), x, 2, parallel.GPipe, nil) }, "parallel: ReferenceStep: the model or loss function is nil"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got any
			func() {
				defer func() { got = recover() }()
				tc.run()
			}()
			e, ok := got.(*parallel.Error)
			require.True(t, ok, "panicked with %v", got)
			assert.EqualError(t, e, tc.want)
		})
	}
}
