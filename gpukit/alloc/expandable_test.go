package alloc

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
)

// The expected numbers below are derived by hand from PyTorch's
// c10/cuda/CUDACachingAllocator.cpp (the commit named in doc.go): the
// functions named in each step's comment.

// TestExpandableGrowAndShrink follows one expandable segment of the large
// pool through two 30 MiB allocations, their frees and two EmptyCache calls.
func TestExpandableGrowAndShrink(t *testing.T) {
	a, mem := newTest(t, 1<<30, "expandable_segments:True")
	a.RecordHistory(HistoryOptions{Enabled: true})

	// malloc(30 MiB): get_free_block finds nothing; alloc_block ->
	// try_allocate_expandable_block -> find_expandable_block reserves
	// 1 1/8 of the device in 20 MiB pages: ceil(1.125 GiB / 20 MiB) = 58
	// pages = 1160 MiB. map_block(candidate, 30 MiB) maps
	// ceil(30/20) = 2 pages (40 MiB): reserved_bytes 40 MiB,
	// num_device_alloc 1, and no segment is counted. should_split with
	// expandable segments on: 10 MiB >= 512 B remain, so the block is
	// split; inactive_split is not counted for expandable segments.
	x := mustMalloc(t, a, 30*MiB, 0)
	expectStats(t, a, map[string]int64{
		"reserved_bytes.all.current":        40 * MiB,
		"reserved_bytes.large_pool.current": 40 * MiB,
		"allocated_bytes.all.current":       30 * MiB,
		"segment.all.current":               0,
		"num_device_alloc":                  1,
		"inactive_split.all.current":        0,
		"inactive_split_bytes.all.current":  0,
	})
	if ranges, pages := mem.Reservations(); ranges != 1 || pages != 2 {
		t.Fatalf("reservations %d, pages %d; want 1 and 2", ranges, pages)
	}
	if got := a.expSegs[0].size; got != 58*20*MiB {
		t.Errorf("reserved range %d bytes, want 58 pages of 20 MiB = %d", got, 58*20*MiB)
	}
	base := x.Segment()
	if x.Addr() != base || x.Offset() != 0 {
		t.Errorf("first block at offset %d", x.Offset())
	}

	// malloc(30 MiB): the free 10 MiB block is too small for
	// get_free_block; find_expandable_block takes the free block before the
	// unmapped rest (10 MiB + 1120 MiB of room) and map_block maps
	// min(20 MiB, rest) = 1 page, which merges with it: 30 MiB exactly at
	// offset 30 MiB, not split. reserved 60 MiB, num_device_alloc 2.
	y := mustMalloc(t, a, 30*MiB, 0)
	if y.Addr() != base+30*MiB {
		t.Errorf("second block at 0x%x, want 0x%x", y.Addr(), base+30*MiB)
	}
	expectStats(t, a, map[string]int64{"reserved_bytes.all.current": 60 * MiB, "num_device_alloc": 2})

	// The snapshot reports the mapped run as one expandable segment.
	snap := a.Snapshot()
	if len(snap.Segments) != 1 || !snap.Segments[0].IsExpandable || snap.Segments[0].TotalSize != 60*MiB ||
		len(snap.Segments[0].Blocks) != 2 {
		t.Fatalf("snapshot segments %+v", snap.Segments)
	}

	// free(x) then empty_cache: release_blocks -> unmap_block on [0, 30):
	// only page 0 ([0, 20)) is entirely free; [20, 30) stays mapped and
	// free. reserved 40 MiB, num_device_free 1 (one per unmap_block call).
	free(t, a, x)
	a.EmptyCache()
	expectStats(t, a, map[string]int64{"reserved_bytes.all.current": 40 * MiB, "num_device_free": 1})
	snap = a.Snapshot()
	if len(snap.Segments) != 1 || snap.Segments[0].Address != base+20*MiB || snap.Segments[0].TotalSize != 40*MiB {
		t.Fatalf("after the first EmptyCache: %+v", snap.Segments)
	}

	// free(y) merges [20, 60) into one free block; empty_cache unmaps its
	// two pages, which merge with the unmapped blocks on both sides into
	// the whole range: release_expandable_segment frees it.
	free(t, a, y)
	a.EmptyCache()
	expectStats(t, a, map[string]int64{"reserved_bytes.all.current": 0, "num_device_free": 2, "num_device_alloc": 2})
	if ranges, pages := mem.Reservations(); ranges != 0 || pages != 0 {
		t.Errorf("after EmptyCache: %d ranges, %d pages", ranges, pages)
	}

	// The trace has PyTorch's segment_map and segment_unmap entries.
	var acts []string
	for _, e := range a.Snapshot().DeviceTraces[0] {
		if strings.HasPrefix(e.Action, "segment") {
			acts = append(acts, fmt.Sprintf("%s %d+%d", e.Action, (e.Addr-base)/MiB, e.Size/MiB))
		}
	}
	want := "segment_map 0+40,segment_map 40+20,segment_unmap 0+20,segment_unmap 20+40"
	if got := strings.Join(acts, ","); got != want {
		t.Errorf("segment trace %s, want %s", got, want)
	}
}

