package alloc

import (
	"maps"
	"strings"
	"testing"
)

// statsWithout returns a's statistics without the keys that count device
// calls, which an adopted segment makes in fewer steps.
func statsWithout(a *Allocator, keys ...string) map[string]int64 {
	st := a.Stats()
	for _, k := range keys {
		delete(st, k)
	}
	return st
}

// TestAdoptMatchesMade builds the same state twice, once by Malloc and Free
// and once by Adopt, and checks that the two allocators count the same and
// decide the same from then on: plain segments of both pools, and
// expandable ones.
func TestAdoptMatchesMade(t *testing.T) {
	for _, tc := range []struct {
		name  string
		conf  string
		sizes []int64 // allocated in order; the odd ones are then freed
		prior []PriorSegment
		next  []int64 // allocated on both afterwards
	}{{
		name:  "large pool, split segment",
		sizes: []int64{4 * MiB, 2 * MiB, 6 * MiB, 3 * MiB},
		prior: []PriorSegment{{Size: 20 * MiB, Blocks: []PriorBlock{
			{Offset: 0, Size: 4 * MiB, Requested: 4 * MiB},
			{Offset: 6 * MiB, Size: 6 * MiB, Requested: 6 * MiB},
		}}},
		next: []int64{2 * MiB, 3 * MiB, 5 * MiB},
	}, {
		name:  "small pool",
		sizes: []int64{1000, 4096, 512},
		prior: []PriorSegment{{Size: 2 * MiB, Small: true, Blocks: []PriorBlock{
			{Offset: 0, Size: 1024, Requested: 1000},
			{Offset: 1024 + 4096, Size: 512, Requested: 512},
		}}},
		next: []int64{4000, 600},
	}, {
		name:  "expandable, large pool",
		conf:  "expandable_segments:True",
		sizes: []int64{30 * MiB, 5 * MiB, 12 * MiB},
		prior: []PriorSegment{{Expandable: true, Mapped: []PageRun{{0, 60 * MiB}}, Blocks: []PriorBlock{
			{Offset: 0, Size: 30 * MiB, Requested: 30 * MiB},
			{Offset: 35 * MiB, Size: 12 * MiB, Requested: 12 * MiB},
		}}},
		next: []int64{4 * MiB, 20 * MiB, 1 * MiB},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			made, _ := newTest(t, 1<<30, tc.conf)
			var live, all []*Block
			for _, size := range tc.sizes {
				all = append(all, mustMalloc(t, made, size, 0))
			}
			for i, b := range all {
				if i%2 == 1 {
					made.Free(b)
				} else {
					live = append(live, b)
				}
			}
			adopted, _ := newTest(t, 1<<30, tc.conf)
			var got []*Block
			for _, ps := range tc.prior {
				bs, err := adopted.Adopt(ps)
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, bs...)
			}
			if err := checkInvariants(adopted); err != nil {
				t.Fatal(err)
			}
			if len(got) != len(live) {
				t.Fatalf("Adopt returned %d blocks, want %d", len(got), len(live))
			}
			for i := range got {
				if got[i].Offset() != live[i].Offset() || got[i].Size() != live[i].Size() || got[i].Requested() != live[i].Requested() {
					t.Errorf("block %d: offset %d size %d requested %d, want %d %d %d", i,
						got[i].Offset(), got[i].Size(), got[i].Requested(), live[i].Offset(), live[i].Size(), live[i].Requested())
				}
			}
			// Peaks and totals remember the freed blocks of the made
			// allocator: compare what is current.
			current := func(a *Allocator) map[string]int64 {
				out := map[string]int64{}
				for k, v := range a.Stats() {
					if strings.HasSuffix(k, ".current") {
						out[k] = v
					}
				}
				return out
			}
			if a, b := current(made), current(adopted); !maps.Equal(a, b) {
				t.Fatalf("current statistics differ:\nmade    %v\nadopted %v", a, b)
			}
			for _, size := range tc.next {
				x, y := mustMalloc(t, made, size, 0), mustMalloc(t, adopted, size, 0)
				if x.Offset() != y.Offset() || x.Size() != y.Size() || (x.Segment() == live[0].Segment()) != (y.Segment() == got[0].Segment()) {
					t.Fatalf("Malloc(%d): made gives offset %d (%d bytes), adopted %d (%d bytes)", size, x.Offset(), x.Size(), y.Offset(), y.Size())
				}
			}
			for i := range got {
				made.Free(live[i])
				adopted.Free(got[i])
			}
			made.EmptyCache()
			adopted.EmptyCache()
			if a, b := statsWithout(made, "num_device_alloc", "num_device_free"), statsWithout(adopted, "num_device_alloc", "num_device_free"); a["reserved_bytes.all.current"] != b["reserved_bytes.all.current"] {
				t.Fatalf("after EmptyCache: reserved %d (made), %d (adopted)", a["reserved_bytes.all.current"], b["reserved_bytes.all.current"])
			}
		})
	}
}

