package alloc

import (
	"errors"
	"math"
	"strings"
	"sync"
	"testing"
)

const MiB = 1 << 20

func newTest(t *testing.T, capacity int64, conf string) (*Allocator, *FakeMemory) {
	t.Helper()
	mem := NewFakeMemory(capacity)
	return newOn(t, mem, conf), mem
}

// newOn makes an allocator of conf on mem, whose invariants are checked at
// the end of the test.
func newOn(t *testing.T, mem Memory, conf string) *Allocator {
	t.Helper()
	cfg, err := ParseConfig(conf)
	if err != nil {
		t.Fatal(err)
	}
	a := New(mem, cfg, 0)
	t.Cleanup(func() {
		if err := checkInvariants(a); err != nil {
			t.Errorf("invariants at end of test: %v", err)
		}
	})
	return a
}

func mustMalloc(t *testing.T, a *Allocator, size int64, s Stream) *Block {
	t.Helper()
	b, err := a.Malloc(size, s)
	if err != nil {
		t.Fatalf("Malloc(%d): %v", size, err)
	}
	if err := checkInvariants(a); err != nil {
		t.Fatalf("after Malloc(%d): %v", size, err)
	}
	return b
}

func free(t *testing.T, a *Allocator, b *Block) {
	t.Helper()
	a.Free(b)
	if err := checkInvariants(a); err != nil {
		t.Fatalf("after Free(0x%x): %v", b.Addr(), err)
	}
}

func expectStats(t *testing.T, a *Allocator, want map[string]int64) {
	t.Helper()
	got := a.Stats()
	for k, v := range want {
		g, ok := got[k]
		if !ok {
			t.Errorf("stat %q missing", k)
		} else if g != v {
			t.Errorf("%s = %d, want %d", k, g, v)
		}
	}
}

func TestWorkedExamples(t *testing.T) {
	a, _ := newTest(t, 1<<30, "")
	mustMalloc(t, a, 4_000_000, 0)
	expectStats(t, a, map[string]int64{
		"allocated_bytes.all.current":             4_000_256,
		"requested_bytes.all.current":             4_000_000,
		"reserved_bytes.all.current":              20_971_520,
		"inactive_split_bytes.all.current":        16_971_264,
		"inactive_split_bytes.large_pool.current": 16_971_264,
		"inactive_split.all.current":              1,
		"segment.large_pool.current":              1,
	})

	a2, _ := newTest(t, 1<<30, "")
	mustMalloc(t, a2, 1024, 0)
	expectStats(t, a2, map[string]int64{
		"active_bytes.all.current":          1024,
		"active_bytes.small_pool.current":   1024,
		"reserved_bytes.small_pool.current": 2 * MiB,
	})

	a3, _ := newTest(t, 1<<30, "roundup_power2_divisions:4")
	b := mustMalloc(t, a3, 88_080_384, 0)
	if b.Size() != 100_663_296 {
		t.Errorf("roundup 4: size %d, want 100663296", b.Size())
	}
}

