package memviewer

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpumem/course/gpukit/alloc"
	"github.com/gpumem/course/gpukit/device/profile"
	"github.com/gpumem/course/gpukit/device/sim"
)

// expandableSnapshot grows an expandable segment page by page and shrinks it
// with EmptyCache, on a meta device (accounting only).
func expandableSnapshot(t testing.TB) alloc.Snapshot {
	t.Helper()
	p, err := profile.LookupProfile("classroom")
	if err != nil {
		t.Fatal(err)
	}
	cfg, _ := alloc.ParseConfig("expandable_segments:True")
	a := alloc.New(sim.NewMeta(0, p), cfg, 0)
	a.RecordHistory(alloc.HistoryOptions{Enabled: true, Stacks: true})
	var live []*alloc.Block
	for n := int64(4); n <= 9; n++ { // batches of n samples of 3 MiB
		b, err := a.Malloc(n*3<<20, 0)
		if err != nil {
			t.Fatal(err)
		}
		live = append(live, b)
	}
	for _, b := range live[:3] {
		a.Free(b)
	}
	a.EmptyCache() // unmaps the pages the first three batches left free
	return a.Snapshot()
}

// TestExpandablePickle: segments carry is_expandable and the trace has
// segment_map and segment_unmap entries with the keys of every other entry,
// as PyTorch's snapshot does.
func TestExpandablePickle(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not available")
	}
	path := filepath.Join(t.TempDir(), "exp.pickle")
	if err := WritePickleFile(path, expandableSnapshot(t)); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(py, "-c", pyCheck+`
print(sorted({s["is_expandable"] for s in d["segments"]}))
`, path).CombinedOutput()
	if err != nil {
		t.Fatalf("python: %v\n%s", err, out)
	}
	for _, want := range []string{"'segment_map'", "'segment_unmap'", "[True]"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("python says %s; want %s", out, want)
		}
	}
	if strings.Contains(string(out), "'segment_alloc'") {
		t.Errorf("python says %s: segment_alloc with expandable segments", out)
	}
}

// TestExpandableHTML: the viewer marks expandable segments and draws the
// reserved line through the maps and unmaps.
func TestExpandableHTML(t *testing.T) {
	snap := expandableSnapshot(t)
	v := buildView(snap, options{maxEntries: 5000})
	var maps, unmaps int
	for _, e := range v.Events {
		switch e.Action {
		case alloc.ActionSegmentMap:
			maps++
		case alloc.ActionSegmentUnmap:
			unmaps++
		}
	}
	if maps == 0 || unmaps == 0 {
		t.Fatalf("%d maps and %d unmaps in the view", maps, unmaps)
	}
	for _, s := range v.Segments {
		if !s.Expandable {
			t.Errorf("segment 0x%x is not marked expandable", s.Addr)
		}
	}
	page := string(pageBytes(snap))
	for _, want := range []string{`"expandable":true`, `"a":"segment_map"`, `"a":"segment_unmap"`, "pages mapped"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	if dir := os.Getenv("GPUKIT_VIEWER_OUT"); dir != "" { // for a look in a browser
		if err := WriteHTMLFile(filepath.Join(dir, "expandable.html"), snap); err != nil {
			t.Fatal(err)
		}
	}
}
