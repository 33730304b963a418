package data_test

import (
	"context"
	"fmt"
	"io"

	"github.com/gpumem/course/gpukit/data"
	"github.com/gpumem/course/gpukit/device"
	"github.com/gpumem/course/gpukit/device/simtest"
)

// A loader with two workers feeds a double-buffering prefetcher: each
// batch reaches the device intact, and with pinned batches the modelled
// step is close to max(copy, compute).
func ExamplePrefetcher() {
	d, _ := simtest.New()
	ds, _ := data.NewFuncDataset(64, []int{4}, func(i int, dst []float32) {
		for j := range dst {
			dst[j] = float32(10*i + j)
		}
	})
	l, _ := data.NewLoader(ds, data.Options{BatchSize: 16, Workers: 2, Pin: d})
	defer l.Close()
	epoch, _ := l.Epoch(context.Background(), 0)
	pf, _ := data.NewPrefetcher(d, epoch, d.DefaultStream(), 2)
	defer pf.Close()
	for {
		b, err := pf.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			panic(err)
		}
		v := b.Float32s()
		fmt.Println("batch", b.Number, "shape", b.Shape, "first item", v[:4])
		d.Launch(d.DefaultStream(), device.Kernel{Name: "step", Flops: 1e9})
		b.Release()
	}
	// Output:
	// batch 0 shape [16 4] first item [0 1 2 3]
	// batch 1 shape [16 4] first item [160 161 162 163]
	// batch 2 shape [16 4] first item [320 321 322 323]
	// batch 3 shape [16 4] first item [480 481 482 483]
}

// Shuffled orders depend only on the seed and the epoch.
func ExampleLoader_Order() {
	ds, _ := data.NewTensorDataset(make([]float32, 10), 10)
	l, _ := data.NewLoader(ds, data.Options{BatchSize: 4, Shuffle: true, Seed: 42})
	fmt.Println(l.NumBatches(), l.Order(0))
	// Output: 3 [6 7 4 3 9 5 0 8 2 1]
}
