package alloc

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
)

var fuzzConfigs = []string{
	"",
	"max_split_size_mb:20",
	"max_split_size_mb:40,garbage_collection_threshold:0.5",
	"roundup_power2_divisions:4",
	"roundup_power2_divisions:[1:2,4:8,>:1],max_split_size_mb:64",
	"garbage_collection_threshold:0.8",
}

// hugeSizes are requests near 2^63 that once wrapped around in the size
// arithmetic and were "allocated" in the small pool (issue 8).
var hugeSizes = []int64{
	math.MaxInt64,
	math.MaxInt64 - 511,
	8070450532247928833, // wrapped with roundup_power2_divisions:4
	MaxRequest,
	MaxRequest + 1,
	MaxRequest - 1,
	1 << 40, // larger than any fuzzed device, but representable
}

// fuzzSize turns two bytes into a request size that covers every size class.
func fuzzSize(hi, lo byte) int64 {
	v := int64(hi)<<8 | int64(lo)
	if hi == 0xff && lo >= 0xf0 {
		return hugeSizes[int(lo-0xf0)%len(hugeSizes)]
	}
	switch hi >> 6 {
	case 0:
		return v%4096 + 1 // small, sub-KiB to 4 KiB
	case 1:
		return (v % 1024) * 1024 // up to 1 MiB (0 included)
	case 2:
		return (v%12)*MiB + (v%7)*512 + 1 // 1..12 MiB
	default:
		return (v%90)*MiB + 1 // large, up to 90 MiB
	}
}

// expandableConfigs are the configurations of FuzzExpandable: expandable
// segments alone and with every other key.
var expandableConfigs = []string{
	"expandable_segments:True",
	"expandable_segments:True,max_split_size_mb:20",
	"expandable_segments:True,max_split_size_mb:40,garbage_collection_threshold:0.5",
	"expandable_segments:True,roundup_power2_divisions:4",
	"roundup_power2_divisions:[1:2,4:8,>:1],max_split_size_mb:64,expandable_segments:True",
	"garbage_collection_threshold:0.8,expandable_segments:True",
}

func runFuzz(t *testing.T, data []byte) { fuzzWith(t, data, fuzzConfigs, false) }