// TestExpandableSmallPool: the small pool's pages are 2 MiB.
func TestExpandableSmallPool(t *testing.T) {
	a, _ := newTest(t, 1<<30, "expandable_segments:True")
	// 3 x 1 MiB: the first maps one 2 MiB page and splits; the second takes
	// the free 1 MiB; the third maps a second page.
	for range 3 {
		mustMalloc(t, a, MiB, 0)
	}
	expectStats(t, a, map[string]int64{
		"reserved_bytes.small_pool.current": 4 * MiB,
		"num_device_alloc":                  2,
		"segment.small_pool.current":        0,
	})
	if got := a.expSegs[0].exp.page; got != SmallBuffer {
		t.Errorf("small pool page %d", got)
	}
}

// TestExpandableOOMRetryUnmapsFreePages: when mapping fails, the last
// resort (release_cached_blocks) unmaps the free pages of every stream's
// segment, and the retry maps them again where they are needed.
func TestExpandableOOMRetryUnmapsFreePages(t *testing.T) {
	a, _ := newTest(t, 100*MiB, "expandable_segments:True")
	// Stream 0: 60 MiB maps 3 pages. Stream 1: its own segment, 30 MiB
	// maps 2 pages. The device (100 MiB) is full.
	x := mustMalloc(t, a, 60*MiB, 0)
	mustMalloc(t, a, 30*MiB, 1)
	free(t, a, x)
	// Stream 1 wants 50 MiB: its free 10 MiB plus 2 more pages, which do
	// not fit; max_split_size is unlimited, so
	// release_available_cached_blocks does nothing; release_cached_blocks
	// unmaps stream 0's 3 pages (its segment is then released) and finds no
	// whole page in stream 1's free [30, 40); the retry maps 2 pages.
	y := mustMalloc(t, a, 50*MiB, 1)
	if y.Offset() != 30*MiB {
		t.Errorf("50 MiB block at offset %d, want %d", y.Offset(), 30*MiB)
	}
	expectStats(t, a, map[string]int64{
		"reserved_bytes.all.current": 80 * MiB,
		"num_alloc_retries":          1,
		"num_device_alloc":           3,
		"num_device_free":            1,
		"num_ooms":                   0,
	})
	if len(a.expSegs) != 1 {
		t.Errorf("%d expandable segments, want stream 1's only", len(a.expSegs))
	}
}

