package data

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gpumem/course/gpukit/device"
)

// The loop of lesson 05: batches of 256 images of 3×32×32 float32 (3 MiB)
// and a model step of 0.6 GFLOP, on the classroom profile (modelled: the
// pinned copy of a batch takes about 0.25 ms, the step 0.3 ms).
const (
	benchBatch = 256
	benchItem  = 3 * 32 * 32
	benchFlops = 600_000_000
)

// modelledStep runs steps batches through the lesson's loop and returns the
// modelled time per step. depth 0 is the loop without overlap: pageable
// batches copied synchronously on the compute stream.
func modelledStep(tb testing.TB, depth, steps int) (step, copyT, computeT time.Duration) {
	d := newSim(tb)
	ds, err := NewFuncDataset(steps*benchBatch, []int{3, 32, 32}, func(i int, dst []float32) {
		for j := range dst {
			dst[j] = float32(i + j)
		}
	})
	if err != nil {
		tb.Fatal(err)
	}
	opts := Options{BatchSize: benchBatch, Workers: 2}
	if depth > 0 {
		opts.Pin = d
	}
	l, err := NewLoader(ds, opts)
	if err != nil {
		tb.Fatal(err)
	}
	defer l.Close()
	ep, err := l.Epoch(context.Background(), 0)
	if err != nil {
		tb.Fatal(err)
	}
	compute := d.DefaultStream()
	model := device.Kernel{Name: "model", Flops: benchFlops}
	p := d.Profile()
	computeT = p.KernelCost(model)
	copyT = p.CopyCost(4*benchBatch*benchItem, depth > 0)
	d.Synchronize()
	t0 := d.RecordEvent(compute)
	if depth == 0 {
		forEach(tb, ep.Next, func(b *Batch) {
			blk, err := d.Malloc(int64(4*len(b.Data)), compute)
			if err != nil {
				tb.Fatal(err)
			}
			if err := d.CopyToDevice(blk, 0, b.Bytes(), false, compute, true); err != nil {
				tb.Fatal(err)
			}
			d.Launch(compute, model)
			d.Free(blk)
			b.Release()
		})
	} else {
		pf, err := NewPrefetcher(d, ep, compute, depth)
		if err != nil {
			tb.Fatal(err)
		}
		forEach(tb, pf.Next, func(b *DeviceBatch) {
			d.Launch(compute, model)
			b.Release()
		})
		pf.Close()
	}
	d.Synchronize()
	return d.RecordEvent(compute).ElapsedSince(t0) / time.Duration(steps), copyT, computeT
}

// BenchmarkModelledStep reports the modelled step time of the lesson's
// loop against max(copy, compute) (overlap) and copy + compute (none):
//
//	go test -run '^$' -bench ModelledStep -benchtime 3x ./gpukit/data/
func BenchmarkModelledStep(b *testing.B) {
	for _, depth := range []int{0, 2, 3} {
		name := map[int]string{0: "no-overlap", 2: "double-buffer", 3: "triple-buffer"}[depth]
		b.Run(name, func(b *testing.B) {
			var step, c, k time.Duration
			for range b.N {
				step, c, k = modelledStep(b, depth, 32)
			}
			b.ReportMetric(float64(step.Microseconds()), "µs/step")
			b.ReportMetric(float64(step)/float64(max(c, k)), "×max(copy,compute)")
			b.ReportMetric(float64(step)/float64(c+k), "×(copy+compute)")
		})
	}
}

// BenchmarkShardThroughput reads a shard set through the loader (4
// workers, batches of 256) and with io.Copy to io.Discard, both from the
// page cache (the files are read once first), and reports the ratio:
//
//	go test -run '^$' -bench ShardThroughput -benchtime 3x ./gpukit/data/
func BenchmarkShardThroughput(b *testing.B) {
	dir := b.TempDir()
	var paths []string
	for s := range 4 {
		ds, _ := NewFuncDataset(4096, []int{1024}, func(i int, dst []float32) {
			for j := range dst {
				dst[j] = float32(s*i + j)
			}
		})
		p := filepath.Join(dir, fmt.Sprintf("part-%d.shard", s))
		if err := WriteShard(p, ds, []int{1024}); err != nil {
			b.Fatal(err)
		}
		paths = append(paths, p)
	}
	var total int64
	copyAll := func() {
		total = 0
		for _, p := range paths {
			f, err := os.Open(p)
			if err != nil {
				b.Fatal(err)
			}
			n, err := io.Copy(io.Discard, f)
			f.Close()
			if err != nil {
				b.Fatal(err)
			}
			total += n
		}
	}
	loadAll := func() {
		sd, err := OpenShards(paths...)
		if err != nil {
			b.Fatal(err)
		}
		defer sd.Close()
		l, _ := NewLoader(sd, Options{BatchSize: 256, Workers: 4})
		defer l.Close()
		ep, _ := l.Epoch(context.Background(), 0)
		forEach(b, ep.Next, (*Batch).Release)
	}
	copyAll() // warm the page cache
	// Round-robin, fastest run of each: the machine may be shared.
	tCopy, tLoad := time.Duration(1<<63-1), time.Duration(1<<63-1)
	for range b.N {
		t0 := time.Now()
		copyAll()
		tCopy = min(tCopy, time.Since(t0))
		t0 = time.Now()
		loadAll()
		tLoad = min(tLoad, time.Since(t0))
	}
	b.ReportMetric(float64(total)/tCopy.Seconds()/1e9, "GB/s-io.Copy")
	b.ReportMetric(float64(total)/tLoad.Seconds()/1e9, "GB/s-loader")
	b.ReportMetric(tCopy.Seconds()/tLoad.Seconds(), "loader/io.Copy")
}