func TestRoundSize(t *testing.T) {
	div := func(s string) Config {
		c, err := ParseConfig(s)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	for _, tc := range []struct {
		conf     string
		in, want int64
	}{
		{"", 1, 512},
		{"", 511, 512},
		{"", 512, 512},
		{"", 513, 1024},
		{"", 4_000_000, 4_000_256},
		{"", MiB + 1, MiB + 512},
		{"roundup_power2_divisions:4", 1200, 1536}, // below 512*4: plain rounding
		{"roundup_power2_divisions:4", 2048, 2048}, // not above 512*4
		{"roundup_power2_divisions:4", 3000, 3072}, // 2048 + 512
		{"roundup_power2_divisions:4", 88_080_384, 100_663_296},
		{"roundup_power2_divisions:4", 64 * MiB, 64 * MiB},   // power of two
		{"roundup_power2_divisions:1", 3000, 3072},           // 1 = off
		{"roundup_power2_divisions:8", 65*MiB + 1, 72 * MiB}, // 64 MiB + 8 MiB steps
		// PyTorch's quirk: ">" also overwrites the class of the entry before it.
		{"roundup_power2_divisions:[64:1,>:4]", 88_080_384, 100_663_296},
		{"roundup_power2_divisions:[64:4,>:1]", 88_080_384, 88_080_384},
		{"roundup_power2_divisions:[64:4,128:1]", 88_080_384, 100_663_296},
		{"roundup_power2_divisions:[32:4,64:1,>:4]", 88_080_384, 100_663_296},
		{"roundup_power2_divisions:[32:4,64:1,128:4]", 88_080_384, 88_080_384},
		{"roundup_power2_divisions:[1:2,2:1]", 600 * 1024, 768 * 1024},      // class 0 covers < 1 MiB too
		{"roundup_power2_divisions:[1:0,2:8]", 3*MiB + 1, 3*MiB + 256*1024}, // 2 MiB + 256 KiB steps
	} {
		if got := div(tc.conf).RoundSize(tc.in); got != tc.want {
			t.Errorf("%q RoundSize(%d) = %d, want %d", tc.conf, tc.in, got, tc.want)
		}
	}
}

func TestPoolsAndSegments(t *testing.T) {
	for _, tc := range []struct {
		size    int64
		small   bool
		segment int64
	}{
		{1, true, 2 * MiB},
		{MiB, true, 2 * MiB},
		{MiB + 1, false, 20 * MiB},
		{10*MiB - 512, false, 20 * MiB},
		{10*MiB - 1, false, 10 * MiB}, // the rounded size decides
		{10 * MiB, false, 10 * MiB},
		{10*MiB + 1, false, 12 * MiB},
		{21 * MiB, false, 22 * MiB},
	} {
		a, _ := newTest(t, 1<<30, "")
		b := mustMalloc(t, a, tc.size, 0)
		pool := "large_pool"
		if tc.small {
			pool = "small_pool"
		}
		expectStats(t, a, map[string]int64{
			"segment." + pool + ".current":        1,
			"reserved_bytes." + pool + ".current": tc.segment,
			"reserved_bytes.all.current":          tc.segment,
		})
		if b.Segment() != b.Addr() || b.Offset() != 0 {
			t.Errorf("size %d: first block not at segment start", tc.size)
		}
	}
}

func TestSplitRules(t *testing.T) {
	for _, tc := range []struct {
		name      string
		conf      string
		size      int64
		wantBlock int64 // size of the allocated block
		wantSplit bool
	}{
		{"small remainder 512", "", 2*MiB - 512, 2*MiB - 512, true},
		{"small no remainder", "", MiB, MiB, true},
		{"large remainder 1MiB is not split", "", 19 * MiB, 20 * MiB, false},
		{"large remainder above 1MiB", "", 19*MiB - 512, 19*MiB - 512, false}, // 20 MiB segment? no: rounded to 2 MiB = 20 MiB, remainder 1 MiB+512
		{"large 9MiB in 20MiB", "", 9 * MiB, 9 * MiB, true},
		{"oversize request never split", "max_split_size_mb:64", 65 * MiB, 66 * MiB, false},
		{"below max split splits", "max_split_size_mb:64", 5 * MiB, 5 * MiB, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, _ := newTest(t, 1<<30, tc.conf)
			b := mustMalloc(t, a, tc.size, 0)
			st := a.Stats()
			split := st["inactive_split.all.current"] == 1
			if tc.name == "large remainder above 1MiB" {
				// 19 MiB - 512 rounds to a 20 MiB segment (>= 10 MiB: 2 MiB
				// rounding) leaving 1 MiB + 512 > 1 MiB: split.
				tc.wantSplit = true
			}
			if b.Size() != tc.wantBlock || split != tc.wantSplit {
				t.Errorf("block %d split %v, want %d %v", b.Size(), split, tc.wantBlock, tc.wantSplit)
			}
		})
	}
}

func TestMerge(t *testing.T) {
	a, _ := newTest(t, 1<<30, "")
	x := mustMalloc(t, a, 1000, 0)
	y := mustMalloc(t, a, 1000, 0)
	z := mustMalloc(t, a, 1000, 0)
	if y.Addr() != x.Addr()+1024 || z.Addr() != y.Addr()+1024 {
		t.Fatalf("blocks not consecutive: %x %x %x", x.Addr(), y.Addr(), z.Addr())
	}
	expectStats(t, a, map[string]int64{"inactive_split.all.current": 1, "inactive_split_bytes.all.current": 2*MiB - 3072})
	free(t, a, y)
	expectStats(t, a, map[string]int64{"inactive_split.all.current": 2, "inactive_split_bytes.all.current": 2*MiB - 2048})
	free(t, a, x)
	expectStats(t, a, map[string]int64{"inactive_split.all.current": 2, "inactive_split_bytes.all.current": 2*MiB - 1024})
	free(t, a, z)
	expectStats(t, a, map[string]int64{"inactive_split.all.current": 0, "inactive_split_bytes.all.current": 0,
		"reserved_bytes.all.current": 2 * MiB, "active.all.current": 0})
	snap := a.Snapshot()
	if len(snap.Segments) != 1 || len(snap.Segments[0].Blocks) != 1 || snap.Segments[0].Blocks[0].State != StateInactive {
		t.Errorf("segment after merging: %+v", snap.Segments)
	}
}

func TestBestFit(t *testing.T) {
	a, _ := newTest(t, 1<<30, "")
	// Cached whole segments of 14, 12, 12 MiB (in address order).
	b14 := mustMalloc(t, a, 14*MiB, 0)
	b12a := mustMalloc(t, a, 12*MiB, 0)
	b12b := mustMalloc(t, a, 12*MiB, 0)
	s1 := mustMalloc(t, a, 12*MiB, 1) // same size on another stream
	for _, b := range []*Block{b12b, b14, s1, b12a} {
		free(t, a, b)
	}
	got := mustMalloc(t, a, 11*MiB, 0) // rounds to a 12 MiB segment size class
	if got.Addr() != b12a.Addr() {
		t.Errorf("best fit took 0x%x, want the lowest-address 12 MiB block 0x%x", got.Addr(), b12a.Addr())
	}
	if got.Size() != 12*MiB {
		t.Errorf("size %d: a remainder of 1 MiB must not be split off", got.Size())
	}
	got2 := mustMalloc(t, a, 12*MiB, 0)
	if got2.Addr() != b12b.Addr() {
		t.Errorf("second pick 0x%x, want 0x%x", got2.Addr(), b12b.Addr())
	}
	got3 := mustMalloc(t, a, 12*MiB, 0) // only the 14 MiB block is left on stream 0
	if got3.Addr() != b14.Addr() {
		t.Errorf("third pick 0x%x, want the 14 MiB block 0x%x", got3.Addr(), b14.Addr())
	}
	expectStats(t, a, map[string]int64{"num_device_alloc": 4})
	got4 := mustMalloc(t, a, 12*MiB, 1)
	if got4.Addr() != s1.Addr() {
		t.Errorf("stream 1 pick 0x%x, want 0x%x", got4.Addr(), s1.Addr())
	}
	got5 := mustMalloc(t, a, 12*MiB, 0) // nothing cached on stream 0
	if got5.Addr() == s1.Addr() {
		t.Error("a block of stream 1 was given to stream 0")
	}
	expectStats(t, a, map[string]int64{"num_device_alloc": 5})
}

