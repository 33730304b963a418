// Package alloctest is a conformance suite for the caching allocator on a
// Memory backend. Every backend (the sim device, the cuda device, the test
// fake of package alloc) runs it:
//
//	func TestConformance(t *testing.T) {
//		alloctest.Run(t, func(t *testing.T, capacity int64) alloc.Memory {
//			return newBackend(t, capacity)
//		})
//	}
//
// The suite only uses the public API and makes no assumption on addresses
// beyond those of Memory: segments do not overlap and blocks lie inside
// them. newMemory must return a fresh Memory of the given capacity (a real
// GPU backend may return a Memory capped at that capacity). Record-stream
// events may complete at any time; the suite only relies on EmptyCache
// waiting for them.
package alloctest

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/gpumem/course/gpukit/alloc"
)

const mib = 1 << 20

// Run runs the conformance suite as subtests of t.
func Run(t *testing.T, newMemory func(t *testing.T, capacity int64) alloc.Memory) {
	mk := func(t *testing.T, capacity int64, conf string) (*alloc.Allocator, alloc.Memory) {
		t.Helper()
		cfg, err := alloc.ParseConfig(conf)
		if err != nil {
			t.Fatal(err)
		}
		mem := newMemory(t, capacity)
		a := alloc.New(mem, cfg, 0)
		t.Cleanup(func() { CheckConsistent(t, a) })
		return a, mem
	}
	t.Run("WorkedExamples", func(t *testing.T) { workedExamples(t, mk) })
	t.Run("PoolsAndSegments", func(t *testing.T) { poolsAndSegments(t, mk) })
	t.Run("ReuseAndBestFit", func(t *testing.T) { reuseAndBestFit(t, mk) })
	t.Run("SplitAndMerge", func(t *testing.T) { splitAndMerge(t, mk) })
	t.Run("MaxSplitSize", func(t *testing.T) { maxSplitSize(t, mk) })
	t.Run("EmptyCache", func(t *testing.T) { emptyCache(t, mk) })
	t.Run("RetryThenOOM", func(t *testing.T) { retryThenOOM(t, mk) })
	t.Run("FractionCap", func(t *testing.T) { fractionCap(t, mk) })
	t.Run("RecordStream", func(t *testing.T) { recordStream(t, mk) })
	t.Run("Concurrent", func(t *testing.T) { concurrent(t, mk) })
	t.Run("RandomWorkload", func(t *testing.T) { randomWorkload(t, mk) })
	t.Run("HugeRequests", func(t *testing.T) { hugeRequests(t, mk) })
	t.Run("FractionOneSwitchesGCOff", func(t *testing.T) { fractionOneSwitchesGCOff(t, mk) })
	t.Run("Expandable", func(t *testing.T) { expandableSegments(t, mk) })
	// 20 traces here (a backend with real bytes zeroes every segment);
	// package alloc runs 300 on its fake.
	t.Run("Differential", func(t *testing.T) { Differential(t, newMemory, 20) })
}

// hugeRequests: sizes near 2^63 once wrapped around in the size arithmetic
// and were served from the small pool; they must be out-of-memory errors
// that leave the allocator as it was.
func hugeRequests(t *testing.T, mk maker) {
	for _, conf := range []string{"", "roundup_power2_divisions:4"} {
		a, _ := mk(t, 2<<30, conf)
		for _, size := range []int64{math.MaxInt64, 8070450532247928833, alloc.MaxRequest + 1, alloc.MaxRequest, 1 << 40} {
			for range 2 {
				b, err := a.Malloc(size, 0)
				var oom *alloc.OutOfMemoryError
				if b != nil || !errors.As(err, &oom) {
					t.Fatalf("%q: Malloc(%d) = %v, %v; want an out-of-memory error", conf, size, b, err)
				}
			}
		}
		expect(t, a, map[string]int64{"allocated_bytes.all.current": 0, "reserved_bytes.all.current": 0,
			"requested_bytes.all.current": 0, "num_ooms": 10})
	}
}

