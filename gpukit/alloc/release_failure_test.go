package alloc

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
)

// Releases that fail (issue 36). cudaFree, cuMemUnmap and cuMemAddressFree
// can fail on a card (a sticky error from an earlier kernel, a lost device);
// PyTorch's C10_CUDA_CHECK then throws out of malloc or empty_cache. Here
// the error comes back from Malloc or TryEmptyCache, and the segment stays
// reserved and counted for a later call to retry.

// errInjected is the failure failingMemory injects.
var errInjected = errors.New("injected device failure")

// failingMemory is a FakeMemory whose releases (Free, UnmapPages and
// Unreserve) fail on demand. A failed call changes nothing on the fake.
type failingMemory struct {
	*FakeMemory
	mu     sync.Mutex
	fails  func(method string, call int) bool // nil: nothing fails
	calls  map[string]int                     // release calls since failOn, by method
	failed int                                // calls failed since failOn
}

func newFailingMemory(capacity int64) *failingMemory {
	return &failingMemory{FakeMemory: NewFakeMemory(capacity), calls: map[string]int{}}
}

// failOn makes the releases for which fails returns true fail; call counts
// each method's calls from 1, starting now. nil makes every release succeed.
func (m *failingMemory) failOn(fails func(method string, call int) bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.fails = fails
	m.calls = map[string]int{}
	m.failed = 0
}

// failNth fails the n-th call of method from now on; n 0 fails every call.
func failNth(method string, n int) func(string, int) bool {
	return func(m string, call int) bool { return m == method && (n == 0 || call == n) }
}

func (m *failingMemory) fail(method string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls[method]++
	if m.fails == nil || !m.fails(method, m.calls[method]) {
		return false
	}
	m.failed++
	return true
}

func (m *failingMemory) Free(addr uint64) error {
	if m.fail("Free") {
		return fmt.Errorf("failing: free of 0x%x: %w", addr, errInjected)
	}
	return m.FakeMemory.Free(addr)
}

func (m *failingMemory) UnmapPages(s Stream, addr uint64, page int64, n int) error {
	if m.fail("UnmapPages") {
		return fmt.Errorf("failing: unmap of %d pages at 0x%x: %w", n, addr, errInjected)
	}
	return m.FakeMemory.UnmapPages(s, addr, page, n)
}

func (m *failingMemory) Unreserve(addr uint64, size int64) error {
	if m.fail("Unreserve") {
		return fmt.Errorf("failing: unreserve of 0x%x: %w", addr, errInjected)
	}
	return m.FakeMemory.Unreserve(addr, size)
}

func newFailing(t *testing.T, capacity int64, conf string) (*Allocator, *failingMemory) {
	t.Helper()
	mem := newFailingMemory(capacity)
	a := newOn(t, mem, conf)
	a.RecordHistory(HistoryOptions{Enabled: true})
	return a, mem
}

// allocState is what a failed release must leave as it was: every
// statistic but num_sync_all_streams (the wait for pending frees comes
// before any release, in PyTorch too), the segments and their blocks, the
// history, and what the device holds.
type allocState struct {
	Stats    map[string]int64
	Segments []Segment
	Trace    []string
	Device   deviceState
}

// deviceState counts the expandable segments and what the device holds.
type deviceState struct {
	ExpSegs       int
	Live          int
	Used          int64
	Ranges, Pages int
}

func stateOf(a *Allocator, mem *failingMemory) allocState {
	snap := a.Snapshot()
	var st allocState
	st.Stats = a.Stats()
	delete(st.Stats, "num_sync_all_streams")
	st.Segments = snap.Segments
	for _, e := range snap.DeviceTraces[0] {
		if e.Action == ActionSnapshot { // each Snapshot records one
			continue
		}
		st.Trace = append(st.Trace, fmt.Sprintf("%s 0x%x %d", e.Action, e.Addr, e.Size))
	}
	a.mu.Lock()
	st.Device.ExpSegs = len(a.expSegs)
	a.mu.Unlock()
	st.Device.Live, st.Device.Used = mem.Live()
	st.Device.Ranges, st.Device.Pages = mem.Reservations()
	return st
}

