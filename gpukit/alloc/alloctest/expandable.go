package alloctest

import (
	"testing"

	"github.com/gpumem/course/gpukit/alloc"
)

// expandableSegments checks expandable_segments:True on the backend. A
// Memory with page mapping (alloc.PageMemory) must grow and shrink one
// segment page by page, with the numbers of PyTorch's allocator (derived in
// package alloc's expandable_test.go); one without must fall back to plain
// segments.
func expandableSegments(t *testing.T, mk maker) {
	const conf = "expandable_segments:True"
	_, mem := mk(t, 512*mib, "")
	if _, ok := mem.(alloc.PageMemory); !ok {
		t.Run("Fallback", func(t *testing.T) {
			a, _ := mk(t, 512*mib, conf)
			malloc(t, a, 30*mib, 0)
			expect(t, a, map[string]int64{"segment.all.current": 1, "reserved_bytes.all.current": 30 * mib})
		})
		return
	}
	t.Run("GrowAndShrink", func(t *testing.T) {
		a, _ := mk(t, 512*mib, conf)
		a.RecordHistory(alloc.HistoryOptions{Enabled: true})
		// 30 MiB maps two 20 MiB pages; the next 30 MiB takes the free
		// 10 MiB and one more page, right after the first block.
		x := malloc(t, a, 30*mib, 0)
		expect(t, a, map[string]int64{"reserved_bytes.large_pool.current": 40 * mib, "segment.all.current": 0,
			"num_device_alloc": 1, "inactive_split.all.current": 0})
		y := malloc(t, a, 30*mib, 0)
		if y.Addr() != x.Addr()+30*mib || y.Segment() != x.Segment() {
			t.Errorf("second block at 0x%x, want 0x%x in the same segment", y.Addr(), x.Addr()+30*mib)
		}
		expect(t, a, map[string]int64{"reserved_bytes.all.current": 60 * mib, "num_device_alloc": 2})
		snap := a.Snapshot()
		if len(snap.Segments) != 1 || !snap.Segments[0].IsExpandable || snap.Segments[0].TotalSize != 60*mib {
			t.Errorf("snapshot: %d segments, want one expandable segment of 60 MiB", len(snap.Segments))
		}
		// Free the first block: EmptyCache unmaps only the whole free
		// page [0, 20); [20, 30) stays mapped next to the live block.
		freeThenEmpty(t, a, x, 40*mib, 1)
		freeThenEmpty(t, a, y, 0, 2)
		var maps, unmaps int
		for _, e := range a.Snapshot().DeviceTraces[0] {
			switch e.Action {
			case alloc.ActionSegmentMap:
				maps++
			case alloc.ActionSegmentUnmap:
				unmaps++
			case alloc.ActionSegmentAlloc, alloc.ActionSegmentFree:
				t.Errorf("trace has %s with expandable segments", e.Action)
			}
		}
		if maps != 2 || unmaps != 2 {
			t.Errorf("trace: %d segment_map, %d segment_unmap; want 2 and 2", maps, unmaps)
		}
	})
	t.Run("SmallPool", func(t *testing.T) {
		a, _ := mk(t, 512*mib, conf)
		for range 3 {
			malloc(t, a, mib, 0)
		}
		expect(t, a, map[string]int64{"reserved_bytes.small_pool.current": 4 * mib, "num_device_alloc": 2})
	})
	t.Run("OOMRetryUnmaps", func(t *testing.T) {
		a, _ := mk(t, 100*mib, conf)
		x := malloc(t, a, 60*mib, 0)
		malloc(t, a, 30*mib, 1)
		a.Free(x)
		// Stream 1's 50 MiB need two more pages: only after stream 0's
		// three free pages are unmapped.
		if y := malloc(t, a, 50*mib, 1); y.Offset() != 30*mib {
			t.Errorf("50 MiB block at offset %d, want %d", y.Offset(), 30*mib)
		}
		expect(t, a, map[string]int64{"reserved_bytes.all.current": 80 * mib, "num_alloc_retries": 1,
			"num_device_alloc": 3, "num_device_free": 1})
	})
	t.Run("BatchJitter", func(t *testing.T) {
		// The pattern of PyTorch's note: batches of N, N+1, ... samples of
		// 3 MiB, each freed before the next. Plain segments: no cached
		// segment is large enough for the next batch, so each gets its own:
		// 12, 16, 18, 22, 24 and 28 MiB (sizes of 10 MiB and more rounded
		// up to 2 MiB; a 1 MiB remainder is not split off) = 120 MiB.
		// Expandable: 12, 15 and 18 MiB fit in the first 20 MiB page, 21 MiB
		// maps a second page next to it, and 24 and 27 MiB fit in the two.
		plain, _ := mk(t, 512*mib, "")
		exp, _ := mk(t, 512*mib, conf)
		for _, a := range []*alloc.Allocator{plain, exp} {
			for n := int64(4); n <= 9; n++ {
				a.Free(malloc(t, a, n*3*mib, 0))
			}
		}
		expect(t, plain, map[string]int64{"reserved_bytes.all.current": 120 * mib, "segment.all.current": 6})
		expect(t, exp, map[string]int64{"reserved_bytes.all.current": 40 * mib, "segment.all.current": 0,
			"num_device_alloc": 2})
	})
}