// fractionOneSwitchesGCOff is the minimal case of issue 8: a fraction of 1
// removes the cap, and with it garbage collection, so the cached stream-2
// segment survives.
func fractionOneSwitchesGCOff(t *testing.T, mk maker) {
	a, _ := mk(t, 64*mib, "garbage_collection_threshold:0.5,max_split_size_mb:64")
	x := malloc(t, a, 8757854, 2)
	if err := a.SetMemoryFraction(1); err != nil {
		t.Fatal(err)
	}
	a.Free(x)
	malloc(t, a, 3671604, 0)
	malloc(t, a, 957088, 0)
	expect(t, a, map[string]int64{"reserved_bytes.all.current": 44040192, "num_device_free": 0})
}

type maker func(t *testing.T, capacity int64, conf string) (*alloc.Allocator, alloc.Memory)

func malloc(t *testing.T, a *alloc.Allocator, size int64, s alloc.Stream) *alloc.Block {
	t.Helper()
	b, err := a.Malloc(size, s)
	if err != nil {
		t.Fatalf("Malloc(%d, %d): %v", size, s, err)
	}
	return b
}

func expect(t *testing.T, a *alloc.Allocator, want map[string]int64) {
	t.Helper()
	st := a.Stats()
	for k, v := range want {
		if got, ok := st[k]; !ok || got != v {
			t.Errorf("%s = %d, want %d", k, got, v)
		}
	}
}

// CheckConsistent checks that the statistics of a agree with its snapshot:
// allocated, active, requested and reserved bytes, segment and block
// counts (expandable segments, which PyTorch's segment count leaves out,
// aside), and that blocks tile their segments without overlap.
func CheckConsistent(t testing.TB, a *alloc.Allocator) {
	t.Helper()
	snap := a.Snapshot()
	st := a.Stats()
	var reserved, allocated, active, requested, nAlloc, nActive, nPlain int64
	var end uint64
	for i, s := range snap.Segments {
		if i > 0 && s.Address < end {
			t.Errorf("segment 0x%x overlaps the previous one", s.Address)
		}
		if !s.IsExpandable { // PyTorch counts no segment for expandable ones
			nPlain++
		}
		end = s.Address + uint64(s.TotalSize)
		reserved += s.TotalSize
		at := s.Address
		var total int64
		for _, b := range s.Blocks {
			if b.Address != at {
				t.Errorf("segment 0x%x: block at 0x%x, expected 0x%x", s.Address, b.Address, at)
			}
			at += uint64(b.Size)
			total += b.Size
			switch b.State {
			case alloc.StateActiveAllocated:
				allocated += b.Size
				nAlloc++
				fallthrough
			case alloc.StateActivePendingFree:
				active += b.Size
				requested += b.RequestedSize
				nActive++
			}
		}
		if total != s.TotalSize {
			t.Errorf("segment 0x%x: blocks add up to %d of %d", s.Address, total, s.TotalSize)
		}
	}
	for k, v := range map[string]int64{
		"reserved_bytes.all.current":  reserved,
		"allocated_bytes.all.current": allocated,
		"active_bytes.all.current":    active,
		"requested_bytes.all.current": requested,
		"allocation.all.current":      nAlloc,
		"active.all.current":          nActive,
		"segment.all.current":         nPlain,
	} {
		if st[k] != v {
			t.Errorf("%s = %d, snapshot says %d", k, st[k], v)
		}
	}
	for _, m := range []string{"allocated_bytes", "reserved_bytes", "active_bytes", "allocation", "segment"} {
		p := m + "."
		if st[p+"all.current"] != st[p+"small_pool.current"]+st[p+"large_pool.current"] {
			t.Errorf("%s: all != small_pool + large_pool", m)
		}
		if st[p+"all.peak"] < st[p+"all.current"] {
			t.Errorf("%s: peak below current", m)
		}
	}
}

