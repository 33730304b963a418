package kvcache_test

import (
	"fmt"

	"github.com/gpumem/course/gpukit/device/simtest"
	"github.com/gpumem/course/gpukit/nn"
	"github.com/gpumem/course/gpukit/nn/kvcache"
	"github.com/gpumem/course/gpukit/tensor"
)

// Generating 128 tokens with a cache grown by concatenation allocates
// two new cache tensors per token and leaves the allocator with more
// reserved than used; a preallocated cache allocates once.
func ExampleNewDecoder() {
	for _, s := range []kvcache.Strategy{kvcache.Preallocated, kvcache.Concat} {
		dev, _ := simtest.New()
		b := nn.NewBlock(128, 4, tensor.On(dev))
		b.Attn.Causal = true
		x := tensor.Randn([]int{4, 128, 128}, tensor.On(dev))
		// the first product on the stream takes cuBLAS's workspace, which
		// stays: take it now, so that the counts and the peak below are the
		// decoder's (reserved-allocated includes the 11.875 MiB left free in
		// the workspace's 20 MiB segment)
		_ = dev.BlasWorkspace(dev.DefaultStream())
		base := dev.MemoryAllocated() // the block, the input and the workspace
		before := dev.Stats()["allocation.all.allocated"]
		dev.ResetPeakStats()
		d, err := kvcache.NewDecoder(b, s, 4, 128)
		if err != nil {
			fmt.Println(err)
			return
		}
		for i := range 128 {
			tok := x.Narrow(1, i, 1)
			y, _ := d.Step(tok)
			y.Release()
			tok.Release()
		}
		st := dev.Stats()
		fmt.Printf("%-12s cache %d B, allocations %d, peak above the model %d B, reserved-allocated %d B\n",
			s, d.CacheBytes(), st["allocation.all.allocated"]-before,
			dev.MaxMemoryAllocated()-base, dev.MemoryReserved()-dev.MemoryAllocated())
	}
	// Output:
	// preallocated cache 524288 B, allocations 2818, peak above the model 569344 B, reserved-allocated 12969472 B
	// concat       cache 524288 B, allocations 3072, peak above the model 798720 B, reserved-allocated 15066624 B
}