// TestExpandableOOMMessage: a request that no free pages can make room for
// is an out-of-memory error with PyTorch's message; what is reserved but
// unallocated is the free part of mapped pages.
func TestExpandableOOMMessage(t *testing.T) {
	a, _ := newTest(t, 100*MiB, "expandable_segments:True")
	mustMalloc(t, a, 30*MiB, 0) // 40 MiB mapped, 10 MiB free in it
	mustMalloc(t, a, 50*MiB, 0) // free 10 MiB + 2 pages: 80 MiB mapped
	_, err := a.Malloc(30*MiB, 0)
	oom, ok := err.(*OutOfMemoryError)
	if !ok {
		t.Fatalf("Malloc: %v, want an out-of-memory error", err)
	}
	// Blocks [0, 30) and [30, 80) fill the 4 mapped pages exactly, so the
	// 30 MiB need 2 new pages (40 MiB) and 20 MiB are left on the device;
	// release_cached_blocks finds no free page, the retry fails. "Tried to
	// allocate" is get_allocation_size(30 MiB) = 30 MiB.
	if oom.AllocSize != 30*MiB || oom.ReservedUnallocated != 0 || oom.DeviceFree != 20*MiB {
		t.Errorf("oom %+v", oom)
	}
	expectStats(t, a, map[string]int64{"num_alloc_retries": 1, "num_ooms": 1, "reserved_bytes.all.current": 80 * MiB})
}

// TestExpandableBestFitUsesExpandableSize: get_free_block compares blocks of
// expandable segments by the size they can grow to.
func TestExpandableBestFitUsesExpandableSize(t *testing.T) {
	a, _ := newTest(t, 1<<30, "expandable_segments:True")
	// Two free blocks: A = [0, 10) between allocations and B = [18, 20) at
	// the end of the mapped page, followed by the unmapped rest.
	p := mustMalloc(t, a, 10*MiB, 0) // [0, 10), free [10, 20)
	mustMalloc(t, a, 6*MiB, 0)       // [10, 16), free [16, 20)
	mustMalloc(t, a, 2*MiB, 0)       // [16, 18), free B = [18, 20)
	free(t, a, p)                    // free A = [0, 10)
	// A request of 2 MiB: lower_bound gives B (2 MiB, the smallest that
	// fits), whose expandable size is 2 + 1140 MiB (the unmapped rest of
	// the 1160 MiB range); A's is 10 MiB, smaller, so get_free_block moves
	// on to A.
	r := mustMalloc(t, a, 2*MiB, 0)
	if r.Offset() != 0 {
		t.Errorf("2 MiB block at offset %d MiB, want 0 (block A)", r.Offset()/MiB)
	}
}

// TestExpandableWithMaxSplitSize: PyTorch keeps applying max_split_size's
// oversize rule in get_free_block to blocks of expandable segments, so a
// small request passes over a large free block that is followed by a live
// one and maps a new page instead (pytorch/pytorch issue 123548).
func TestExpandableWithMaxSplitSize(t *testing.T) {
	a, _ := newTest(t, 1<<30, "expandable_segments:True,max_split_size_mb:20")
	x := mustMalloc(t, a, 30*MiB, 0) // [0, 30) in 2 mapped pages, free [30, 40)
	mustMalloc(t, a, 10*MiB, 0)      // takes [30, 40) whole
	expectStats(t, a, map[string]int64{"oversize_allocations.current": 1, "oversize_segments.current": 0})
	free(t, a, x) // free [0, 30): 30 MiB >= max_split_size
	// 2 MiB < max_split_size and the 30 MiB block is oversize: refused by
	// get_free_block; find_expandable_block starts at the unmapped rest
	// (the block before it is allocated) and maps a page.
	y := mustMalloc(t, a, 2*MiB, 0)
	if y.Offset() != 40*MiB {
		t.Errorf("2 MiB block at offset %d MiB, want 40", y.Offset()/MiB)
	}
	expectStats(t, a, map[string]int64{"reserved_bytes.all.current": 60 * MiB, "num_device_alloc": 2})

	// Without max_split_size the same request reuses the free block.
	b, _ := newTest(t, 1<<30, "expandable_segments:True")
	x = mustMalloc(t, b, 30*MiB, 0)
	mustMalloc(t, b, 10*MiB, 0)
	free(t, b, x)
	if y := mustMalloc(t, b, 2*MiB, 0); y.Offset() != 0 {
		t.Errorf("without max_split_size: offset %d MiB, want 0", y.Offset()/MiB)
	}
	expectStats(t, b, map[string]int64{"reserved_bytes.all.current": 40 * MiB})
}