func sameState(t *testing.T, what string, got, want allocState) {
	t.Helper()
	for k, v := range want.Stats {
		if got.Stats[k] != v {
			t.Errorf("%s: %s = %d, was %d", what, k, got.Stats[k], v)
		}
	}
	if !reflect.DeepEqual(got.Segments, want.Segments) {
		t.Errorf("%s: segments\n%+v\nwere\n%+v", what, got.Segments, want.Segments)
	}
	if !reflect.DeepEqual(got.Trace, want.Trace) {
		t.Errorf("%s: history\n%s\nwas\n%s", what, strings.Join(got.Trace, "\n"), strings.Join(want.Trace, "\n"))
	}
	if got.Device != want.Device {
		t.Errorf("%s: device %+v, was %+v", what, got.Device, want.Device)
	}
}

// checkReleaseError checks that err is the injected failure, returned with
// the package's prefix and not taken for an out-of-memory error.
func checkReleaseError(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, errInjected) {
		t.Fatalf("%s: error %v, want the injected failure", what, err)
	}
	if !strings.HasPrefix(err.Error(), "alloc: ") {
		t.Errorf("%s: error %q lacks the package prefix", what, err)
	}
	var oom *OutOfMemoryError
	if errors.As(err, &oom) {
		t.Errorf("%s: a failed release reported as out of memory: %v", what, err)
	}
}

// TestMallocReleaseFailure: each of Malloc's ways of releasing cached
// memory before it retries (PyTorch's garbage_collect_cached_blocks,
// release_available_cached_blocks and release_cached_blocks, with
// unmap_block for expandable segments) returns the device's failure
// instead of panicking, leaves everything as it was, and succeeds once the
// device does.
func TestMallocReleaseFailure(t *testing.T) {
	// cacheTwo caches segments of 30 and 24 MiB, under a fraction that
	// lets garbage collection run.
	cacheTwo := func(t *testing.T, a *Allocator) {
		if err := a.SetMemoryFraction(0.99); err != nil {
			t.Fatal(err)
		}
		x := mustMalloc(t, a, 30*MiB, 0)
		y := mustMalloc(t, a, 24*MiB, 0)
		free(t, a, x)
		free(t, a, y)
	}
	for _, tc := range []struct {
		name     string
		conf     string
		capacity int64
		setup    func(t *testing.T, a *Allocator) // caches what the request must release
		size     int64
		stream   Stream
		fails    func(string, int) bool
		failed   map[string]int64 // statistics after the failure; nil: nothing changed
		after    map[string]int64 // statistics after the successful retry
	}{
		{
			name: "release_available_cached_blocks", conf: "max_split_size_mb:64", capacity: 150 * MiB,
			setup: func(t *testing.T, a *Allocator) { free(t, a, mustMalloc(t, a, 100*MiB, 0)) },
			size:  60 * MiB, fails: failNth("Free", 0),
			after: map[string]int64{"num_device_free": 1, "num_alloc_retries": 0, "num_ooms": 0,
				"reserved_bytes.all.current": 60 * MiB},
		},
		{
			name: "release_cached_blocks", capacity: 100 * MiB,
			setup: func(t *testing.T, a *Allocator) { free(t, a, mustMalloc(t, a, 60*MiB, 0)) },
			size:  50 * MiB, stream: 1, fails: failNth("Free", 0),
			after: map[string]int64{"num_device_free": 1, "num_alloc_retries": 1, "num_ooms": 0,
				"reserved_bytes.all.current": 50 * MiB, "segment.all.current": 1},
		},
		{
			name: "garbage_collect_cached_blocks", conf: "garbage_collection_threshold:0.5", capacity: 100 * MiB,
			setup: cacheTwo,
			size:  40 * MiB, fails: failNth("Free", 0),
			after: map[string]int64{"num_device_free": 2, "num_alloc_retries": 0,
				"reserved_bytes.all.current": 40 * MiB},
		},
		{
			name: "garbage_collect_cached_blocks, second segment", conf: "garbage_collection_threshold:0.5",
			capacity: 100 * MiB,
			setup:    cacheTwo,
			// y's segment goes first (the pool orders by size), x's fails.
			// Reserved is then 30 MiB, under the threshold (49.5 MiB): the
			// retry collects nothing and maps 40 MiB beside x's.
			size: 40 * MiB, fails: failNth("Free", 2),
			failed: map[string]int64{"num_device_free": 1, "segment.all.current": 1,
				"reserved_bytes.all.current": 30 * MiB},
			after: map[string]int64{"num_device_free": 1, "num_alloc_retries": 0,
				"reserved_bytes.all.current": 70 * MiB},
		},
		{
			name: "unmap_block in release_cached_blocks", conf: "expandable_segments:True", capacity: 100 * MiB,
			setup: func(t *testing.T, a *Allocator) {
				x := mustMalloc(t, a, 60*MiB, 0)
				mustMalloc(t, a, 30*MiB, 1)
				free(t, a, x)
			},
			size: 50 * MiB, stream: 1, fails: failNth("UnmapPages", 0),
			after: map[string]int64{"num_device_free": 1, "num_alloc_retries": 1, "num_device_alloc": 3,
				"reserved_bytes.all.current": 80 * MiB},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, mem := newFailing(t, tc.capacity, tc.conf)
			tc.setup(t, a)
			before := stateOf(a, mem)
			mem.failOn(tc.fails)
			b, err := a.Malloc(tc.size, tc.stream)
			if b != nil {
				t.Fatalf("Malloc(%d) gave a block of %d bytes while the device failed to free", tc.size, b.Size())
			}
			checkReleaseError(t, "Malloc", err)
			if err := checkInvariants(a); err != nil {
				t.Fatalf("after the failure: %v", err)
			}
			if tc.failed == nil {
				sameState(t, "after the failed Malloc", stateOf(a, mem), before)
			} else {
				expectStats(t, a, tc.failed)
			}

			mem.failOn(nil)
			mustMalloc(t, a, tc.size, tc.stream)
			expectStats(t, a, tc.after)
		})
	}
}

