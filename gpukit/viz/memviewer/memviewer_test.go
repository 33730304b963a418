package memviewer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpumem/course/gpukit/alloc"
)

// testMemory is a raw device of fixed capacity for building real snapshots.
type testMemory struct {
	capacity, used int64
	next           uint64
	live           map[uint64]int64
	clock          float64
}

func newTestMemory(capacity int64) *testMemory {
	return &testMemory{capacity: capacity, next: 0x7f0000000000, live: map[uint64]int64{}}
}

func (m *testMemory) Malloc(size int64) (uint64, error) {
	if size > m.capacity-m.used {
		return 0, alloc.ErrDeviceFull
	}
	a := m.next
	m.next += uint64(size+511) &^ 511
	m.used += size
	m.live[a] = size
	return a, nil
}

func (m *testMemory) Free(addr uint64) error {
	m.used -= m.live[addr]
	delete(m.live, addr)
	return nil
}

type done struct{}

func (done) Query() bool { return true }

func (m *testMemory) RecordEvent(alloc.Stream) alloc.Event { return done{} }
func (m *testMemory) Capacity() int64                      { return m.capacity }
func (m *testMemory) NowMicros() float64                   { m.clock++; return m.clock }

// sampleSnapshot runs a small workload with history and stacks on: large and
// small pools, a split, a free that leaves a gap, and an OOM.
func sampleSnapshot(t testing.TB) alloc.Snapshot {
	t.Helper()
	a := alloc.New(newTestMemory(64<<20), alloc.Config{}, 0)
	a.RecordHistory(alloc.HistoryOptions{Enabled: true, Stacks: true})
	must := func(size int64) *alloc.Block {
		b, err := a.Malloc(size, 0)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	x := must(4_000_000)
	y := must(3_000_000)
	must(5_000_000)
	must(1000)
	s := must(700_000)
	a.Free(y)
	a.Free(s)
	must(12_000_000)
	a.Free(must(15_000_000)) // a cached segment that the OOM path releases
	if _, err := a.Malloc(60<<20, 0); err == nil {
		t.Fatal("expected an OOM")
	}
	_ = x
	return a.Snapshot()
}

var urlRE = regexp.MustCompile(`(?i)(xmlns(:\w+)?="[^"]*")|https?://`)

func TestHTMLSelfContained(t *testing.T) {
	snap := sampleSnapshot(t)
	page := HTML(snap, WithTitle("Lesson 3 <fragmentation>"))
	for _, m := range urlRE.FindAllString(page, -1) {
		if !strings.HasPrefix(strings.ToLower(m), "xmlns") {
			t.Errorf("page refers to the network: %q", m)
		}
	}
	for _, bad := range []string{"<link", "@import", "src=", "fetch(", "XMLHttpRequest", "url(http", "<iframe"} {
		if strings.Contains(page, bad) {
			t.Errorf("page contains %q", bad)
		}
	}
	for _, want := range []string{"<!DOCTYPE html>", "<title>Lesson 3 &lt;fragmentation&gt;</title>", "Active memory over time", "Segment map", "</html>"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if o, c := strings.Count(page, "<script"), strings.Count(page, "</script>"); o != c || o != 2 {
		t.Errorf("%d <script> and %d </script>", o, c)
	}
	if o, c := strings.Count(page, "<section"), strings.Count(page, "</section>"); o != c {
		t.Errorf("%d <section> and %d </section>", o, c)
	}
	v := embedded(t, page)
	if v.Totals.Segments != len(snap.Segments) || v.Totals.Segments == 0 {
		t.Errorf("segments %d, snapshot has %d", v.Totals.Segments, len(snap.Segments))
	}
	var reserved, allocated int64
	for _, s := range snap.Segments {
		reserved += s.TotalSize
		for _, b := range s.Blocks {
			if b.State == alloc.StateActiveAllocated {
				allocated += b.Size
			}
		}
	}
	if v.Totals.Reserved != reserved || v.Totals.Allocated != allocated {
		t.Errorf("totals %+v, want reserved %d allocated %d", v.Totals, reserved, allocated)
	}
	if len(v.Events) != len(snap.DeviceTraces[0]) {
		t.Errorf("%d events embedded, trace has %d", len(v.Events), len(snap.DeviceTraces[0]))
	}
	var sawFrame, sawOOM bool
	for _, e := range v.Events {
		if e.Action == alloc.ActionAlloc && len(e.Frames) > 0 && strings.Contains(e.Frames[0], "sampleSnapshot") {
			sawFrame = true
		}
		sawOOM = sawOOM || e.Action == alloc.ActionOOM
	}
	if !sawFrame || !sawOOM {
		t.Errorf("frames of allocations (%v) or the OOM (%v) missing", sawFrame, sawOOM)
	}
	if HTML(snap) != string(pageBytes(snap)) {
		t.Error("HTML and WriteHTML differ")
	}
}

// embedded extracts the JSON data of a page.
func embedded(t *testing.T, page string) view {
	t.Helper()
	const open = `<script type="application/json" id="snapshot-data">`
	i := strings.Index(page, open)
	if i < 0 {
		t.Fatal("no data script")
	}
	rest := page[i+len(open):]
	j := strings.Index(rest, "</script>")
	var v view
	if err := json.Unmarshal([]byte(rest[:j]), &v); err != nil {
		t.Fatalf("embedded data: %v", err)
	}
	return v
}

func TestHTMLEscapesData(t *testing.T) {
	snap := alloc.Snapshot{Segments: []alloc.Segment{{
		Address: 4096, TotalSize: 2 << 20, SegmentType: "small",
		Blocks: []alloc.BlockInfo{{Address: 4096, Size: 2 << 20, RequestedSize: 100, State: alloc.StateActiveAllocated,
			Frames: []alloc.Frame{{Filename: "</script><script>alert(1)</script>", Line: 1, Name: "<b>alert(1)"}}}},
	}}}
	page := HTML(snap)
	if strings.Count(page, "</script>") != 2 {
		t.Fatal("data closed the script element")
	}
	v := embedded(t, page)
	if !strings.Contains(v.Live[0].Frames[0], "alert(1)") {
		t.Errorf("frame text lost: %q", v.Live[0].Frames)
	}
}

func TestHTMLEmptyAndWindow(t *testing.T) {
	page := HTML(alloc.Snapshot{})
	if !strings.Contains(page, "No trace was recorded") || !strings.Contains(page, "holds no segments") {
		t.Error("empty snapshot page lacks its explanations")
	}
	snap := sampleSnapshot(t)
	n := len(snap.DeviceTraces[0])
	v := embedded(t, HTML(snap, WithMaxEntries(3)))
	if len(v.Events) != 3 || v.Skipped != n-3 || v.Events[0].I != n-3 {
		t.Errorf("window: %d events, skipped %d, first %d; trace has %d", len(v.Events), v.Skipped, v.Events[0].I, n)
	}
	v = embedded(t, HTML(snap, WithDevice(1)))
	if len(v.Segments) != 0 || len(v.Events) != 0 {
		t.Error("device 1 shows device 0's data")
	}
}

const pyCheck = `
import pickle, sys
d = pickle.load(open(sys.argv[1], "rb"))
assert list(d) == ["segments", "device_traces", "allocator_settings"], list(d)
seg_keys = ["device", "address", "total_size", "allocated_size", "active_size", "requested_size",
            "stream", "segment_type", "segment_pool_id", "is_expandable", "frames", "blocks"]
for s in d["segments"]:
    assert list(s) == seg_keys, list(s)
    assert s["segment_pool_id"] == (0, 0)
    addr = s["address"]
    for b in s["blocks"]:
        assert list(b) == ["address", "size", "requested_size", "state", "frames"], list(b)
        assert b["address"] == addr
        assert b["state"] in ("active_allocated", "active_pending_free", "inactive")
        addr += b["size"]
    assert addr == s["address"] + s["total_size"]
actions = set()
for e in d["device_traces"][0]:
    key = "device_free" if e["action"] == "oom" else "addr"
    assert list(e) == ["action", key, "size", "stream", "time_us", "frames"], list(e)
    for f in e["frames"]:
        assert list(f) == ["filename", "line", "name"]
    actions.add(e["action"])
print(len(d["segments"]), sorted(actions), max(s["address"] for s in d["segments"]) > 2**31)
`

func writeSample(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "snap.pickle")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := WritePickle(f, sampleSnapshot(t)); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestPickleStructure(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not available")
	}
	path := writeSample(t)
	out, err := exec.Command(py, "-c", pyCheck, path).CombinedOutput()
	if err != nil {
		t.Fatalf("python: %v\n%s", err, out)
	}
	want := "['alloc', 'free_completed', 'free_requested', 'oom', 'segment_alloc', 'segment_free'"
	if !strings.Contains(string(out), want) || !strings.Contains(string(out), "True") {
		t.Errorf("python says %s", out)
	}
}

func TestPickleBytesMatchWriter(t *testing.T) {
	snap := sampleSnapshot(t)
	p, err := Pickle(snap)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WritePickle(&b, snap); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(p, b.Bytes()) {
		t.Error("Pickle and WritePickle differ")
	}
}

// TestMemoryViz runs PyTorch's torch/cuda/_memory_viz.py (its stats and
// trace commands need only python3) on our pickle. PyTorch's file is not in
// this repository: set GPUKIT_MEMORY_VIZ to its path.
func TestMemoryViz(t *testing.T) {
	script := os.Getenv("GPUKIT_MEMORY_VIZ")
	if script == "" {
		t.Skip("set GPUKIT_MEMORY_VIZ=/path/to/_memory_viz.py to run PyTorch's viewer on a snapshot")
	}
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not available")
	}
	path := writeSample(t)
	run := func(cmd string) string {
		out, err := exec.Command(py, script, cmd, path).CombinedOutput()
		if err != nil {
			t.Fatalf("_memory_viz.py %s: %v\n%s", cmd, err, out)
		}
		return string(out)
	}
	stats := run("stats")
	for _, want := range []string{"segments: ", "total_reserved: ", "total_allocated: ", "total_free: "} {
		if !strings.Contains(stats, want) {
			t.Errorf("stats output lacks %q:\n%s", want, stats)
		}
	}
	trace := run("trace")
	for _, want := range []string{"Device 0 ----", "= cudaMalloc(", "del ", "# free completed for", "cudaFree(", "raise OutOfMemoryError()"} {
		if !strings.Contains(trace, want) {
			t.Errorf("trace output lacks %q:\n%s", want, trace)
		}
	}
	fmt.Fprintf(os.Stderr, "%s\n%s\n", stats, trace)

	// A snapshot taken with expandable segments: runs of mapped pages as
	// segments, segment_map and segment_unmap in the trace (printed as
	// entries that trace has no special form for).
	path = filepath.Join(t.TempDir(), "exp.pickle")
	if err := WritePickleFile(path, expandableSnapshot(t)); err != nil {
		t.Fatal(err)
	}
	stats, trace = run("stats"), run("trace")
	if !strings.Contains(stats, "segments: ") || !strings.Contains(trace, "'segment_map'") || !strings.Contains(trace, "'segment_unmap'") {
		t.Errorf("expandable snapshot: stats\n%s\ntrace\n%s", stats, trace)
	}
}

