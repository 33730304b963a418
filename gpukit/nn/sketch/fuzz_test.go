package sketch_test

import (
	"strings"
	"testing"

	"github.com/gpumem/course/gpukit/device/simtest"
	"github.com/gpumem/course/gpukit/nn/sketch"
	"github.com/gpumem/course/gpukit/tensor"
)

// FuzzNew builds SKLinear layers from arbitrary sizes: sketch's error or a
// layer; never a panic.
func FuzzNew(f *testing.F) {
	dev := simtest.Card(f)
	f.Add(8, 8, 1, 2)
	f.Add(-1, 1<<40, 1<<40, 0)
	f.Fuzz(func(t *testing.T, in, out, terms, rank int) {
		if in > 64 || out > 64 { // keep each input small and fast
			return
		}
		s, err := sketch.New(in, out, terms, rank, true, tensor.On(dev))
		if err != nil {
			if !strings.HasPrefix(err.Error(), "sketch: ") {
				t.Fatalf("error without the package's prefix: %v", err)
			}
			return
		}
		for _, p := range append(s.Members().Params, s.Members().Buffers...) {
			p.Tensor.Release()
		}
	})
}