// TestAdoptRefusesImpossibleLayouts: Adopt is fed from untrusted snapshots,
// so every layout the allocator could not have made is an error, and the
// allocator is left unchanged.
func TestAdoptRefusesImpossibleLayouts(t *testing.T) {
	for _, tc := range []struct {
		name string
		conf string
		ps   PriorSegment
		want string
	}{
		{"zero size", "", PriorSegment{}, "segment size 0"},
		{"odd size", "", PriorSegment{Size: 1000}, "segment size 1000"},
		{"block outside", "", PriorSegment{Size: 2 * MiB, Small: true, Blocks: []PriorBlock{{Offset: 2 * MiB, Size: 512}}}, "outside"},
		{"block across the end", "", PriorSegment{Size: 2 * MiB, Small: true, Blocks: []PriorBlock{{Offset: 2*MiB - 512, Size: 1024}}}, "outside"},
		{"overlap", "", PriorSegment{Size: 20 * MiB, Blocks: []PriorBlock{{Offset: 0, Size: 4 * MiB}, {Offset: 2 * MiB, Size: 4 * MiB}}}, "overlaps"},
		{"out of order", "", PriorSegment{Size: 20 * MiB, Blocks: []PriorBlock{{Offset: 8 * MiB, Size: 4 * MiB}, {Offset: 0, Size: 4 * MiB}}}, "overlaps"},
		{"unaligned block", "", PriorSegment{Size: 20 * MiB, Blocks: []PriorBlock{{Offset: 100, Size: 4 * MiB}}}, "multiple of 512"},
		{"negative offset", "", PriorSegment{Size: 20 * MiB, Blocks: []PriorBlock{{Offset: -512, Size: 4 * MiB}}}, "multiple of 512"},
		{"requested above size", "", PriorSegment{Size: 20 * MiB, Blocks: []PriorBlock{{Offset: 0, Size: 4 * MiB, Requested: 5 * MiB}}}, "more than its"},
		{"mapped pages on a plain segment", "", PriorSegment{Size: 20 * MiB, Mapped: []PageRun{{0, 20 * MiB}}}, "no mapped pages"},
		{"expandable with a size", "expandable_segments:True", PriorSegment{Expandable: true, Size: 20 * MiB}, "must be 0"},
		{"unaligned run", "expandable_segments:True", PriorSegment{Expandable: true, Mapped: []PageRun{{MiB, 20 * MiB}}}, "whole 20971520-byte pages"},
		{"run past the range", "expandable_segments:True", PriorSegment{Expandable: true, Mapped: []PageRun{{1 << 40, 20 * MiB}}}, "inside the"},
		{"block in unmapped pages", "expandable_segments:True", PriorSegment{Expandable: true, Mapped: []PageRun{{0, 20 * MiB}},
			Blocks: []PriorBlock{{Offset: 20 * MiB, Size: 4 * MiB}}}, "outside"},
		{"device too small", "", PriorSegment{Size: 2 << 30}, "device malloc"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, mem := newTest(t, 1<<30, tc.conf)
			_, err := a.Adopt(tc.ps)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "alloc: Adopt: ") {
				t.Fatalf("Adopt(%+v) = %v, want an error with %q", tc.ps, err, tc.want)
			}
			if n, bytes := mem.Live(); n != 0 || bytes != 0 || a.MemoryReserved() != 0 {
				t.Fatalf("refused Adopt left %d segments (%d bytes), reserved %d", n, bytes, a.MemoryReserved())
			}
		})
	}
}

// TestCachedFit asks the cache without taking from it: the same answer as
// Malloc's first step (get_free_block), and no statistic changes.
func TestCachedFit(t *testing.T) {
	a, _ := newTest(t, 1<<30, "max_split_size_mb:40,garbage_collection_threshold:0.5")
	if err := a.SetMemoryFraction(0.5); err != nil {
		t.Fatal(err)
	}
	keep := mustMalloc(t, a, 4*MiB, 0)
	big := mustMalloc(t, a, 50*MiB, 0)
	small := mustMalloc(t, a, 6*MiB, 0)
	a.Free(big)
	a.Free(small)
	before := a.Stats()
	for _, tc := range []struct {
		size int64
		s    Stream
		want bool
	}{
		{6 * MiB, 0, true},   // the cached split block
		{14 * MiB, 0, true},  // the rest of the 20 MiB segment
		{6 * MiB, 1, false},  // another stream
		{30 * MiB, 0, false}, // below max_split_size: never an oversize block
		{45 * MiB, 0, true},  // oversize, less than 20 MiB smaller than the 50 MiB block
		{25 * MiB, 0, false}, // ... 30 MiB would be left over
		{512, 0, false},      // the small pool is empty
		{0, 0, false},        // no block
		{-1, 0, false},       // refused
		{MaxRequest + 1, 0, false},
	} {
		if got := a.CachedFit(tc.size, tc.s); got != tc.want {
			t.Errorf("CachedFit(%d, %d) = %v, want %v", tc.size, tc.s, got, tc.want)
		}
	}
	if after := a.Stats(); !maps.Equal(before, after) {
		t.Fatalf("CachedFit changed the statistics")
	}
	a.Free(keep)
}