func TestEmbedIsolatesThePageInAFrame(t *testing.T) {
	page := HTML(alloc.Snapshot{}, WithTitle(`a "quoted" <title>`))
	frame := Embed(alloc.Snapshot{}, WithTitle(`a "quoted" <title>`))
	if !strings.HasPrefix(frame, "<iframe ") || !strings.HasSuffix(frame, "></iframe>") {
		t.Fatalf("Embed is not one iframe: %.80s…", frame)
	}
	start := strings.Index(frame, `srcdoc="`) + len(`srcdoc="`)
	srcdoc := frame[start : len(frame)-len(`"></iframe>`)]
	if strings.ContainsAny(srcdoc, `"<>`) {
		t.Error("the page inside srcdoc is not escaped")
	}
	if got := html.UnescapeString(srcdoc); got != page {
		t.Error("srcdoc does not hold exactly the HTML page")
	}
}

func TestWriteFiles(t *testing.T) {
	snap := sampleSnapshot(t)
	dir := t.TempDir()
	pk, page := filepath.Join(dir, "s.pickle"), filepath.Join(dir, "s.html")
	require.NoError(t, os.WriteFile(pk, []byte("old"), 0o600))
	require.NoError(t, WritePickleFile(pk, snap))
	require.NoError(t, WriteHTMLFile(page, snap, WithTitle("t")))
	want, err := Pickle(snap)
	require.NoError(t, err)
	got, err := os.ReadFile(pk)
	require.NoError(t, err)
	assert.Equal(t, want, got, "the old file is replaced by the whole pickle")
	info, err := os.Stat(pk)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm(), "an existing file keeps its mode")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 2, "no temporary file is left behind")

	missing := filepath.Join(dir, "no", "such", "dir", "s.pickle")
	err = WritePickleFile(missing, snap)
	require.Error(t, err)
	assert.True(t, strings.HasPrefix(err.Error(), "memviewer: "), err.Error())
}

func TestCheckOutputs(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.pickle"), filepath.Join(dir, "b.html")
	require.NoError(t, CheckOutputs(a, b))
	for _, tc := range []struct {
		name  string
		paths []string
	}{
		{"one path twice", []string{a, a}},
		{"the same path spelled twice", []string{a, filepath.Join(dir, ".", "a.pickle")}},
		{"a folder", []string{dir}},
		{"a missing folder", []string{filepath.Join(dir, "nope", "x.html")}},
	} {
		err := CheckOutputs(tc.paths...)
		assert.Error(t, err, tc.name)
		assert.Equal(t, strings.HasPrefix(tc.name, "one path") || strings.HasPrefix(tc.name, "the same"), errors.Is(err, ErrSameFile), tc.name)
	}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Empty(t, entries, "CheckOutputs leaves nothing behind")
}