// TestEmptyCacheReleaseFailure: TryEmptyCache stops at the first segment
// the device fails to free, as PyTorch's release_blocks does when
// C10_CUDA_CHECK throws; the segments freed before stay freed, the rest
// stay reserved and counted, and the next call frees them.
func TestEmptyCacheReleaseFailure(t *testing.T) {
	for _, tc := range []struct {
		name   string
		fails  func(string, int) bool
		tries  int              // failing TryEmptyCache calls
		failed map[string]int64 // statistics after them; nil: nothing changed
	}{
		{name: "the first segment", fails: failNth("Free", 1), tries: 1},
		{name: "every segment, twice", fails: failNth("Free", 0), tries: 2},
		{name: "the second segment", fails: failNth("Free", 2), tries: 1,
			failed: map[string]int64{"num_device_free": 1, "segment.all.current": 2}},
		{name: "the last segment", fails: failNth("Free", 3), tries: 1,
			failed: map[string]int64{"num_device_free": 2, "segment.all.current": 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, mem := newFailing(t, 1<<30, "")
			x := mustMalloc(t, a, 30*MiB, 0)
			y := mustMalloc(t, a, 40*MiB, 0)
			z := mustMalloc(t, a, 1000, 0)
			free(t, a, x)
			free(t, a, y)
			free(t, a, z)
			before := stateOf(a, mem)
			mem.failOn(tc.fails)
			for i := range tc.tries {
				checkReleaseError(t, fmt.Sprintf("TryEmptyCache #%d", i+1), a.TryEmptyCache())
				if err := checkInvariants(a); err != nil {
					t.Fatalf("after the failure: %v", err)
				}
			}
			if tc.failed == nil {
				sameState(t, "after the failed TryEmptyCache", stateOf(a, mem), before)
			} else {
				expectStats(t, a, tc.failed)
			}

			mem.failOn(nil)
			if err := a.TryEmptyCache(); err != nil {
				t.Fatalf("TryEmptyCache once the device frees: %v", err)
			}
			expectStats(t, a, map[string]int64{"num_device_free": 3, "segment.all.current": 0,
				"reserved_bytes.all.current": 0})
			if n, used := mem.Live(); n != 0 || used != 0 {
				t.Errorf("the device still holds %d segments (%d bytes)", n, used)
			}
		})
	}
}

