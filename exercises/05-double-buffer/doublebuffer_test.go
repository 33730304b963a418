package doublebuffer

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/gpumem/course/gpukit/alloc"
	"github.com/gpumem/course/gpukit/device"
	"github.com/gpumem/course/gpukit/device/simtest"
)

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

// sized returns pinned batches of the given sizes, each with its own bytes.
func sized(t *testing.T, d *device.Device, sizes ...int) []*device.HostBuffer {
	out := make([]*device.HostBuffer, len(sizes))
	for k, size := range sizes {
		h, err := d.HostAlloc(int64(size), true)
		if err != nil {
			t.Fatal(err)
		}
		for i := range h.Bytes {
			h.Bytes[i] = byte(k*53 + i*11 + i>>10)
		}
		out[k] = h
	}
	return out
}

// The public twin of the grader's TestBatchesBitwiseInOrder, on other
// sizes: every batch reaches compute bitwise equal to its host batch,
// once, in order, and compute waits for its batch's copy.
func TestValuesArriveIntact(t *testing.T) {
	d := simtest.Card(t)
	host := sized(t, d, 2<<20, 1500, 700, 3<<20, 100, 1<<20)
	calls := 0
	d.Synchronize()
	start := d.Now()
	err := Run(d, host, func(b *alloc.Block, k int) {
		if k != calls {
			t.Errorf("compute called for batch %d, want %d", k, calls)
		}
		calls++
		if b == nil || b.Size() < int64(len(host[k].Bytes)) {
			t.Fatalf("batch %d: the block holds fewer bytes than the batch", k)
		}
		if got := d.Bytes(b)[:len(host[k].Bytes)]; !bytes.Equal(got, host[k].Bytes) {
			t.Errorf("batch %d differs from the host batch", k)
		}
		// The batch's copy takes at least its own modelled time.
		if at, arrived := d.StreamClock(d.DefaultStream()), start+d.Profile().CopyCost(int64(len(host[k].Bytes)), true); at < arrived {
			t.Errorf("batch %d's compute can start at %v, before its copy can have ended (%v at the earliest): make the compute stream wait for the batch's copy", k, at-start, arrived-start)
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

// TestCopiesOverlapCompute, the public twin of the grader's
// TestModelledStepNearIdeal on other sizes and 12 batches: a compute-bound
// and a copy-bound loop take at most a quarter of a step more than the
// ideal pipeline: the first copy, then max(copy, compute) per batch but
// the last, then the last compute.
func TestCopiesOverlapCompute(t *testing.T) {
	for _, c := range []struct {
		name        string
		size        int
		flops       int64
		computeSlow bool
	}{
		{"compute-bound", 2 << 20, 500_000_000, true},
		{"copy-bound", 5 << 20, 300_000_000, false},
	} {
		d := simtest.Card(t)
		const n = 12
		host := batches(t, d, n, c.size)
		model := device.Kernel{Name: "step", Flops: c.flops}
		p := d.Profile()
		copyCost, computeCost := p.CopyCost(int64(c.size), true), p.KernelCost(model)
		if (computeCost > copyCost) != c.computeSlow {
			t.Fatalf("%s: the test's own setup is wrong: a copy takes %v, a compute %v", c.name, copyCost, computeCost)
		}
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
			t.Errorf("%s: %d batches took %v, %v more than the ideal pipeline %v; want at most a quarter of a step (%v) more: are the copies asynchronous, and does compute wait for its own batch's copy only?", c.name, n, total, total-ideal, ideal, step/4)
		}
		t.Logf("%s: %d batches in %v, the ideal pipeline %v (a step is %v)", c.name, n, total, ideal, time.Duration(step))
	}
}

// The public twin of the grader's TestBlocksNotReusedWhileComputeQueued,
// on other batches and a slower compute: a block allocated on another
// stream than compute's must not be handed to a later batch before the
// compute queued on it has ended (RecordStream on the compute stream).
func TestNoBlockReusedEarly(t *testing.T) {
	d := simtest.Card(t)
	host := sized(t, d, 3<<19, 3<<19, 3<<19, 3<<19, 3<<19, 3<<19, 3<<19, 3<<19) // 1.5 MiB each
	addr := make([]uint64, len(host))
	stream := make([]alloc.Stream, len(host))
	computeEnd := make([]time.Duration, len(host))
	hostAt := make([]time.Duration, len(host))
	err := Run(d, host, func(b *alloc.Block, k int) {
		addr[k], stream[k], hostAt[k] = b.Addr(), b.Stream(), d.Now()
		d.Launch(d.DefaultStream(), device.Kernel{Name: "slow step", Flops: 6e9})
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

// The public twin of the grader's TestNothingLeftAllocated, on other
// batches: after Run and a device synchronization, every block is back in
// the allocator.
func TestAllBlocksFreed(t *testing.T) {
	d := simtest.Card(t)
	host := sized(t, d, 2<<20, 2<<20, 2<<20, 300)
	calls := 0
	if err := Run(d, host, func(*alloc.Block, int) {
		calls++
		d.Launch(d.DefaultStream(), device.Kernel{Name: "step", Flops: 1e8})
	}); err != nil {
		t.Fatal(err)
	}
	if calls != len(host) {
		t.Fatalf("compute called %d times for %d batches", calls, len(host))
	}
	d.Synchronize()
	if got := d.MemoryAllocated(); got != 0 {
		t.Errorf("%d bytes still allocated after Run: free every batch's block, the last one too", got)
	}
}

// The public twin of the grader's TestNoBatchesAndEmptyBatch, on other
// batches: no batches is fine and computes nothing; an empty batch is an
// error naming its index, found before any compute.
func TestEmptyInput(t *testing.T) {
	d := simtest.Card(t)
	if err := Run(d, []*device.HostBuffer{}, func(*alloc.Block, int) { t.Error("compute called without batches") }); err != nil {
		t.Errorf("Run with no batches: %v, want no error", err)
	}
	host := sized(t, d, 512, 512, 512, 0, 512)
	calls := 0
	err := Run(d, host, func(*alloc.Block, int) { calls++ })
	if err == nil {
		t.Error("an empty batch 3 gave no error; want an error naming batch 3")
	} else if !strings.Contains(err.Error(), "batch 3") {
		t.Errorf("an empty batch 3 gave the error %q; want an error naming batch 3", err)
	}
	if calls != 0 {
		t.Errorf("compute ran %d times before the empty batch was refused: check every batch before computing any", calls)
	}
}