// TestExpandableReleaseAvailableSkipsExpandable: release_available_cached_
// blocks never releases a block of an expandable segment (PyTorch PR
// 134338); the last resort unmaps its pages instead.
func TestExpandableReleaseAvailableSkipsExpandable(t *testing.T) {
	a, _ := newTest(t, 80*MiB, "expandable_segments:True,max_split_size_mb:20")
	x := mustMalloc(t, a, 40*MiB, 0) // [0, 40): 2 pages
	mustMalloc(t, a, 20*MiB, 0)      // [40, 60): 1 page
	free(t, a, x)                    // free, oversize (40 >= 20)
	// 60 MiB: nothing cached fits. The segment's range is 5 pages
	// (ceil(90 MiB / 20 MiB)), so its unmapped rest [60, 100) is too small:
	// find_expandable_block reserves a second range, and mapping 3 pages
	// there fails (60 + 60 > 80). release_available_cached_blocks:
	// lower_bound(60 MiB) is the end, the block before it is the oversize
	// free 40 MiB of an expandable segment: passed over, nothing released,
	// false. release_cached_blocks unmaps its 2 pages; the retry maps 3
	// pages at the start of the second range.
	y := mustMalloc(t, a, 60*MiB, 0)
	if y.Segment() == x.Segment() || y.Offset() != 0 || len(a.expSegs) != 2 {
		t.Errorf("60 MiB block at 0x%x+%d MiB (first range 0x%x), %d ranges; want offset 0 of a second range",
			y.Segment(), y.Offset()/MiB, x.Segment(), len(a.expSegs))
	}
	expectStats(t, a, map[string]int64{"num_alloc_retries": 1, "num_device_free": 1, "num_device_alloc": 3,
		"reserved_bytes.all.current": 80 * MiB})
}

// TestExpandableSwitchedOff: after expandable_segments:False, blocks in
// expandable segments serve no new allocation (get_free_block skips them)
// and new memory comes from plain segments with the usual split rules.
func TestExpandableSwitchedOff(t *testing.T) {
	a, _ := newTest(t, 1<<30, "expandable_segments:True")
	mustMalloc(t, a, 30*MiB, 0) // leaves a free 10 MiB expandable block
	a.SetExpandableSegments(false)
	if a.Config().ExpandableSegments {
		t.Error("Config still has expandable segments")
	}
	b := mustMalloc(t, a, 5*MiB, 0)
	// A plain 20 MiB segment, split: 15 MiB inactive split.
	expectStats(t, a, map[string]int64{
		"segment.all.current":              1,
		"reserved_bytes.all.current":       60 * MiB,
		"inactive_split.all.current":       1,
		"inactive_split_bytes.all.current": 15 * MiB,
	})
	if b.Offset() != 0 {
		t.Errorf("5 MiB block at offset %d of a new segment", b.Offset())
	}
	a.SetExpandableSegments(true)
	// On again, 8 MiB: lower_bound gives the expandable 10 MiB block, whose
	// expandable size (10 + 1120 MiB) is larger than the next block's, the
	// plain 15 MiB one, so get_free_block takes the plain block, and splits
	// it with the 512-byte rule of should_split.
	c := mustMalloc(t, a, 8*MiB, 0)
	if c.Segment() != b.Segment() || c.Offset() != 5*MiB {
		t.Errorf("8 MiB block at 0x%x+%d, want the plain segment at offset 5 MiB", c.Segment(), c.Offset())
	}
	expectStats(t, a, map[string]int64{"inactive_split_bytes.all.current": 7 * MiB, "reserved_bytes.all.current": 60 * MiB})
}