func TestMaxSplitSize(t *testing.T) {
	a, _ := newTest(t, 1<<30, "max_split_size_mb:64")
	big := mustMalloc(t, a, 100*MiB, 0)
	expectStats(t, a, map[string]int64{"oversize_allocations.current": 1, "oversize_segments.current": 1, "max_split_size": 64 * MiB})
	free(t, a, big)
	expectStats(t, a, map[string]int64{"oversize_allocations.current": 0, "oversize_segments.current": 1})

	small := mustMalloc(t, a, 30*MiB, 0) // below max split: may not take the oversize block
	if small.Segment() == big.Segment() {
		t.Error("a request below max_split_size took an oversize block")
	}
	far := mustMalloc(t, a, 70*MiB, 0) // 100 >= 70 + 20: too large a waste
	if far.Segment() == big.Segment() {
		t.Error("an oversize request took a block 30 MiB larger")
	}
	near := mustMalloc(t, a, 90*MiB, 0) // 100 < 90 + 20
	if near.Addr() != big.Addr() || near.Size() != 100*MiB {
		t.Errorf("oversize request: got 0x%x size %d, want the cached 100 MiB block", near.Addr(), near.Size())
	}
}

func TestReleaseAvailableCachedBlocks(t *testing.T) {
	a, _ := newTest(t, 150*MiB, "max_split_size_mb:64")
	big := mustMalloc(t, a, 100*MiB, 0)
	free(t, a, big)
	// 60 MiB may not take the 100 MiB oversize block, and the device has
	// only 50 MiB free: the oversize block is released first.
	b := mustMalloc(t, a, 60*MiB, 0)
	expectStats(t, a, map[string]int64{"num_device_free": 1, "num_alloc_retries": 0, "num_ooms": 0,
		"reserved_bytes.all.current": 60 * MiB})
	_ = b

	// Several oversize blocks, none large enough alone: the largest go first.
	a2, _ := newTest(t, 200*MiB, "max_split_size_mb:32")
	x := mustMalloc(t, a2, 40*MiB, 0)
	y := mustMalloc(t, a2, 50*MiB, 0)
	z := mustMalloc(t, a2, 60*MiB, 0)
	free(t, a2, x)
	free(t, a2, y)
	free(t, a2, z)
	mustMalloc(t, a2, 100*MiB, 0) // needs 100, device has 50 free; releases 60 then 50
	expectStats(t, a2, map[string]int64{"num_device_free": 2, "num_alloc_retries": 0,
		"reserved_bytes.all.current": 140 * MiB})
}

func TestGarbageCollection(t *testing.T) {
	// fraction 0 means SetMemoryFraction is never called.
	run := func(conf string, fraction float64) map[string]int64 {
		a, _ := newTest(t, 100*MiB, conf)
		if fraction > 0 {
			if err := a.SetMemoryFraction(fraction); err != nil {
				t.Fatal(err)
			}
		}
		x := mustMalloc(t, a, 30*MiB, 0)
		y := mustMalloc(t, a, 24*MiB, 0)
		free(t, a, x)
		free(t, a, y)
		mustMalloc(t, a, 40*MiB, 0)
		return a.Stats()
	}
	for _, tc := range []struct {
		name            string
		conf            string
		fraction        float64
		frees, reserved int64
	}{
		{"threshold and fraction below 1", "garbage_collection_threshold:0.5", 0.99, 2, 40 * MiB},
		{"no fraction: GC is off, as in PyTorch", "garbage_collection_threshold:0.5", 0, 0, 94 * MiB},
		{"fraction 1: no cap, GC is off", "garbage_collection_threshold:0.5", 1, 0, 94 * MiB},
		{"no threshold", "", 0.99, 0, 94 * MiB},
	} {
		st := run(tc.conf, tc.fraction)
		if st["num_device_free"] != tc.frees || st["reserved_bytes.all.current"] != tc.reserved {
			t.Errorf("%s: %d frees, reserved %d; want %d and %d", tc.name, st["num_device_free"],
				st["reserved_bytes.all.current"], tc.frees, tc.reserved)
		}
	}

	// Older blocks go first: a block reused recently is younger.
	a, _ := newTest(t, 100*MiB, "garbage_collection_threshold:0.3")
	if err := a.SetMemoryFraction(0.99); err != nil {
		t.Fatal(err)
	}
	old := mustMalloc(t, a, 22*MiB, 0)
	young := mustMalloc(t, a, 24*MiB, 0)
	free(t, a, old)
	free(t, a, young)
	for range 5 { // each Malloc that finds the block ages the others
		free(t, a, mustMalloc(t, a, 24*MiB, 0))
	}
	mustMalloc(t, a, 30*MiB, 0) // reserved 46 > 29.7: reclaim, oldest first
	snap := a.Snapshot()
	for _, s := range snap.Segments {
		if s.Address == old.Segment() {
			t.Error("the oldest cached segment survived garbage collection")
		}
	}
	expectStats(t, a, map[string]int64{"num_device_free": 1})
}

