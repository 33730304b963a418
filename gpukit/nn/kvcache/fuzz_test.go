package kvcache_test

import (
	"strings"
	"testing"

	"github.com/gpumem/course/gpukit/nn/kvcache"
	"github.com/gpumem/course/gpukit/tensor"
)

// FuzzNewDecoder builds decoders from arbitrary settings: kvcache's error,
// or a decoder that steps one token; never a panic.
func FuzzNewDecoder(f *testing.F) {
	dev, b := newBlock(f, tensor.Float32)
	f.Add(0, 1, 4)
	f.Add(9, -1, 1<<62)
	f.Fuzz(func(t *testing.T, strategy, batch, maxLen int) {
		d, err := kvcache.NewDecoder(b, kvcache.Strategy(strategy), batch, maxLen)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "kvcache: ") {
				t.Fatalf("error without the package's prefix: %v", err)
			}
			return
		}
		defer d.Release()
		if batch > 4 {
			return
		}
		x := tensor.Zeros([]int{batch, 1, 16}, tensor.On(dev))
		defer x.Release()
		y, err := d.Step(x)
		if err != nil {
			t.Fatal(err)
		}
		y.Release()
	})
}