// TestExpandableFraction: alloc_block checks the memory fraction against the
// segment size that a plain malloc would ask for, before mapping.
func TestExpandableFraction(t *testing.T) {
	a, _ := newTest(t, 100*MiB, "expandable_segments:True")
	if err := a.SetMemoryFraction(0.5); err != nil { // 50 MiB allowed
		t.Fatal(err)
	}
	mustMalloc(t, a, 30*MiB, 0) // 0 + 30 MiB <= 50: maps 40 MiB
	// 4 MiB: the free 10 MiB block serves it without alloc_block.
	mustMalloc(t, a, 4*MiB, 0)
	// 12 MiB: the free 6 MiB is too small; alloc_block compares 40 MiB
	// reserved + get_allocation_size(12 MiB) = 52 MiB with the 50 allowed
	// and refuses before mapping; EmptyCache's unmapping finds no whole
	// free page; out of memory.
	if _, err := a.Malloc(12*MiB, 0); err == nil {
		t.Fatal("Malloc(12 MiB) above the fraction succeeded")
	}
	expectStats(t, a, map[string]int64{"reserved_bytes.all.current": 40 * MiB, "num_ooms": 1})
}

// TestExpandableUnsupported: on a Memory without PageMemory, or whose
// Reserve says the device has no virtual memory management, the setting
// warns once (PyTorch's "expandable_segments not supported on this
// platform") and plain segments are used.
func TestExpandableUnsupported(t *testing.T) {
	var warnings []string
	var mu sync.Mutex
	old := warnf
	warnf = func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		warnings = append(warnings, fmt.Sprintf(format, args...))
	}
	warnOnce = sync.Once{}
	t.Cleanup(func() { warnf = old; warnOnce = sync.Once{} })

	cfg, _ := ParseConfig("expandable_segments:True")
	plain := New(struct{ Memory }{NewFakeMemory(1 << 30)}, cfg, 0)
	if _, err := plain.Malloc(30*MiB, 0); err != nil {
		t.Fatal(err)
	}
	if got := plain.Stats()["segment.all.current"]; got != 1 {
		t.Errorf("segments %d, want a plain one", got)
	}

	mem := NewFakeMemory(1 << 30)
	mem.NoPages = true
	noVMM := New(mem, cfg, 0)
	for range 2 {
		if _, err := noVMM.Malloc(30*MiB, 0); err != nil {
			t.Fatal(err)
		}
	}
	if n, _ := mem.Live(); n != 2 {
		t.Errorf("%d plain segments, want 2", n)
	}
	want := "alloc: Warning: expandable_segments not supported on this platform"
	if len(warnings) != 1 || warnings[0] != want {
		t.Errorf("warnings %q, want one %q", warnings, want)
	}
}

// TestExpandableRecordStream: a block used on another stream is not
// allocatable, so find_expandable_block does not grow into it and its pages
// are not unmapped until the stream's work is done.
func TestExpandableRecordStream(t *testing.T) {
	a, mem := newTest(t, 1<<30, "expandable_segments:True")
	x := mustMalloc(t, a, 40*MiB, 0)
	a.RecordStream(x, 1)
	free(t, a, x) // pending on stream 1
	y := mustMalloc(t, a, 20*MiB, 0)
	if y.Offset() != 40*MiB {
		t.Errorf("20 MiB block at offset %d MiB, want 40 (past the pending block)", y.Offset()/MiB)
	}
	mem.Complete(1)
	a.EmptyCache()
	expectStats(t, a, map[string]int64{"reserved_bytes.all.current": 20 * MiB})
}

// overcommitMemory maps pages beyond the capacity it reports, as a device
// with oversubscription (or a replay that follows another card) may.
type overcommitMemory struct{ *FakeMemory }