// TestFractionOneRemovesTheCap: since PyTorch 2.9 the cap
// (allowed_memory_maximum) is optional and a fraction of 1 unsets it, so
// the OOM message loses its "allowed" part and garbage collection stops.
func TestFractionOneRemovesTheCap(t *testing.T) {
	a, _ := newTest(t, 100*MiB, "garbage_collection_threshold:0.5")
	if err := a.SetMemoryFraction(0.5); err != nil {
		t.Fatal(err)
	}
	_, err := a.Malloc(60*MiB, 0)
	var oom *OutOfMemoryError
	if !errors.As(err, &oom) || !oom.FractionSet || oom.Allowed != 50*MiB || !strings.Contains(err.Error(), "50.00 MiB allowed; ") {
		t.Fatalf("under fraction 0.5: %v", err)
	}
	if !a.gcEnabled() {
		t.Error("garbage collection off under a fraction below 1")
	}
	if err := a.SetMemoryFraction(1); err != nil {
		t.Fatal(err)
	}
	if a.gcEnabled() {
		t.Error("garbage collection still on after SetMemoryFraction(1)")
	}
	mustMalloc(t, a, 60*MiB, 0)
	_, err = a.Malloc(60*MiB, 0)
	if !errors.As(err, &oom) || oom.FractionSet || strings.Contains(err.Error(), "allowed") {
		t.Fatalf("after fraction 1: %v", err)
	}
}

// TestAllowedMaximum: the cap is PyTorch's static_cast<size_t>(fraction *
// total), a truncation.
func TestAllowedMaximum(t *testing.T) {
	for _, tc := range []struct {
		f        float64
		capacity int64
		want     int64
	}{
		{0.5, 3, 1},
		{0.25, 100 * MiB, 25 * MiB},
		{0.1, 2 << 30, 214748364}, // 214748364.8
		{0, 2 << 30, 0},
	} {
		if got := allowedMaximum(tc.f, tc.capacity); got != tc.want {
			t.Errorf("allowedMaximum(%v, %d) = %d, want %d", tc.f, tc.capacity, got, tc.want)
		}
	}
}

// TestHugeRequests: the exact inputs of issue 8, which once "succeeded" in
// 2 MiB with a negative requested_bytes.
func TestHugeRequests(t *testing.T) {
	for _, tc := range []struct {
		conf string
		size int64
	}{
		{"", math.MaxInt64},
		{"roundup_power2_divisions:4", 8070450532247928833},
		{"roundup_power2_divisions:4", math.MaxInt64},
		{"", MaxRequest + 1},
	} {
		a, mem := newTest(t, 2<<30, tc.conf)
		for range 2 {
			_, err := a.Malloc(tc.size, 0)
			var oom *OutOfMemoryError
			if !errors.As(err, &oom) || oom.Requested != tc.size {
				t.Fatalf("%q: Malloc(%d) = %v, want an out-of-memory error", tc.conf, tc.size, err)
			}
		}
		expectStats(t, a, map[string]int64{"num_ooms": 2, "reserved_bytes.all.current": 0, "requested_bytes.all.current": 0})
		if mem.Mallocs != 0 {
			t.Errorf("%q: %d device mallocs for an impossible request", tc.conf, mem.Mallocs)
		}
		if got := a.cfg.RoundSize(tc.size); got != -1 {
			t.Errorf("RoundSize(%d) = %d, want -1", tc.size, got)
		}
	}
	// The largest representable request rounds without overflow.
	for _, div := range []string{"", "roundup_power2_divisions:4", "roundup_power2_divisions:1024"} {
		cfg, _ := ParseConfig(div)
		for _, size := range []int64{MaxRequest, MaxRequest - 1, MaxRequest/2 + 1} {
			r := cfg.RoundSize(size)
			if r < size || r > MaxRequest || SegmentSize(r) < r {
				t.Errorf("%q: RoundSize(%d) = %d, SegmentSize %d", div, size, r, SegmentSize(r))
			}
		}
	}
}

func TestFractionCap(t *testing.T) {
	a, _ := newTest(t, 100*MiB, "")
	for _, bad := range []float64{-0.1, 1.5, math.NaN()} {
		if err := a.SetMemoryFraction(bad); err == nil || !strings.HasPrefix(err.Error(), "alloc: ") {
			t.Errorf("SetMemoryFraction(%v) = %v, want an alloc: error", bad, err)
		}
	}
	if a.MemoryFraction() != 1 {
		t.Errorf("default fraction %v", a.MemoryFraction())
	}
	if err := a.SetMemoryFraction(0.25); err != nil {
		t.Fatal(err)
	}
	mustMalloc(t, a, 20*MiB, 0)
	_, err := a.Malloc(6*MiB, 0)
	var oom *OutOfMemoryError
	if !errors.As(err, &oom) {
		t.Fatalf("Malloc beyond the fraction: %v", err)
	}
	if !oom.FractionSet || oom.Allowed != 25*MiB || !strings.Contains(err.Error(), "25.00 MiB allowed") {
		t.Errorf("OOM under a fraction: %+v: %v", oom, err)
	}
	expectStats(t, a, map[string]int64{"num_ooms": 1, "num_alloc_retries": 1})
}