// fuzzWith runs the operations that data encodes on an allocator with one of
// configs. With toggle, half of the memory-fraction operations switch
// expandable segments on or off instead. When the first byte has its high
// bit set, the device fails every k-th call of each of Free, UnmapPages
// and Unreserve, k from 1 (every call) to 8 (bits 4-6): Malloc and
// TryEmptyCache must return that failure, never panic, and leave the
// invariants true; at the end the device frees again and everything must
// be released (issue 36).
func fuzzWith(t *testing.T, data []byte, configs []string, toggle bool) {
	if len(data) == 0 {
		return
	}
	cfg, err := ParseConfig(configs[int(data[0])%len(configs)])
	if err != nil {
		t.Fatal(err)
	}
	fm := newFailingMemory(256 * MiB)
	inject := data[0]&0x80 != 0
	if inject {
		every := int(data[0]>>4&7) + 1
		fm.failOn(func(_ string, call int) bool { return call%every == 0 })
	}
	data = data[1:]
	mem := fm.FakeMemory
	a := New(fm, cfg, 0)
	// injected reports whether err is a failure the device was told to
	// make, returned as the package's error.
	injected := func(err error) bool {
		return inject && errors.Is(err, errInjected) && strings.HasPrefix(err.Error(), "alloc: ")
	}
	a.RecordHistory(HistoryOptions{Enabled: true, MaxEntries: 64})
	var live []*Block
	next := func() byte {
		if len(data) == 0 {
			return 0
		}
		b := data[0]
		data = data[1:]
		return b
	}
	for step := 0; len(data) > 0; step++ {
		op := next()
		var what string
		switch op % 10 {
		case 0, 1, 2, 3:
			size := fuzzSize(next(), next())
			s := Stream(op >> 6)
			what = fmt.Sprintf("Malloc(%d, %d)", size, s)
			b, err := a.Malloc(size, s)
			var oom *OutOfMemoryError
			switch {
			case err == nil && size == 0 && b == nil:
			case err == nil && b != nil:
				if b.Size() < size || b.Size() != cfg.RoundSize(size) && b.Size() < SmallSize ||
					b.Requested() != size || size > mem.Capacity() {
					t.Fatalf("%s: block of %d bytes for a request of %d on a device of %d", what, b.Size(), b.Requested(), mem.Capacity())
				}
				live = append(live, b)
			case errors.As(err, &oom):
			case injected(err) && b == nil:
			default:
				t.Fatalf("%s: %v", what, err)
			}
		case 4, 5:
			if len(live) > 0 {
				i := int(next()) % len(live)
				what = fmt.Sprintf("Free(0x%x)", live[i].Addr())
				a.Free(live[i])
				live = slices.Delete(live, i, i+1)
			}
		case 6:
			if len(live) > 0 {
				i := int(next()) % len(live)
				s := Stream(next() % 4)
				what = fmt.Sprintf("RecordStream(0x%x, %d)", live[i].Addr(), s)
				a.RecordStream(live[i], s)
			}
		case 7:
			s := Stream(next() % 4)
			what = fmt.Sprintf("complete stream %d", s)
			mem.Complete(s)
		case 8:
			what = "EmptyCache"
			if err := a.TryEmptyCache(); err != nil && !injected(err) {
				t.Fatalf("%s: %v", what, err)
			}
		case 9:
			b := next()
			if toggle && b&0x80 != 0 {
				what = fmt.Sprintf("SetExpandableSegments(%v)", b&1 == 1)
				a.SetExpandableSegments(b&1 == 1)
				break
			}
			f := float64(b%11) / 10
			what = fmt.Sprintf("SetMemoryFraction(%v)", f)
			if err := a.SetMemoryFraction(f); err != nil {
				t.Fatal(err)
			}
		}
		if err := checkInvariants(a); err != nil {
			t.Fatalf("step %d %s: %v", step, what, err)
		}
		if err := checkLive(live); err != nil {
			t.Fatalf("step %d %s: %v", step, what, err)
		}
	}
	_ = a.Snapshot()
	_ = a.Summary()
	for _, b := range live {
		a.Free(b)
	}
	fm.failOn(nil) // the device recovers: what failed to go goes now
	if err := a.TryEmptyCache(); err != nil {
		t.Fatal(err)
	}
	if err := checkInvariants(a); err != nil {
		t.Fatal(err)
	}
	st := a.Stats()
	if st["reserved_bytes.all.current"] != 0 || st["allocated_bytes.all.current"] != 0 || st["active_bytes.all.current"] != 0 {
		t.Fatalf("after freeing everything: reserved %d allocated %d active %d", st["reserved_bytes.all.current"],
			st["allocated_bytes.all.current"], st["active_bytes.all.current"])
	}
	if n, used := mem.Live(); n != 0 || used != 0 || mem.Mallocs != mem.Frees {
		t.Fatalf("memory still holds %d segments (%d bytes); %d mallocs, %d frees", n, used, mem.Mallocs, mem.Frees)
	}
	// An expandable segment whose first map failed has no mapped block for
	// EmptyCache to find: as in PyTorch, its address range stays reserved
	// (and is reused by the stream's next expandable allocation).
	if _, pages := mem.Reservations(); pages != 0 || mem.Maps != mem.Unmaps {
		t.Fatalf("memory still holds %d pages; %d pages mapped, %d unmapped", pages, mem.Maps, mem.Unmaps)
	}
	for _, seg := range a.expSegs {
		if n := seg.head; !n.unmapped || n.next != nil {
			t.Fatalf("expandable segment 0x%x still has mapped blocks after EmptyCache", seg.addr)
		}
	}
}

// checkLive verifies that no two live blocks overlap and that each lies in
// its segment.
func checkLive(live []*Block) error {
	bs := slices.Clone(live)
	slices.SortFunc(bs, func(x, y *Block) int {
		if x.Addr() < y.Addr() {
			return -1
		}
		return 1
	})
	for i, b := range bs {
		if b.Addr() != b.Segment()+uint64(b.Offset()) {
			return fmt.Errorf("block 0x%x: segment 0x%x + offset %d", b.Addr(), b.Segment(), b.Offset())
		}
		if i > 0 && bs[i-1].Addr()+uint64(bs[i-1].Size()) > b.Addr() {
			return fmt.Errorf("blocks 0x%x and 0x%x overlap", bs[i-1].Addr(), b.Addr())
		}
	}
	return nil
}

