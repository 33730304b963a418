package doublebuffer

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/gpumem/course/gpukit/alloc"
	"github.com/gpumem/course/gpukit/device"
	"github.com/gpumem/course/gpukit/device/simtest"
	"github.com/gpumem/course/gpukit/tensor/tensortest"
)

func classroom(t *testing.T) *device.Device {
	t.Helper()
	return simtest.Card(t)
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
	tensortest.NoCollector(t)
	d := classroom(t)
	host := batches(t, d, 1<<20, 3000, 5<<20, 512, 1<<20, 77, 2<<20)
	calls := 0
	d.Synchronize()
	start := d.Now()
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
		// The batch's copy takes at least its own modelled time.
		if at, arrived := d.StreamClock(d.DefaultStream()), start+d.Profile().CopyCost(int64(len(host[k].Bytes)), true); at < arrived {
			t.Errorf("batch %d's compute can start at %v, before its copy can have ended (%v at the earliest): make the compute stream wait for the batch's copy", k, at-start, arrived-start)
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

// pipelineTime runs n batches of size bytes with a kernel of flops per
// batch and returns the modelled time of the whole loop and the best a
// pipeline can do: the first copy, then one step of max(copy, compute) per
// batch but the last, then the last compute.
func pipelineTime(t *testing.T, n, size int, flops int64) (total, ideal, step time.Duration) {
	d := classroom(t)
	host := batches(t, d, repeat(n, size)...)
	model := device.Kernel{Name: "step", Flops: flops}
	p := d.Profile()
	copyCost, computeCost := p.CopyCost(int64(size), true), p.KernelCost(model)
	step = max(copyCost, computeCost)
	d.Synchronize()
	start := d.Now()
	if err := Run(d, host, func(*alloc.Block, int) { d.Launch(d.DefaultStream(), model) }); err != nil {
		t.Fatal(err)
	}
	d.Synchronize()
	return d.Now() - start, copyCost + computeCost + time.Duration(n-1)*step, step
}

// TestModelledStepNearIdeal: compute-bound and copy-bound loops of 16
// batches (as in the public test) take at most a quarter of a step more
// than the ideal pipeline (classroom profile). Waiting for more than the
// batch's own copy costs about a copy.
func TestModelledStepNearIdeal(t *testing.T) {
	tensortest.NoCollector(t)
	for _, c := range []struct {
		name  string
		size  int
		flops int64
	}{
		{"compute-bound", 3 << 20, 600_000_000},
		{"copy-bound", 6 << 20, 400_000_000},
	} {
		total, ideal, step := pipelineTime(t, 16, c.size, c.flops)
		if total > ideal+step/4 {
			t.Errorf("%s: 16 batches took %v, %v more than the ideal pipeline (first copy, 15 steps of max(copy, compute) = %v, last compute); want at most a quarter of a step more", c.name, total, total-ideal, step)
		}
	}
}

// TestBlocksNotReusedWhileComputeQueued: with compute far slower than the
// copies, a block allocated on another stream than compute's must not be
// handed to a later batch before the compute queued on it has ended
// (RecordStream on the compute stream). A block allocated on the compute
// stream may be reused at once: the caching allocator is stream-ordered,
// so the next use on that stream runs after the compute.
func TestBlocksNotReusedWhileComputeQueued(t *testing.T) {
	tensortest.NoCollector(t)
	d := classroom(t)
	host := batches(t, d, repeat(10, 1<<20)...)
	addr := make([]uint64, len(host))
	stream := make([]alloc.Stream, len(host))
	computeEnd := make([]time.Duration, len(host))
	hostAt := make([]time.Duration, len(host))
	err := Run(d, host, func(b *alloc.Block, k int) {
		addr[k], stream[k], hostAt[k] = b.Addr(), b.Stream(), d.Now()
		d.Launch(d.DefaultStream(), device.Kernel{Name: "slow step", Flops: 4e9}) // 2 ms
		computeEnd[k] = d.StreamClock(d.DefaultStream())
	})
	if err != nil {
		t.Fatal(err)
	}
	for j := range addr {
		for k := range j {
			if addr[j] == addr[k] && stream[k] != d.DefaultStream() && hostAt[j] < computeEnd[k] {
				t.Fatalf("batch %d got batch %d's block at 0x%x, allocated on stream %d, while batch %d's compute on the default stream was still queued (it ends at %v, the host was at %v): the allocator reused it because nothing told it the compute stream uses it; call d.RecordStream(block, d.DefaultStream()) before freeing it",
					j, k, addr[k], stream[k], k, computeEnd[k], hostAt[j])
			}
		}
	}
}

// TestNothingLeftAllocated: after Run and a device synchronization, every
// block is back in the allocator.
func TestNothingLeftAllocated(t *testing.T) {
	tensortest.NoCollector(t)
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
	tensortest.NoCollector(t)
	d := classroom(t)
	if err := Run(d, nil, func(*alloc.Block, int) { t.Error("compute called without batches") }); err != nil {
		t.Fatalf("Run without batches: %v", err)
	}
	host := batches(t, d, 1024, 1024, 0, 1024) // found only when its turn comes, batch 0 would be computed
	calls := 0
	err := Run(d, host, func(*alloc.Block, int) { calls++ })
	if err == nil || !strings.Contains(err.Error(), "batch 2") {
		t.Fatalf("an empty batch 2 gave %v; want an error naming batch 2", err)
	}
	if calls != 0 {
		t.Fatalf("compute ran %d times before the empty batch was refused", calls)
	}
}
