package sketch_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/gpumem/course/gpukit/device/simtest"
	"github.com/gpumem/course/gpukit/nn"
	"github.com/gpumem/course/gpukit/nn/sketch"
	"github.com/gpumem/course/gpukit/tensor"
)

func TestFromNilLinear(t *testing.T) {
	_, err := sketch.FromLinear(nil, 1, 1)
	assert.EqualError(t, err, "sketch: FromLinear: nil Linear (or one without a weight)")
	_, err = sketch.FromLinear(&nn.Linear{In: 4, Out: 4}, 1, 1)
	assert.EqualError(t, err, "sketch: FromLinear: nil Linear (or one without a weight)")
}

func TestForwardNil(t *testing.T) {
	s, err := sketch.New(8, 8, 1, 2, true, tensor.On(simtest.Card(t)))
	assert.NoError(t, err)
	var r any
	func() {
		defer func() { r = recover() }()
		s.Forward(nil)
	}()
	assert.EqualError(t, r.(error), "sketch: SKLinear: input is nil")
}