func workedExamples(t *testing.T, mk maker) {
	a, _ := mk(t, 512*mib, "")
	malloc(t, a, 4_000_000, 0)
	expect(t, a, map[string]int64{
		"allocated_bytes.all.current":      4_000_256,
		"reserved_bytes.all.current":       20_971_520,
		"inactive_split_bytes.all.current": 16_971_264,
	})
	b, _ := mk(t, 512*mib, "")
	malloc(t, b, 1024, 0)
	expect(t, b, map[string]int64{"active_bytes.all.current": 1024})
	c, _ := mk(t, 512*mib, "roundup_power2_divisions:4")
	if blk := malloc(t, c, 88_080_384, 0); blk.Size() != 100_663_296 {
		t.Errorf("roundup_power2_divisions:4: size %d, want 100663296", blk.Size())
	}
}

func poolsAndSegments(t *testing.T, mk maker) {
	for _, tc := range []struct {
		size, segment int64
		pool          string
	}{
		{1, 2 * mib, "small_pool"},
		{mib, 2 * mib, "small_pool"},
		{mib + 1, 20 * mib, "large_pool"},
		{10*mib - 512, 20 * mib, "large_pool"},
		{10 * mib, 10 * mib, "large_pool"},
		{21 * mib, 22 * mib, "large_pool"},
	} {
		a, _ := mk(t, 512*mib, "")
		malloc(t, a, tc.size, 0)
		expect(t, a, map[string]int64{"reserved_bytes." + tc.pool + ".current": tc.segment, "segment." + tc.pool + ".current": 1})
	}
}

func reuseAndBestFit(t *testing.T, mk maker) {
	a, _ := mk(t, 512*mib, "")
	x := malloc(t, a, 14*mib, 0)
	y := malloc(t, a, 12*mib, 0)
	z := malloc(t, a, 12*mib, 0)
	low, high := y, z
	if z.Addr() < y.Addr() {
		low, high = z, y
	}
	a.Free(x)
	a.Free(z)
	a.Free(y)
	got := malloc(t, a, 12*mib-4096, 0)
	if got.Addr() != low.Addr() {
		t.Errorf("best fit chose 0x%x, want the lowest-address 12 MiB block 0x%x", got.Addr(), low.Addr())
	}
	if got2 := malloc(t, a, 12*mib, 0); got2.Addr() != high.Addr() {
		t.Errorf("second 12 MiB block 0x%x, want 0x%x", got2.Addr(), high.Addr())
	}
	if got3 := malloc(t, a, 11*mib, 0); got3.Addr() != x.Addr() {
		t.Errorf("the cached 14 MiB block was not reused")
	}
	if other := malloc(t, a, 1000, 1); other.Stream() != 1 {
		t.Error("stream not recorded")
	}
	expect(t, a, map[string]int64{"num_device_alloc": 4, "num_device_free": 0})
}

func splitAndMerge(t *testing.T, mk maker) {
	a, _ := mk(t, 512*mib, "")
	var bs []*alloc.Block
	for range 4 {
		bs = append(bs, malloc(t, a, 3*mib, 0))
	}
	for i, b := range bs {
		if b.Segment() != bs[0].Segment() || b.Offset() != int64(i)*3*mib {
			t.Errorf("block %d at offset %d of segment 0x%x", i, b.Offset(), b.Segment())
		}
	}
	expect(t, a, map[string]int64{"inactive_split.all.current": 1, "inactive_split_bytes.all.current": 8 * mib})
	a.Free(bs[1])
	a.Free(bs[2])
	expect(t, a, map[string]int64{"inactive_split.all.current": 2, "inactive_split_bytes.all.current": 14 * mib})
	a.Free(bs[0])
	a.Free(bs[3])
	expect(t, a, map[string]int64{"inactive_split.all.current": 0, "inactive_split_bytes.all.current": 0, "segment.all.current": 1})
	s := a.Snapshot().Segments
	if len(s) != 1 || len(s[0].Blocks) != 1 || s[0].Blocks[0].State != alloc.StateInactive {
		t.Errorf("segment not merged back: %+v", s)
	}
}

