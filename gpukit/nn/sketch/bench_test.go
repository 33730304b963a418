package sketch_test

import (
	"fmt"
	"testing"

	"github.com/gpumem/course/gpukit/device/simtest"
	"github.com/gpumem/course/gpukit/nn"
	"github.com/gpumem/course/gpukit/nn/nntest"
	"github.com/gpumem/course/gpukit/nn/sketch"
	"github.com/gpumem/course/gpukit/tensor"
)

// SKLinear against a dense Linear at in = out = 4096, a batch of 64:
// one forward and backward per op. It reports the layer's bytes
// (parameters and buffers), the peak bytes of a step above the layer
// and its input, the modelled time of the simulated device
// (model-µs/op) and the CPU's wall time (ns/op).
//
//	go test -run - -bench SKLinear -benchtime 2x ./gpukit/nn/sketch
func BenchmarkSKLinearVsDense(b *testing.B) {
	const dim, batch = 4096, 64
	for _, cfg := range []struct{ terms, rank int }{{0, 0}, {1, 128}, {2, 256}} {
		name := "dense"
		if cfg.terms > 0 {
			name = fmt.Sprintf("sk-terms=%d-rank=%d", cfg.terms, cfg.rank)
		}
		b.Run(name, func(b *testing.B) {
			dev := simtest.Card(b)
			opts := []tensor.Option{tensor.On(dev), tensor.WithGenerator(tensor.NewGenerator(1))}
			var layer nn.Module
			if cfg.terms == 0 {
				layer = nn.NewLinear(dim, dim, true, opts...)
			} else {
				s, err := sketch.New(dim, dim, cfg.terms, cfg.rank, true, opts...)
				if err != nil {
					b.Fatal(err)
				}
				layer = s
			}
			x := tensor.Randn([]int{batch, dim}, opts...)
			step := func() {
				nntest.SumBackward(layer, x)
				nn.ZeroGrad(layer, true)
			}
			step() // warm the allocator's cache
			dev.Synchronize()
			base := dev.MemoryAllocated()
			dev.ResetPeakStats()
			start := dev.Now()
			b.ResetTimer()
			for range b.N {
				step()
			}
			dev.Synchronize()
			b.ReportMetric(float64((dev.Now()-start).Microseconds())/float64(b.N), "model-µs/op")
			b.ReportMetric(float64(nn.Nbytes(layer)), "layer-bytes")
			b.ReportMetric(float64(dev.MaxMemoryAllocated()-base), "step-peak-bytes")
		})
	}
}