func TestOOM(t *testing.T) {
	a, mem := newTest(t, 64*MiB, "")
	mustMalloc(t, a, 50*MiB, 0)
	_, err := a.Malloc(5*MiB, 0)
	var oom *OutOfMemoryError
	if !errors.As(err, &oom) {
		t.Fatalf("want OOM, got %v", err)
	}
	want := "alloc: out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity of 64.00 MiB of which 14.00 MiB is free. " +
		"Of the allocated memory 50.00 MiB is allocated by PyTorch, and 0 bytes is reserved by PyTorch but unallocated. " +
		"If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation."
	if err.Error() != want {
		t.Errorf("message:\n%s\nwant\n%s", err, want)
	}
	if oom.Requested != 5*MiB || oom.AllocSize != 20*MiB || oom.DeviceFree != 14*MiB || oom.Capacity != 64*MiB {
		t.Errorf("fields: %+v", oom)
	}
	expectStats(t, a, map[string]int64{"num_ooms": 1, "num_alloc_retries": 1})
	if mem.Mallocs != 1 {
		t.Errorf("%d device mallocs", mem.Mallocs)
	}

	// A cached segment is released and the retry succeeds.
	b, _ := newTest(t, 64*MiB, "")
	x := mustMalloc(t, b, 30*MiB, 0)
	mustMalloc(t, b, 20*MiB, 0)
	free(t, b, x)
	mustMalloc(t, b, 32*MiB, 0) // 30 MiB cached is too small; 14 MiB free on the device
	expectStats(t, b, map[string]int64{"num_ooms": 0, "num_alloc_retries": 1, "num_device_free": 1, "num_sync_all_streams": 1})
}

// contextMemory is a FakeMemory on which the process lost context bytes
// before its first allocation, as a real process loses its CUDA context.
type contextMemory struct {
	*FakeMemory
	context int64
}

func (m contextMemory) Malloc(size int64) (uint64, error) {
	if _, used := m.Live(); used+size > m.Capacity()-m.context {
		return 0, ErrDeviceFull
	}
	return m.FakeMemory.Malloc(size)
}

func (m contextMemory) FreeBytes() int64        { return m.FakeMemory.FreeBytes() - m.context }
func (m contextMemory) ProcessUsedBytes() int64 { _, used := m.Live(); return m.context + used }

// TestOOMMessageFields: every field of PyTorch's message, on a device where
// a context of 300 MiB is lost before the first tensor.
func TestOOMMessageFields(t *testing.T) {
	mem := contextMemory{NewFakeMemory(2 << 30), 300 * MiB}
	a := New(mem, Config{}, 0)
	if err := a.SetMemoryFraction(0.9); err != nil {
		t.Fatal(err)
	}
	keep := mustMalloc(t, a, 1200*MiB, 0)
	gone := mustMalloc(t, a, 3*MiB, 0) // 20 MiB segment, split
	small := mustMalloc(t, a, 1000, 0) // 2 MiB segment, split
	free(t, a, gone)
	_, err := a.Malloc(600*MiB, 0)
	var oom *OutOfMemoryError
	if !errors.As(err, &oom) {
		t.Fatalf("want OOM, got %v", err)
	}
	// The retry released the cached 20 MiB segment: 1200 + 2 MiB reserved,
	// 1200 MiB + 1024 B allocated.
	expectStats(t, a, map[string]int64{"num_device_free": 1})
	want := OutOfMemoryError{Requested: 600 * MiB, RoundedSize: 600 * MiB, AllocSize: 600 * MiB, Capacity: 2 << 30,
		DeviceFree: 2<<30 - 300*MiB - 1202*MiB, ProcessUsed: 300*MiB + 1202*MiB, ProcessUsedKnown: true,
		Allocated: 1200*MiB + 1024, ReservedUnallocated: 2*MiB - 1024, Allowed: 1932735283, Fraction: 0.9, FractionSet: true}
	if *oom != want {
		t.Errorf("fields\n%+v\nwant\n%+v", *oom, want)
	}
	if got := oom.NonPyTorch(); got != 300*MiB {
		t.Errorf("NonPyTorch() = %d, want the 300 MiB context", got)
	}
	msg := "alloc: out of memory. Tried to allocate 600.00 MiB. GPU 0 has a total capacity of 2.00 GiB of which 546.00 MiB is free. " +
		"Including non-PyTorch memory, this process has 1.47 GiB memory in use. 1.80 GiB allowed; " +
		"Of the allocated memory 1.17 GiB is allocated by PyTorch, and 2.00 MiB is reserved by PyTorch but unallocated. " +
		"If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation."
	if err.Error() != msg {
		t.Errorf("message\n%s\nwant\n%s", err, msg)
	}
	free(t, a, keep)
	free(t, a, small)
}