// TestExpandableReleaseFailure: unmapping an expandable segment's pages
// (PyTorch's unmap_block) or freeing its address range
// (release_expandable_segment) can fail; the pages, or the range, stay
// the allocator's, and a later release retries.
func TestExpandableReleaseFailure(t *testing.T) {
	// x and y take 30 MiB each of a large-pool segment: pages [0, 20),
	// [20, 40) and [40, 60) mapped.
	setup := func(t *testing.T) (*Allocator, *failingMemory, *Block, *Block) {
		a, mem := newFailing(t, 1<<30, "expandable_segments:True")
		x := mustMalloc(t, a, 30*MiB, 0)
		y := mustMalloc(t, a, 30*MiB, 0)
		return a, mem, x, y
	}
	for _, tc := range []struct {
		name     string
		freeY    bool
		reserved int64 // reserved_bytes after the successful retry
		ranges   int   // ranges the device still holds then
	}{
		// unmap_block on [0, 30): page [0, 20) only.
		{name: "unmap of some pages", reserved: 40 * MiB, ranges: 1},
		{name: "unmap of every page", freeY: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, mem, x, y := setup(t)
			free(t, a, x)
			if tc.freeY {
				free(t, a, y)
			}
			before := stateOf(a, mem)
			mem.failOn(failNth("UnmapPages", 0))
			checkReleaseError(t, "TryEmptyCache", a.TryEmptyCache())
			sameState(t, "after the failed unmap", stateOf(a, mem), before)
			mem.failOn(nil)
			if err := a.TryEmptyCache(); err != nil {
				t.Fatal(err)
			}
			expectStats(t, a, map[string]int64{"reserved_bytes.all.current": tc.reserved, "num_device_free": 1})
			if ranges, pages := mem.Reservations(); ranges != tc.ranges || pages != int(tc.reserved/(20*MiB)) {
				t.Errorf("the device holds %d ranges, %d pages; want %d, %d", ranges, pages, tc.ranges, tc.reserved/(20*MiB))
			}
		})
	}
	// The pages are unmapped, then freeing the range fails: the range stays
	// reserved (reserved_bytes counts no byte of it) and is freed by the
	// next release, or reused first by the stream's next allocation.
	for _, next := range []string{"TryEmptyCache", "Malloc"} {
		t.Run("address range, then "+next, func(t *testing.T) {
			a, mem, x, y := setup(t)
			base := x.Segment()
			free(t, a, x)
			free(t, a, y)
			mem.failOn(failNth("Unreserve", 0))
			checkReleaseError(t, "TryEmptyCache", a.TryEmptyCache())
			if err := checkInvariants(a); err != nil {
				t.Fatal(err)
			}
			expectStats(t, a, map[string]int64{"reserved_bytes.all.current": 0, "num_device_free": 1})
			if ranges, pages := mem.Reservations(); ranges != 1 || pages != 0 {
				t.Fatalf("after the failure: %d ranges, %d pages; want the range, no page", ranges, pages)
			}
			checkReleaseError(t, "TryEmptyCache again", a.TryEmptyCache())
			mem.failOn(nil)
			if next == "Malloc" {
				b := mustMalloc(t, a, 30*MiB, 0)
				if b.Segment() != base {
					t.Errorf("the next allocation took a range at 0x%x, not the unreleased 0x%x", b.Segment(), base)
				}
				free(t, a, b)
			}
			if err := a.TryEmptyCache(); err != nil {
				t.Fatal(err)
			}
			if ranges, pages := mem.Reservations(); ranges != 0 || pages != 0 {
				t.Errorf("the device still holds %d ranges, %d pages", ranges, pages)
			}
			if len(a.expSegs) != 0 {
				t.Errorf("%d expandable segments left", len(a.expSegs))
			}
		})
	}
	t.Run("address range in Malloc's retry", func(t *testing.T) {
		a, mem := newFailing(t, 100*MiB, "expandable_segments:True")
		x := mustMalloc(t, a, 60*MiB, 0)
		mustMalloc(t, a, 30*MiB, 1)
		free(t, a, x)
		mem.failOn(failNth("Unreserve", 0))
		_, err := a.Malloc(50*MiB, 1)
		checkReleaseError(t, "Malloc", err)
		// Stream 0's pages were unmapped before its range failed to go.
		expectStats(t, a, map[string]int64{"reserved_bytes.all.current": 40 * MiB, "num_device_free": 1,
			"num_alloc_retries": 0})
		mem.failOn(nil)
		mustMalloc(t, a, 50*MiB, 1) // the device has room now: no release
		if ranges, _ := mem.Reservations(); ranges != 2 {
			t.Errorf("%d ranges, want stream 0's and stream 1's", ranges)
		}
		if err := a.TryEmptyCache(); err != nil {
			t.Fatal(err)
		}
		if ranges, _ := mem.Reservations(); ranges != 1 {
			t.Errorf("%d ranges after TryEmptyCache, want stream 1's", ranges)
		}
	})
}

