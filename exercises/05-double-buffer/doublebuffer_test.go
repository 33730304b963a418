package doublebuffer

import (
	"bytes"
	"testing"
	"time"

	"github.com/gpumem/course/gpukit/alloc"
	"github.com/gpumem/course/gpukit/device"
	"github.com/gpumem/course/gpukit/device/sim"
)

// classroom returns a fresh simulated classroom card.
func classroom(t *testing.T) *device.Device {
	p, err := device.LookupProfile("classroom")
	if err != nil {
		t.Fatal(err)
	}
	d, err := device.New(sim.New(0, p))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// batches returns n pinned batches of size bytes, each with its own bytes.
func batches(t *testing.T, d *device.Device, n, size int) []*device.HostBuffer {
	out := make([]*device.HostBuffer, n)
	for k := range out {
		h, err := d.HostAlloc(int64(size), true)
		if err != nil {
			t.Fatal(err)
		}
		for i := range h.Bytes {
			h.Bytes[i] = byte(k*31 + i*7)
		}
		out[k] = h
	}
	return out
}

func TestValuesArriveIntact(t *testing.T) {
	d := classroom(t)
	host := batches(t, d, 6, 1<<20)
	calls := 0
	err := Run(d, host, func(b *alloc.Block, k int) {
		if k != calls {
			t.Errorf("compute called for batch %d, want %d", k, calls)
		}
		calls++
		if got := d.Bytes(b)[:len(host[k].Bytes)]; !bytes.Equal(got, host[k].Bytes) {
			t.Errorf("batch %d differs from the host batch", k)
		}
		d.Launch(d.DefaultStream(), device.Kernel{Name: "step", Flops: 1e8})
	})
	if err != nil {
		t.Fatal(err)
	}
	if calls != len(host) {
		t.Fatalf("compute called %d times for %d batches", calls, len(host))
	}
}

// TestCopiesOverlapCompute: 16 compute-bound batches take at most a
// quarter of a step more than the ideal pipeline: the first copy, then
// max(copy, compute) per batch but the last, then the last compute.
func TestCopiesOverlapCompute(t *testing.T) {
	d := classroom(t)
	const n, size = 16, 3 << 20
	host := batches(t, d, n, size)
	model := device.Kernel{Name: "step", Flops: 600_000_000}
	p := d.Profile()
	copyCost, computeCost := p.CopyCost(size, true), p.KernelCost(model)
	step := max(copyCost, computeCost)
	ideal := copyCost + computeCost + (n-1)*step
	d.Synchronize()
	start := d.Now()
	if err := Run(d, host, func(*alloc.Block, int) { d.Launch(d.DefaultStream(), model) }); err != nil {
		t.Fatal(err)
	}
	d.Synchronize()
	total := d.Now() - start
	if total > ideal+step/4 {
		t.Fatalf("16 batches took %v, %v more than the ideal pipeline %v; want at most a quarter of a step (%v) more: does compute wait for its own batch's copy only?", total, total-ideal, ideal, step/4)
	}
	t.Logf("16 batches in %v, the ideal pipeline %v (a step is %v)", total, ideal, time.Duration(step))
}
