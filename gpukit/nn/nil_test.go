package nn_test

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/gpumem/course/gpukit/nn"
	"github.com/gpumem/course/gpukit/tensor"
)

// Every layer's Forward(nil) panics with the package's error (nn's or
// tensor's), never a Go runtime error.
func TestForwardNil(t *testing.T) {
	dev := newDev(t)
	o := tensor.On(dev)
	tests := []struct {
		name string
		m    nn.Module
	}{
		{"Linear", nn.NewLinear(2, 2, true, o)}, {"Embedding", nn.NewEmbedding(3, 2, o)},
		{"LayerNorm", nn.NewLayerNorm(2, o)}, {"BatchNorm1d", nn.NewBatchNorm1d(2, o)},
		{"Dropout", nn.NewDropout(0.5)}, {"ReLU", nn.NewReLU()}, {"GELU", nn.NewGELU()},
		{"Sequential", nn.NewSequential(nn.NewReLU())}, {"MultiheadAttention", nn.NewMultiheadAttention(4, 2, o)},
		{"Block", nn.NewBlock(4, 2, o)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var r any
			func() {
				defer func() { r = recover() }()
				tc.m.Forward(nil)
			}()
			_, isRuntime := r.(runtime.Error)
			assert.False(t, isRuntime, "runtime error: %v", r)
			err, _ := r.(error)
			if assert.Error(t, err) {
				assert.Regexp(t, `^(nn|tensor): `, err.Error())
			}
		})
	}
}