func TestEmptyCache(t *testing.T) {
	a, mem := newTest(t, 1<<30, "")
	x := mustMalloc(t, a, 1000, 0)   // small segment, stays in use
	y := mustMalloc(t, a, 1000, 0)   // same segment
	z := mustMalloc(t, a, 30*MiB, 0) // large segment
	w := mustMalloc(t, a, 4*MiB, 0)  // 20 MiB segment, split
	free(t, a, y)
	free(t, a, z)
	free(t, a, w)
	a.EmptyCache()
	expectStats(t, a, map[string]int64{"reserved_bytes.all.current": 2 * MiB, "segment.all.current": 1, "num_device_free": 2})
	if n, _ := mem.Live(); n != 1 {
		t.Errorf("%d live segments", n)
	}
	free(t, a, x)
	a.EmptyCache()
	expectStats(t, a, map[string]int64{"reserved_bytes.all.current": 0, "segment.all.current": 0, "num_device_free": 3})
}

func TestRecordStream(t *testing.T) {
	a, mem := newTest(t, 1<<30, "")
	b := mustMalloc(t, a, 1000, 0)
	a.RecordStream(b, 0) // own stream: ignored
	a.RecordStream(b, 1)
	a.RecordStream(b, 1) // once per stream
	a.RecordStream(b, 2)
	addr := b.Addr()
	free(t, a, b)
	if ev := mem.Events(); len(ev) != 2 {
		t.Fatalf("%d events recorded, want 2", len(ev))
	}
	expectStats(t, a, map[string]int64{"allocated_bytes.all.current": 0, "active_bytes.all.current": 1024, "active.all.current": 1})
	snapState := func() string {
		for _, s := range a.Snapshot().Segments {
			for _, bl := range s.Blocks {
				if bl.Address == addr {
					return bl.State
				}
			}
		}
		return "missing"
	}
	if st := snapState(); st != StateActivePendingFree {
		t.Errorf("state %s, want %s", st, StateActivePendingFree)
	}
	c := mustMalloc(t, a, 1000, 0)
	if c.Addr() == addr {
		t.Error("pending block reused before its streams finished")
	}
	mem.Complete(1)
	d := mustMalloc(t, a, 1000, 0)
	if d.Addr() == addr {
		t.Error("block reused before stream 2 finished")
	}
	mem.Complete(2)
	e := mustMalloc(t, a, 1000, 0)
	if e.Addr() != addr {
		t.Errorf("block not reused after its events completed: 0x%x vs 0x%x", e.Addr(), addr)
	}

	// EmptyCache synchronizes on pending events.
	a2, mem2 := newTest(t, 1<<30, "")
	f := mustMalloc(t, a2, 5*MiB, 0)
	a2.RecordStream(f, 3)
	free(t, a2, f)
	a2.EmptyCache()
	expectStats(t, a2, map[string]int64{"reserved_bytes.all.current": 0, "active.all.current": 0, "num_sync_all_streams": 1})
	if ev := mem2.Events(); !ev[0].synced {
		t.Error("EmptyCache did not synchronize the event")
	}
}

func TestMisuse(t *testing.T) {
	a, _ := newTest(t, 1<<30, "")
	if b, err := a.Malloc(0, 0); b != nil || err != nil {
		t.Errorf("Malloc(0) = %v, %v", b, err)
	}
	if _, err := a.Malloc(-1, 0); err == nil || !strings.HasPrefix(err.Error(), "alloc: ") {
		t.Errorf("Malloc(-1) error %v", err)
	}
	a.Free(nil)
	b := mustMalloc(t, a, 100, 0)
	free(t, a, b)
	if b.Addr() == 0 || b.Size() != 512 || b.Requested() != 100 {
		t.Errorf("accessors after free: %x %d %d", b.Addr(), b.Size(), b.Requested())
	}
	expectPanic(t, "alloc: double free", func() { a.Free(b) })
	expectPanic(t, "alloc: RecordStream of freed", func() { a.RecordStream(b, 1) })
	other, _ := newTest(t, 1<<30, "")
	c := mustMalloc(t, other, 100, 0)
	expectPanic(t, "another allocator", func() { a.Free(c) })
	expectPanic(t, "alloc: config", func() { New(NewFakeMemory(1), Config{MaxSplitSize: MiB}, 0) })
}

func expectPanic(t *testing.T, want string, f func()) {
	t.Helper()
	defer func() {
		t.Helper()
		r := recover()
		if r == nil {
			t.Errorf("no panic, want %q", want)
			return
		}
		var msg string
		switch v := r.(type) {
		case error:
			msg = v.Error()
		case string:
			msg = v
		}
		if !strings.Contains(msg, want) {
			t.Errorf("panic %q, want %q", msg, want)
		}
	}()
	f()
}

