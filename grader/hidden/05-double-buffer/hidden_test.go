package doublebuffer

import (
	"bytes"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/gpumem/course/gpukit/alloc"
	"github.com/gpumem/course/gpukit/device"
	"github.com/gpumem/course/gpukit/device/sim"
	"github.com/gpumem/course/gpukit/tensor"
)

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

func batches(t *testing.T, d *device.Device, sizes ...int) []*device.HostBuffer {
	out := make([]*device.HostBuffer, len(sizes))
	for k, size := range sizes {
		h, err := d.HostAlloc(int64(size), true)
		if err != nil {
			t.Fatal(err)
		}
		for i := range h.Bytes {
			h.Bytes[i] = byte(k*131 + i*7 + i>>9)
		}
		out[k] = h
	}
	return out
}

func repeat(n, size int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = size
	}
	return s
}

// TestBatchesBitwiseInOrder: every batch, of varied sizes, reaches compute
// bitwise equal to its host batch, once, in order.
func TestBatchesBitwiseInOrder(t *testing.T) {
	noCollector(t)
	d := classroom(t)
	host := batches(t, d, 1<<20, 3000, 5<<20, 512, 1<<20, 77, 2<<20)
	calls := 0
	err := Run(d, host, func(b *alloc.Block, k int) {
		if k != calls {
			t.Errorf("compute called for batch %d, want batch %d", k, calls)
		}
		calls++
		if b == nil || b.Size() < int64(len(host[k].Bytes)) {
			t.Fatalf("batch %d: block too small", k)
		}
		if got := d.Bytes(b)[:len(host[k].Bytes)]; !bytes.Equal(got, host[k].Bytes) {
			t.Errorf("batch %d on the device differs from the host batch", k)
		}
		d.Launch(d.DefaultStream(), device.Kernel{Name: "step", Flops: 2e8})
	})
	if err != nil {
		t.Fatal(err)
	}
	if calls != len(host) {
		t.Fatalf("compute called %d times for %d batches", calls, len(host))
	}
}

// stepTime runs n batches of size bytes with a kernel of flops per batch
// and returns the modelled step and the ideal max(copy, compute).
func stepTime(t *testing.T, n, size int, flops int64) (step, ideal time.Duration) {
	d := classroom(t)
	host := batches(t, d, repeat(n, size)...)
	model := device.Kernel{Name: "step", Flops: flops}
	p := d.Profile()
	ideal = max(p.CopyCost(int64(size), true), p.KernelCost(model))
	d.Synchronize()
	start := d.Now()
	if err := Run(d, host, func(*alloc.Block, int) { d.Launch(d.DefaultStream(), model) }); err != nil {
		t.Fatal(err)
	}
	d.Synchronize()
	return (d.Now() - start) / time.Duration(n), ideal
}

// TestModelledStepNearIdeal: compute-bound and copy-bound loops both run
// within 10% of max(copy, compute) per step (classroom profile).
func TestModelledStepNearIdeal(t *testing.T) {
	noCollector(t)
	for _, c := range []struct {
		name  string
		size  int
		flops int64
	}{
		{"compute-bound", 3 << 20, 600_000_000},
		{"copy-bound", 6 << 20, 400_000_000},
	} {
		step, ideal := stepTime(t, 24, c.size, c.flops)
		if float64(step) > 1.10*float64(ideal) {
			t.Errorf("%s: modelled step %v, want within 10%% of max(copy, compute) = %v", c.name, step, ideal)
		}
	}
}

// TestBlocksNotReusedWhileComputeQueued: with compute far slower than the
// copies, a batch's block must not be handed to a later batch before the
// compute queued on it has ended (RecordStream on the compute stream).
func TestBlocksNotReusedWhileComputeQueued(t *testing.T) {
	noCollector(t)
	d := classroom(t)
	host := batches(t, d, repeat(10, 1<<20)...)
	addr := make([]uint64, len(host))
	computeEnd := make([]time.Duration, len(host))
	hostAt := make([]time.Duration, len(host))
	err := Run(d, host, func(b *alloc.Block, k int) {
		addr[k], hostAt[k] = b.Addr(), d.Now()
		d.Launch(d.DefaultStream(), device.Kernel{Name: "slow step", Flops: 4e9}) // 2 ms
		computeEnd[k] = d.StreamClock(d.DefaultStream())
	})
	if err != nil {
		t.Fatal(err)
	}
	for j := range addr {
		for k := range j {
			if addr[j] == addr[k] && hostAt[j] < computeEnd[k] {
				t.Fatalf("batch %d got batch %d's block at 0x%x while batch %d's compute was still queued (it ends at %v, the host was at %v): record the compute stream on each block before freeing it",
					j, k, addr[k], k, computeEnd[k], hostAt[j])
			}
		}
	}
}

// TestNothingLeftAllocated: after Run and a device synchronization, every
// block is back in the allocator.
func TestNothingLeftAllocated(t *testing.T) {
	noCollector(t)
	d := classroom(t)
	host := batches(t, d, repeat(5, 1<<20)...)
	calls := 0
	if err := Run(d, host, func(*alloc.Block, int) { calls++ }); err != nil {
		t.Fatal(err)
	}
	if calls != len(host) {
		t.Fatalf("compute called %d times for %d batches", calls, len(host))
	}
	d.Synchronize()
	if got := d.MemoryAllocated(); got != 0 {
		t.Fatalf("%d bytes still allocated after Run", got)
	}
}

// TestNoBatchesAndEmptyBatch: no batches is fine and computes nothing; an
// empty batch is an error naming its index, before any compute.
func TestNoBatchesAndEmptyBatch(t *testing.T) {
	noCollector(t)
	d := classroom(t)
	if err := Run(d, nil, func(*alloc.Block, int) { t.Error("compute called without batches") }); err != nil {
		t.Fatalf("Run without batches: %v", err)
	}
	host := batches(t, d, 1024, 0, 1024)
	calls := 0
	err := Run(d, host, func(*alloc.Block, int) { calls++ })
	if err == nil || !strings.Contains(err.Error(), "batch 1") {
		t.Fatalf("an empty batch 1 gave %v; want an error naming batch 1", err)
	}
	if calls != 0 {
		t.Fatalf("compute ran %d times before the empty batch was refused", calls)
	}
}

// noCollector runs a full collection, then turns Go's collector off until
// the test ends: what the test measures must not depend on when a
// collection happens to run. Above 2 GiB of heap the collector runs anyway,
// rather than the test running out of memory.
func noCollector(t *testing.T) {
	tensor.CollectGarbage()
	gc, limit := debug.SetGCPercent(-1), debug.SetMemoryLimit(2<<30)
	t.Cleanup(func() {
		debug.SetGCPercent(gc)
		debug.SetMemoryLimit(limit)
	})
}