func maxSplitSize(t *testing.T, mk maker) {
	a, _ := mk(t, 512*mib, "max_split_size_mb:64")
	big := malloc(t, a, 100*mib, 0)
	a.Free(big)
	if b := malloc(t, a, 30*mib, 0); b.Segment() == big.Segment() {
		t.Error("a request below max_split_size took an oversize block")
	}
	if b := malloc(t, a, 70*mib, 0); b.Segment() == big.Segment() {
		t.Error("an oversize request took a block 20 MiB or more larger")
	}
	if b := malloc(t, a, 90*mib, 0); b.Addr() != big.Addr() || b.Size() != 100*mib {
		t.Error("an oversize request did not reuse the oversize block")
	}
	expect(t, a, map[string]int64{"oversize_allocations.current": 2, "oversize_segments.current": 2, "max_split_size": 64 * mib})
}

func emptyCache(t *testing.T, mk maker) {
	a, _ := mk(t, 512*mib, "")
	keep := malloc(t, a, 1000, 0)
	gone := malloc(t, a, 1000, 0)
	big := malloc(t, a, 30*mib, 0)
	a.Free(gone)
	freeThenEmpty(t, a, big, 2*mib, 1)
	freeThenEmpty(t, a, keep, 0, 2)
}

// freeThenEmpty frees b and empties the cache: the reserved bytes and the
// device frees are then as given.
func freeThenEmpty(t *testing.T, a *alloc.Allocator, b *alloc.Block, reserved, deviceFrees int64) {
	t.Helper()
	a.Free(b)
	a.EmptyCache()
	expect(t, a, map[string]int64{"reserved_bytes.all.current": reserved, "num_device_free": deviceFrees})
}

func retryThenOOM(t *testing.T, mk maker) {
	a, _ := mk(t, 64*mib, "")
	x := malloc(t, a, 30*mib, 0)
	malloc(t, a, 20*mib, 0)
	a.Free(x)
	malloc(t, a, 32*mib, 0) // frees the cached 30 MiB, retries, succeeds
	expect(t, a, map[string]int64{"num_alloc_retries": 1, "num_ooms": 0, "num_device_free": 1})
	_, err := a.Malloc(40*mib, 0)
	var oom *alloc.OutOfMemoryError
	if !errors.As(err, &oom) {
		t.Fatalf("want *OutOfMemoryError, got %v", err)
	}
	expect(t, a, map[string]int64{"num_alloc_retries": 2, "num_ooms": 1})
	if oom.Capacity != 64*mib || oom.Allocated != 52*mib || oom.AllocSize != 40*mib || oom.Requested != 40*mib {
		t.Errorf("OOM fields %+v", oom)
	}
	if !strings.HasPrefix(err.Error(), "alloc: out of memory. Tried to allocate 40.00 MiB. GPU 0 has a total capacity of 64.00 MiB") {
		t.Errorf("OOM message %q", err)
	}
}

func fractionCap(t *testing.T, mk maker) {
	a, _ := mk(t, 100*mib, "")
	if err := a.SetMemoryFraction(0.25); err != nil {
		t.Fatal(err)
	}
	malloc(t, a, 20*mib, 0)
	_, err := a.Malloc(5*mib, 0)
	var oom *alloc.OutOfMemoryError
	if !errors.As(err, &oom) || !strings.Contains(err.Error(), "allowed") {
		t.Fatalf("want an OOM that names the allowed memory, got %v", err)
	}
	if err := a.SetMemoryFraction(1.5); err == nil {
		t.Error("fraction 1.5 accepted")
	}
	if err := a.SetMemoryFraction(1); err != nil {
		t.Fatal(err)
	}
	malloc(t, a, 5*mib, 0)
}