func TestStatsReset(t *testing.T) {
	a, _ := newTest(t, 1<<30, "")
	x := mustMalloc(t, a, 3*MiB, 0)
	y := mustMalloc(t, a, 3*MiB, 0)
	free(t, a, x)
	expectStats(t, a, map[string]int64{"allocated_bytes.all.peak": 6 * MiB, "allocated_bytes.all.allocated": 6 * MiB,
		"allocated_bytes.all.freed": 3 * MiB, "num_device_alloc": 1})
	if a.MaxMemoryAllocated() != 6*MiB || a.MemoryAllocated() != 3*MiB || a.MemoryReserved() != 20*MiB || a.MaxMemoryReserved() != 20*MiB {
		t.Error("accessors disagree with stats")
	}
	a.ResetPeakStats()
	expectStats(t, a, map[string]int64{"allocated_bytes.all.peak": 3 * MiB, "allocated_bytes.all.allocated": 6 * MiB, "reserved_bytes.all.peak": 20 * MiB})
	a.ResetAccumulatedStats()
	expectStats(t, a, map[string]int64{"allocated_bytes.all.peak": 3 * MiB, "allocated_bytes.all.allocated": 0,
		"allocated_bytes.all.freed": 0, "num_device_alloc": 0, "allocated_bytes.all.current": 3 * MiB})
	free(t, a, y)
	expectStats(t, a, map[string]int64{"allocated_bytes.all.freed": 3 * MiB, "allocated_bytes.all.current": 0})
}

func TestStatsKeys(t *testing.T) {
	a, _ := newTest(t, 1<<30, "")
	st := a.Stats()
	var want []string
	for _, m := range []string{"allocated_bytes", "requested_bytes", "active_bytes", "reserved_bytes", "inactive_split_bytes",
		"allocation", "segment", "active", "inactive_split"} {
		for _, p := range []string{"all", "small_pool", "large_pool"} {
			for _, k := range []string{"current", "peak", "allocated", "freed"} {
				want = append(want, m+"."+p+"."+k)
			}
		}
	}
	for _, m := range []string{"oversize_allocations", "oversize_segments"} {
		for _, k := range []string{"current", "peak", "allocated", "freed"} {
			want = append(want, m+"."+k)
		}
	}
	want = append(want, "num_alloc_retries", "num_ooms", "num_device_alloc", "num_device_free", "num_sync_all_streams", "max_split_size")
	for _, k := range want {
		if _, ok := st[k]; !ok {
			t.Errorf("missing key %s", k)
		}
	}
	if len(st) != len(want) {
		t.Errorf("%d keys, want %d", len(st), len(want))
	}
	if st["max_split_size"] != -1 {
		t.Errorf("max_split_size %d, want -1 (unlimited)", st["max_split_size"])
	}
}

func TestSummary(t *testing.T) {
	a, _ := newTest(t, 1<<30, "")
	mustMalloc(t, a, 4_000_000, 0)
	mustMalloc(t, a, 1024, 0)
	s := a.Summary()
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	for i, l := range lines {
		if len(l) != 77 || l[0] != '|' || l[76] != '|' {
			t.Errorf("line %d has width %d: %q", i, len(l), l)
		}
	}
	for _, want := range []string{
		"|                  gpukit CUDA memory summary, device ID 0                  |",
		"|            CUDA OOMs: 0            |        cudaMalloc retries: 0         |",
		"|        Metric         | Cur Usage  | Peak Usage | Tot Alloc  | Tot Freed  |",
		"| Allocated memory      |   3907 KiB |   3907 KiB |   3907 KiB |      0 B   |",
		"|       from large pool |   3906 KiB |   3906 KiB |   3906 KiB |      0 B   |",
		"|       from small pool |      1 KiB |      1 KiB |      1 KiB |      0 B   |",
		"| GPU reserved memory   |  22528 KiB |  22528 KiB |  22528 KiB |      0 B   |",
		"| Allocations           |       2    |       2    |       2    |       0    |",
		"| Oversize GPU segments |       0    |       0    |       0    |       0    |",
	} {
		if !strings.Contains(s, want+"\n") {
			t.Errorf("summary lacks\n%s\nin\n%s", want, s)
		}
	}
	if len(lines) != 2+1+2+1+9*4+2*2+1 {
		t.Errorf("%d lines", len(lines))
	}
}

