package sketch_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/gpumem/course/gpukit/nn"
	"github.com/gpumem/course/gpukit/nn/sketch"
)

func TestFromNilLinear(t *testing.T) {
	_, err := sketch.FromLinear(nil, 1, 1)
	assert.EqualError(t, err, "sketch: FromLinear: nil Linear (or one without a weight)")
	_, err = sketch.FromLinear(&nn.Linear{In: 4, Out: 4}, 1, 1)
	assert.EqualError(t, err, "sketch: FromLinear: nil Linear (or one without a weight)")
}