func recordStream(t *testing.T, mk maker) {
	a, _ := mk(t, 512*mib, "")
	b := malloc(t, a, 5*mib, 0)
	a.RecordStream(b, 1)
	a.Free(b)
	expect(t, a, map[string]int64{"allocated_bytes.all.current": 0})
	st := a.Stats()
	if act := st["active_bytes.all.current"]; act != 0 && act != b.Size() {
		t.Errorf("active bytes %d after a record-stream free", act)
	}
	a.EmptyCache() // waits for the stream
	expect(t, a, map[string]int64{"active_bytes.all.current": 0, "reserved_bytes.all.current": 0})
	if st := a.Stats(); st["num_sync_all_streams"] < 1 {
		t.Error("EmptyCache did not synchronize")
	}
}

func concurrent(t *testing.T, mk maker) {
	a, _ := mk(t, 1<<30, "")
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(g), 7))
			var live []*alloc.Block
			for i := range 200 {
				b, err := a.Malloc(r.Int64N(8*mib)+1, alloc.Stream(g%2))
				if err != nil {
					t.Error(err)
					return
				}
				live = append(live, b)
				if len(live) > 10 {
					a.Free(live[0])
					live = live[1:]
				}
				if i%50 == 0 {
					a.EmptyCache()
				}
			}
			for _, b := range live {
				a.Free(b)
			}
		}()
	}
	wg.Wait()
	a.EmptyCache()
	expect(t, a, map[string]int64{"reserved_bytes.all.current": 0, "allocated_bytes.all.current": 0})
}

func randomWorkload(t *testing.T, mk maker) {
	for _, conf := range []string{"", "max_split_size_mb:32", "roundup_power2_divisions:[1:2,16:8,>:4],garbage_collection_threshold:0.7"} {
		t.Run(fmt.Sprintf("%q", conf), func(t *testing.T) {
			a, mem := mk(t, 256*mib, conf)
			if strings.Contains(conf, "garbage") {
				if err := a.SetMemoryFraction(0.9); err != nil {
					t.Fatal(err)
				}
			}
			r := rand.New(rand.NewPCG(42, 1))
			var live []*alloc.Block
			for i := range 2000 {
				switch op := r.IntN(10); {
				case op < 5:
					var size int64
					switch r.IntN(3) {
					case 0:
						size = r.Int64N(4096) + 1
					case 1:
						size = r.Int64N(mib) + 1
					default:
						size = r.Int64N(40*mib) + 1
					}
					b, err := a.Malloc(size, alloc.Stream(r.IntN(2)))
					var oom *alloc.OutOfMemoryError
					if err != nil && !errors.As(err, &oom) {
						t.Fatal(err)
					}
					if b != nil {
						if b.Size() < size {
							t.Fatalf("block of %d for %d bytes", b.Size(), size)
						}
						live = append(live, b)
					}
				case op < 9 && len(live) > 0:
					j := r.IntN(len(live))
					if r.IntN(4) == 0 {
						a.RecordStream(live[j], alloc.Stream(r.IntN(3)))
					}
					a.Free(live[j])
					live = slices.Delete(live, j, j+1)
				case op == 9:
					a.EmptyCache()
				}
				if i%100 == 0 {
					CheckConsistent(t, a)
				}
			}
			for _, b := range live {
				a.Free(b)
			}
			a.EmptyCache()
			expect(t, a, map[string]int64{"reserved_bytes.all.current": 0, "allocated_bytes.all.current": 0, "active_bytes.all.current": 0})
			st := a.Stats()
			if st["num_device_alloc"] != st["num_device_free"] {
				t.Errorf("%d device mallocs but %d frees", st["num_device_alloc"], st["num_device_free"])
			}
			if fr, ok := mem.(alloc.FreeBytesReporter); ok && fr.FreeBytes() != mem.Capacity() {
				t.Errorf("device has %d of %d bytes free after EmptyCache", fr.FreeBytes(), mem.Capacity())
			}
		})
	}
}