func TestHistory(t *testing.T) {
	a, _ := newTest(t, 1<<30, "")
	a.RecordHistory(HistoryOptions{Enabled: true, Stacks: true})
	b := mustMalloc(t, a, 4_000_000, 0)
	a.Free(b)
	snap := a.Snapshot()
	tr := snap.DeviceTraces[0]
	var actions []string
	for _, e := range tr {
		actions = append(actions, e.Action)
	}
	want := []string{ActionSegmentAlloc, ActionAlloc, ActionFreeRequested, ActionFreeCompleted, ActionSnapshot}
	if strings.Join(actions, ",") != strings.Join(want, ",") {
		t.Fatalf("actions %v, want %v", actions, want)
	}
	if tr[1].Size != 4_000_000 || tr[1].Addr != b.Addr() || tr[0].Size != 20*MiB {
		t.Errorf("entries %+v", tr[:2])
	}
	if len(tr[1].Frames) == 0 || !strings.Contains(tr[1].Frames[0].Name, "mustMalloc") {
		t.Errorf("alloc frames %+v", tr[1].Frames)
	}
	if len(tr[2].Frames) == 0 || !strings.Contains(tr[2].Frames[0].Name, "TestHistory") {
		t.Errorf("free frames %+v", tr[2].Frames)
	}
	for _, f := range tr[1].Frames {
		if strings.Contains(f.Name, "(*Allocator)") {
			t.Errorf("allocator frame recorded: %s", f.Name)
		}
	}
	if tr[1].TimeMicros <= tr[0].TimeMicros-1 || tr[1].TimeMicros == 0 {
		t.Errorf("times %d %d", tr[0].TimeMicros, tr[1].TimeMicros)
	}
	if snap.AllocatorSettings["max_split_size"] != int64(-1) {
		t.Errorf("settings %v", snap.AllocatorSettings)
	}

	// Bounded ring keeps the newest entries.
	a.RecordHistory(HistoryOptions{Enabled: true, MaxEntries: 3})
	for range 4 {
		a.Free(mustMalloc(t, a, 512, 0))
	}
	tr = a.Snapshot().DeviceTraces[0]
	if len(tr) != 3 || tr[2].Action != ActionSnapshot || tr[1].Action != ActionFreeCompleted {
		t.Errorf("ring: %+v", tr)
	}
	a.RecordHistory(HistoryOptions{Enabled: false})
	a.Free(mustMalloc(t, a, 512, 0))
	if tr := a.Snapshot().DeviceTraces[0]; len(tr) != 0 {
		t.Errorf("%d entries after disabling", len(tr))
	}

	// OOM entry.
	o, _ := newTest(t, 10*MiB, "")
	o.RecordHistory(HistoryOptions{Enabled: true})
	if _, err := o.Malloc(30*MiB, 0); err == nil {
		t.Fatal("no OOM")
	}
	tr = o.Snapshot().DeviceTraces[0]
	if tr[0].Action != ActionOOM || tr[0].DeviceFree != 10*MiB || tr[0].Size != 30*MiB {
		t.Errorf("oom entry %+v", tr[0])
	}
}

func TestSnapshotSegments(t *testing.T) {
	a, _ := newTest(t, 1<<30, "")
	x := mustMalloc(t, a, 4_000_000, 0)
	y := mustMalloc(t, a, 1000, 1)
	snap := a.Snapshot()
	if len(snap.Segments) != 2 || snap.Segments[0].Address > snap.Segments[1].Address {
		t.Fatalf("segments %+v", snap.Segments)
	}
	large := snap.Segments[0]
	if large.SegmentType != "large" || large.TotalSize != 20*MiB || large.AllocatedSize != x.Size() ||
		large.ActiveSize != x.Size() || large.RequestedSize != 4_000_000 || len(large.Blocks) != 2 {
		t.Errorf("large segment %+v", large)
	}
	if large.Blocks[0].State != StateActiveAllocated || large.Blocks[1].State != StateInactive {
		t.Errorf("blocks %+v", large.Blocks)
	}
	small := snap.Segments[1]
	if small.SegmentType != "small" || small.Stream != 1 || small.Blocks[0].Address != y.Addr() {
		t.Errorf("small segment %+v", small)
	}
}

func TestConcurrent(t *testing.T) {
	a, mem := newTest(t, 4<<30, "")
	mem.AutoComplete = true
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var live []*Block
			for i := range 300 {
				size := int64((i*7919+g*104729)%(12*MiB)) + 1
				b, err := a.Malloc(size, Stream(g%3))
				if err != nil {
					t.Error(err)
					return
				}
				if i%5 == 0 {
					a.RecordStream(b, Stream((g+1)%3))
				}
				live = append(live, b)
				if len(live) > 20 {
					a.Free(live[0])
					live = live[1:]
				}
				if i%97 == 0 {
					a.EmptyCache()
					_ = a.Stats()
					_ = a.Snapshot()
				}
			}
			for _, b := range live {
				a.Free(b)
			}
		}()
	}
	wg.Wait()
	a.EmptyCache()
	expectStats(t, a, map[string]int64{"reserved_bytes.all.current": 0, "allocated_bytes.all.current": 0, "active.all.current": 0})
}

func TestStatAgreesWithStats(t *testing.T) {
	a := New(NewFakeMemory(1<<30), Config{}, 0)
	b1, err := a.Malloc(4_000_000, 0)
	if err != nil {
		t.Fatal(err)
	}
	b2, err := a.Malloc(1000, 0)
	if err != nil {
		t.Fatal(err)
	}
	a.Free(b2)
	all := a.Stats()
	for key, want := range all {
		got, ok := a.Stat(key)
		if !ok || got != want {
			t.Errorf("Stat(%q) = %d, %v; Stats has %d", key, got, ok, want)
		}
	}
	for _, bad := range []string{"", "allocated_bytes", "allocated_bytes.all", "allocated_bytes.all.nope", "nope.all.current", "allocated_bytes.gpu.current", "num_things"} {
		if _, ok := a.Stat(bad); ok {
			t.Errorf("Stat(%q) reported ok for an unknown key", bad)
		}
	}
	a.Free(b1)
}

func TestBlockKnowsItsAllocatorAndWhetherItWasFreed(t *testing.T) {
	mem := NewFakeMemory(1 << 30)
	a := New(mem, Config{}, 0)
	b, err := a.Malloc(1000, 0)
	if err != nil {
		t.Fatal(err)
	}
	if b.Allocator() != a || a.Memory() != Memory(mem) {
		t.Error("a block leads back to its allocator and the allocator to its memory")
	}
	if b.Freed() {
		t.Error("a live block reports Freed")
	}
	a.Free(b)
	if !b.Freed() {
		t.Error("a freed block does not report Freed")
	}
}