func FuzzAllocator(f *testing.F) {
	f.Add([]byte{0, 0, 10, 20, 4, 0})
	f.Add([]byte{1, 3, 200, 1, 3, 250, 7, 4, 0, 8, 3, 255, 255})
	f.Add([]byte{2, 9, 5, 3, 200, 9, 0, 3, 230, 0, 3, 240, 0, 4, 1, 3, 210, 5, 8})
	f.Add([]byte{3, 0, 1, 2, 1, 3, 4, 2, 5, 6, 6, 0, 1, 4, 0, 7, 1, 0, 9, 9, 8})
	f.Add([]byte{4, 3, 255, 3, 3, 254, 0, 3, 150, 20, 4, 0, 3, 150, 21, 6, 0, 2, 4, 1, 8, 7, 2})
	f.Add([]byte{5, 9, 7, 3, 200, 200, 3, 201, 201, 3, 202, 202, 4, 0, 4, 0, 3, 100, 100, 3, 203, 1})
	// Huge requests, twice each: math.MaxInt64 on the default config, and
	// 8070450532247928833 with roundup_power2_divisions:4.
	f.Add([]byte{0, 0, 0xff, 0xf0, 0, 0xff, 0xf0, 0, 0xff, 0xf1})
	f.Add([]byte{3, 0, 0xff, 0xf2, 0, 0xff, 0xf2, 0, 0xff, 0xf3, 0, 0xff, 0xf4, 0, 0xff, 0xf6})
	// A longer mixed sequence, then the same with device frees failing:
	// every one (0x82), every third (0xa3) and every eighth (0xf5).
	addLong(f, 2, 0x82, 0xa3, 0xf5)
	f.Add([]byte{0x80, 3, 200, 1, 3, 250, 7, 4, 0, 8, 3, 255, 255, 8, 4, 1, 8})
	f.Fuzz(runFuzz)
}

// addLong adds a seed of 600 mixed operations whose first byte is first,
// then the same operations under each first byte of failing.
func addLong(f *testing.F, first byte, failing ...byte) {
	long := []byte{first}
	for i := range 600 {
		long = append(long, byte(i*37+11), byte(i*101+7), byte(i*13))
	}
	f.Add(long)
	for _, b := range failing {
		f.Add(append([]byte{b}, long[1:]...))
	}
}

// FuzzExpandable runs random allocation sequences with expandable segments
// on, switched off and on again, checking the allocator's invariants after
// every operation and that freeing everything unmaps every page and releases
// every address range.
func FuzzExpandable(f *testing.F) {
	f.Add([]byte{0, 0, 10, 20, 4, 0, 8})
	f.Add([]byte{1, 3, 200, 1, 3, 250, 7, 4, 0, 8, 3, 255, 255})
	f.Add([]byte{2, 9, 5, 3, 200, 9, 0, 3, 230, 0, 3, 240, 0, 4, 1, 3, 210, 5, 8})
	f.Add([]byte{0, 3, 200, 1, 9, 0x80, 3, 200, 2, 4, 0, 9, 0x81, 3, 201, 3, 8, 4, 0, 8})
	f.Add([]byte{5, 3, 255, 3, 67, 255, 3, 131, 254, 0, 3, 150, 20, 6, 0, 2, 4, 1, 8, 7, 2, 8})
	// A longer mixed sequence, then the same with unmaps and range
	// releases failing: every one (0x81), every second (0x93) and every
	// fifth (0xc4).
	addLong(f, 1, 0x81, 0x93, 0xc4)
	f.Add([]byte{0x80, 3, 200, 1, 9, 0x80, 3, 200, 2, 4, 0, 9, 0x81, 3, 201, 3, 8, 4, 0, 8})
	f.Fuzz(func(t *testing.T, data []byte) { fuzzWith(t, data, expandableConfigs, true) })
}
