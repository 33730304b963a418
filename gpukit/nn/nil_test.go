package nn_test

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/gpumem/course/gpukit/device/simtest"
	"github.com/gpumem/course/gpukit/nn"
	"github.com/gpumem/course/gpukit/tensor"
)

// A nil module, or a nil layer in a Sequential, gets nn's error.
func TestNilModules(t *testing.T) {
	var lin *nn.Linear
	for _, m := range []nn.Module{nil, lin} {
		assert.EqualError(t, nn.SaveFile(t.TempDir()+"/m.safetensors", m), "nn: SaveFile: the module is nil")
		assert.EqualError(t, nn.LoadFile(t.TempDir()+"/m.safetensors", m), "nn: LoadFile: the module is nil")
		assert.Contains(t, recoverMsgOf(func() { nn.NewSequential(nn.NewReLU(), m) }), "nn: NewSequential: layer 1 is nil")
		assert.Contains(t, recoverMsgOf(func() { nn.Parameters(m) }), `nn: module "" is nil`)
		assert.Contains(t, recoverMsgOf(func() { nn.RunLayers([]nn.Module{m}, nil) }), "nn: RunLayers: layer 0 is nil")
	}
	s := nn.NewSequential(nn.NewReLU())
	s.Layers = append(s.Layers, lin)
	assert.Contains(t, recoverMsgOf(func() { nn.StateDict(s) }), `nn: module "1" is nil`)
	assert.Contains(t, recoverMsgOf(func() { nn.RunLayers(nil, nil) }), "nn: RunLayers: input is nil")
}

// Every layer's Forward(nil) panics with the package's error (nn's or
// tensor's), never a Go runtime error.
func TestForwardNil(t *testing.T) {
	dev := simtest.Card(t)
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