func (m overcommitMemory) Capacity() int64 { return 1 << 30 }

// TestExpandableRequestBeyondRange: a request larger than an expandable
// segment's whole range (1 1/8 of the device) cannot be placed in it even
// when the device maps every page: it is an OOM, not a nil dereference
// past the range's last block.
func TestExpandableRequestBeyondRange(t *testing.T) {
	cfg, err := ParseConfig("expandable_segments:True")
	if err != nil {
		t.Fatal(err)
	}
	a := New(overcommitMemory{NewFakeMemory(1 << 40)}, cfg, 0)
	_, err = a.Malloc(2<<30, 0)
	var oom *OutOfMemoryError
	if !errors.As(err, &oom) {
		t.Fatalf("Malloc(2 GiB) = %v, want an OutOfMemoryError", err)
	}
	// The retry mapped the whole range again, as PyTorch's would on such
	// a device; EmptyCache unmaps it.
	a.EmptyCache()
	if err := checkInvariants(a); err != nil {
		t.Fatal(err)
	}
	if b := mustMalloc(t, a, 30*MiB, 0); b.Size() != 30*MiB {
		t.Fatalf("after the OOM, Malloc(30 MiB) gave %d bytes", b.Size())
	}
}

// TestSwitchedOffLeavesSplitOversizeBlock: expandable segments on let a
// plain segment's oversize block split (should_split's 512-byte rule
// with expandable_segments() true); switched off, the block at the head
// of that segment, freed while the rest is in use, is an oversize cached
// block of a split segment. release_available_cached_blocks would pass it
// to release_block, whose cudaFree of the segment's base would free the
// blocks still in use (c10/cuda/CUDACachingAllocator.cpp checks neither
// there); gpukit passes it over, as release_blocks and the garbage
// collector pass over split blocks, and the request runs out of memory.
// (Found by FuzzExpandable, testdata/fuzz/FuzzExpandable/d2f1d14f4e80f89d:
// an internal-error panic.)
func TestSwitchedOffLeavesSplitOversizeBlock(t *testing.T) {
	a, _ := newTest(t, 60*MiB, "max_split_size_mb:40")
	x := mustMalloc(t, a, 45*MiB+1, 0) // oversize: a 46 MiB segment, whole
	a.Free(x)
	a.SetExpandableSegments(true)
	head := mustMalloc(t, a, 41*MiB, 0) // the cached 46 MiB block, split: 5 MiB left
	tail := mustMalloc(t, a, 4*MiB, 0)  // from that 5 MiB
	if head.Segment() != tail.Segment() || head.Offset() != 0 || tail.Offset() != 41*MiB {
		t.Fatalf("blocks at 0x%x+%d and 0x%x+%d, want one segment split at 41 MiB",
			head.Segment(), head.Offset(), tail.Segment(), tail.Offset())
	}
	a.SetExpandableSegments(false)
	a.Free(head) // an oversize free block at the head of a segment in use
	// 30 MiB: no cached block serves it (the 41 MiB one is oversize for a
	// request below max_split_size), 46 + 30 MiB exceed the card, and
	// nothing is released: out of memory, the segment still reserved.
	_, err := a.Malloc(30*MiB, 0)
	var oom *OutOfMemoryError
	if !errors.As(err, &oom) {
		t.Fatalf("Malloc(30 MiB) = %v, want out of memory", err)
	}
	if err := checkInvariants(a); err != nil {
		t.Fatal(err)
	}
	expectStats(t, a, map[string]int64{"reserved_bytes.all.current": 46 * MiB, "num_device_free": 0,
		"allocated_bytes.all.current": 4 * MiB})
	a.Free(tail) // the segment whole again: now it can go
	if err := a.TryEmptyCache(); err != nil {
		t.Fatal(err)
	}
	expectStats(t, a, map[string]int64{"reserved_bytes.all.current": 0, "num_device_free": 1})
}