// TestReleaseFailureKeepsTheSegment follows one segment through a failed
// release: it stays cached, so an allocation reuses it; the history has no
// segment_free for it; EmptyCache, which returns nothing, panics with the
// device's error; and a retry frees it.
func TestReleaseFailureKeepsTheSegment(t *testing.T) {
	a, mem := newFailing(t, 100*MiB, "")
	x := mustMalloc(t, a, 60*MiB, 0)
	free(t, a, x)
	before := stateOf(a, mem)

	mem.failOn(failNth("Free", 0))
	_, err := a.Malloc(50*MiB, 1) // a new segment for stream 1 needs stream 0's
	checkReleaseError(t, "Malloc", err)
	if !strings.Contains(err.Error(), fmt.Sprintf("alloc: device free of segment 0x%x (%d bytes) failed: failing: ", x.Segment(), 60*MiB)) {
		t.Errorf("error %q does not name the segment", err)
	}
	sameState(t, "after the failed Malloc", stateOf(a, mem), before)
	expectPanic(t, "alloc: device free of segment", a.EmptyCache)
	sameState(t, "after EmptyCache panicked", stateOf(a, mem), before)

	// The cached segment is still the allocator's: stream 0 reuses it,
	// with no device call.
	y := mustMalloc(t, a, 60*MiB, 0)
	if y.Segment() != x.Segment() {
		t.Errorf("Malloc on stream 0 got segment 0x%x, not the cached 0x%x", y.Segment(), x.Segment())
	}
	if mem.Mallocs != 1 {
		t.Errorf("%d device mallocs, want 1", mem.Mallocs)
	}
	free(t, a, y)

	mem.failOn(nil)
	if err := a.TryEmptyCache(); err != nil {
		t.Fatal(err)
	}
	expectStats(t, a, map[string]int64{"num_device_free": 1, "segment.all.current": 0, "reserved_bytes.all.current": 0})
	var frees int
	for _, e := range a.Snapshot().DeviceTraces[0] {
		if e.Action == ActionSegmentFree {
			frees++
		}
	}
	if frees != 1 {
		t.Errorf("%d segment_free entries, want 1: the failed frees record none", frees)
	}
}
