package main

import (
	"bytes"
	"math/big"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpumem/course/gpukit/alloc/snapshot"
	"github.com/gpumem/course/gpukit/cmd/memtrace/internal/synthsnap"
	"github.com/gpumem/course/gpukit/internal/pickle"
	"github.com/gpumem/course/gpukit/internal/pickle/pickletest"
	"github.com/gpumem/course/gpukit/internal/racetest"
)

// realsnap is the folder of the third-party snapshots; it sits beside the
// checkout (../shared/realsnap, MANIFEST.tsv there).
const realsnap = "../../../../shared/realsnap"

// snapshotFiles are the course's own recordings and, when ../shared is
// beside the checkout, the third-party ones.
func snapshotFiles(t testing.TB) []string {
	files, _ := filepath.Glob("testdata/h200/*.pickle.gz")
	shared, _ := filepath.Glob(filepath.Join(realsnap, "*.pickle.gz"))
	if len(shared) == 0 {
		t.Log("no ../shared/realsnap beside the checkout: the third-party snapshots are not read")
	}
	require.NotEmpty(t, files)
	return append(files, shared...)
}

func synthetic(t testing.TB, o synthsnap.Options) []byte {
	var b bytes.Buffer
	_, err := synthsnap.Write(&b, o)
	require.NoError(t, err)
	return b.Bytes()
}

// readBoth reads data with snapshot.Read and with readSnapshot.
func readBoth(t testing.TB, data []byte, lim pickle.Limits) (want, got *snapshot.Snapshot, wantErr, gotErr error, lost map[int]*bitset) {
	want, wantErr = snapshot.Read(bytes.NewReader(data), lim)
	got, lost, gotErr = readSnapshot(bytes.NewReader(data), lim)
	return
}

// readSnapshot gives what snapshot.Read gives, on every real snapshot (as
// they are and gzip-compressed) and on synthetic ones in both layouts.
func TestReadSnapshotMatchesRead(t *testing.T) {
	racetest.Skip(t, "single-goroutine reading of whole snapshots: make unit runs it without -race")
	inputs := map[string][]byte{}
	for _, f := range snapshotFiles(t) {
		raw, err := os.ReadFile(f)
		require.NoError(t, err)
		inputs[filepath.Base(f)] = raw // gzip
	}
	inputs["streams (not compressed)"] = pickletest.Gunzip(t, "testdata/h200/streams.pickle.gz")
	for name, o := range map[string]synthsnap.Options{
		"synthetic pytorch":        {Events: 3000, Frames: 80},
		"synthetic pytorch shared": {Events: 3000, Frames: 80, ShareFrames: true},
		"synthetic plain":          {Events: 3000, Frames: 10, Layout: synthsnap.Plain},
		"synthetic no frames":      {Events: 200, Frames: 0},
	} {
		inputs[name] = synthetic(t, o)
	}
	for name, data := range inputs {
		want, got, wantErr, gotErr, lost := readBoth(t, data, snapshot.Limits)
		require.NoError(t, wantErr, name)
		require.NoError(t, gotErr, name)
		require.True(t, reflect.DeepEqual(want, got), "%s: readSnapshot and snapshot.Read differ", name)
		assert.Empty(t, lost, name)
		events := 0
		for _, tr := range got.Traces {
			events += len(tr)
		}
		assert.Positive(t, events, name)
	}
}

// A snapshot whose events are not events gives snapshot.Read's error, the
// first one in its order (segments, each device's events, then the
// settings), whether readSnapshot streams the events or not.
func TestReadSnapshotErrorsMatchRead(t *testing.T) {
	ev := func(kv ...pickle.KV) pickle.Dict {
		return append(pickle.Dict{{Key: "action", Value: "alloc"}, {Key: "addr", Value: 4096}, {Key: "size", Value: 512}}, kv...)
	}
	frame := func(line any) pickle.Dict {
		return pickle.Dict{{Key: "name", Value: "f"}, {Key: "filename", Value: "a.py"}, {Key: "line", Value: line}}
	}
	frames := func(n int, bad int, badFrame any) []any {
		var out []any
		for i := range n {
			if i == bad {
				out = append(out, badFrame)
				continue
			}
			out = append(out, frame(i))
		}
		return out
	}
	seg := pickle.Dict{{Key: "address", Value: 4096}, {Key: "total_size", Value: 2 << 20}, {Key: "blocks", Value: []any{}}}
	snap := func(segments any, traces any, extra ...pickle.KV) pickle.Dict {
		return append(pickle.Dict{{Key: "segments", Value: segments}, {Key: "device_traces", Value: traces}}, extra...)
	}
	huge, _ := new(big.Int).SetString("1180591620717411303424", 10)
	badSettings := pickle.KV{Key: "allocator_settings", Value: pickle.Dict{{Key: "max_split_size", Value: "x"}}}
	many := make([]any, 300)
	for i := range many {
		many[i] = []any{}
	}
	cases := map[string]any{
		"good":                     snap([]any{seg}, []any{[]any{ev(), ev(pickle.KV{Key: "frames", Value: frames(3, -1, nil)})}}),
		"event not a dict":         snap([]any{}, []any{[]any{ev(), 5}}),
		"no action":                snap([]any{}, []any{[]any{pickle.Dict{{Key: "addr", Value: 1}}}}),
		"action an int":            snap([]any{}, []any{[]any{pickle.Dict{{Key: "action", Value: 1}}}}),
		"addr below 0":             snap([]any{}, []any{[]any{ev(pickle.KV{Key: "addr", Value: -1})}}),
		"size a bool":              snap([]any{}, []any{[]any{ev(pickle.KV{Key: "size", Value: true})}}),
		"stream beyond 2^63":       snap([]any{}, []any{[]any{ev(pickle.KV{Key: "stream", Value: huge})}}),
		"size None":                snap([]any{}, []any{[]any{ev(pickle.KV{Key: "size", Value: nil})}}),
		"frames a dict":            snap([]any{}, []any{[]any{ev(pickle.KV{Key: "frames", Value: frame(1)})}}),
		"frames None":              snap([]any{}, []any{[]any{ev(pickle.KV{Key: "frames", Value: nil})}}),
		"frame a str":              snap([]any{}, []any{[]any{ev(), ev(pickle.KV{Key: "frames", Value: frames(5, 0, "f")})}}),
		"frame line below 0":       snap([]any{}, []any{[]any{ev(pickle.KV{Key: "frames", Value: frames(5, 2, frame(-3))})}}),
		"frame line a float":       snap([]any{}, []any{[]any{ev(pickle.KV{Key: "frames", Value: frames(5, 4, frame(2.5))})}}),
		"bad frame past 64":        snap([]any{}, []any{[]any{ev(pickle.KV{Key: "frames", Value: frames(80, 70, "not a frame")})}}),
		"two bad frames":           snap([]any{}, []any{[]any{ev(pickle.KV{Key: "frames", Value: append(frames(3, 1, 7), "x")})}}),
		"bad event on device 1":    snap([]any{}, []any{[]any{ev()}, []any{ev(), ev(pickle.KV{Key: "addr", Value: "x"})}}),
		"bad segment, bad event":   snap([]any{5}, []any{[]any{ev(pickle.KV{Key: "addr", Value: "x"})}}),
		"bad event, bad settings":  snap([]any{}, []any{[]any{ev(pickle.KV{Key: "addr", Value: "x"})}}, badSettings),
		"device 0 not a list":      snap([]any{}, []any{5, []any{ev(pickle.KV{Key: "addr", Value: "x"})}}),
		"device 1 not a list":      snap([]any{}, []any{[]any{ev(pickle.KV{Key: "addr", Value: "x"})}, 5}),
		"traces not a list":        snap([]any{}, 5),
		"traces None":              snap([]any{}, nil),
		"segments None":            snap(nil, []any{}),
		"300 devices":              snap([]any{}, append(many, []any{ev(pickle.KV{Key: "addr", Value: "x"})})),
		"no traces":                pickle.Dict{{Key: "segments", Value: []any{}}},
		"no segments":              pickle.Dict{{Key: "device_traces", Value: []any{}}},
		"a list":                   []any{1},
		"bad settings":             snap([]any{}, []any{}, badSettings),
		"settings None":            snap([]any{}, []any{[]any{ev()}}, pickle.KV{Key: "allocator_settings", Value: nil}),
		"an empty device":          snap([]any{}, []any{[]any{}, []any{ev()}}),
		"traces set twice":         append(snap([]any{}, []any{[]any{ev(pickle.KV{Key: "addr", Value: "x"})}}), pickle.KV{Key: "device_traces", Value: []any{[]any{ev()}}}),
		"event keys set twice":     snap([]any{}, []any{[]any{append(ev(), pickle.KV{Key: "addr", Value: 8192}, pickle.KV{Key: "frames", Value: frames(2, -1, nil)}, pickle.KV{Key: "frames", Value: frames(1, -1, nil)})}}),
		"many events, a bad one":   snap([]any{}, []any{append(make([]any, 0, 3000), repeat(ev(), 2500)...), []any{ev(pickle.KV{Key: "size", Value: -5})}}),
		"an event after a bad one": snap([]any{}, []any{[]any{ev(pickle.KV{Key: "size", Value: -5}), 7}}),
	}
	for name, v := range cases {
		data, err := pickle.Marshal(v)
		require.NoError(t, err, name)
		want, got, wantErr, gotErr, _ := readBoth(t, data, snapshot.Limits)
		if wantErr != nil {
			require.Error(t, gotErr, name)
			assert.Equal(t, wantErr.Error(), gotErr.Error(), name)
			continue
		}
		require.NoError(t, gotErr, name)
		assert.True(t, reflect.DeepEqual(want, got), name)
	}
}

func repeat(v any, n int) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = v
	}
	return out
}

// Protocol 0's LIST and DICT build a container from the values above a
// MARK, after them: the stack does not tell where the events go, so they
// stay in the decoded value and snapshot reads them, with the same result.
func TestReadSnapshotUnknownPaths(t *testing.T) {
	data := []byte("(Vsegments\n(lVdevice_traces\n(((Vaction\nValloc\nVaddr\nI4096\nVframes\n((Vname\nVf\nVline\nI3\ndld(Vaction\nVfree_requested\ndlld.")
	want, got, wantErr, gotErr, _ := readBoth(t, data, snapshot.Limits)
	require.NoError(t, wantErr)
	require.NoError(t, gotErr)
	require.Len(t, got.Traces, 1)
	require.Len(t, got.Traces[0], 2)
	assert.Equal(t, []snapshot.Frame{{Name: "f", Line: 3}}, got.Traces[0][0].Frames)
	assert.True(t, reflect.DeepEqual(want, got))
}

// withBudget runs f with framesBudget set to b.
func withBudget(b int64, f func()) {
	old := framesBudget
	framesBudget = b
	defer func() { framesBudget = old }()
	f()
}

// Past the budget of distinct frames and stacks, new stacks are not kept,
// and whatif reads the file again for the frames of the OOMs it prints: the
// output is the same.
func TestWhatifLostFrames(t *testing.T) {
	o := synthsnap.Options{Events: 2000, Frames: 40, Stacks: 300}
	data := synthetic(t, o)
	path := filepath.Join(t.TempDir(), "snap.pickle")
	require.NoError(t, os.WriteFile(path, data, 0o644))
	args := []string{path, "--capacity", "100MiB", "--alloc-conf", "", "--alloc-conf", "expandable_segments:True", "--format", "json"}
	code, full, errOut := whatif(args...)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, full, `"frames": [`)
	require.Contains(t, full, "site-packages/torch/nn/modules")

	withBudget(0, func() {
		s, lost, err := readSnapshot(bytes.NewReader(data), snapshot.Limits)
		require.NoError(t, err)
		require.NotNil(t, lost[0])
		n := 0
		for i, e := range s.Traces[0] {
			if lost[0].has(i) {
				n++
				assert.Nil(t, e.Frames)
			}
		}
		assert.Equal(t, len(s.Traces[0]), n, "every stack is over a budget of 0")
		code, small, errOut := whatif(args...)
		require.Equal(t, 0, code, errOut)
		assert.Equal(t, full, small)
	})
}

// Reading keeps memory for the events, not for the frames: with four times
// the frames per event (drawn from the same frames and stacks, as a
// training loop repeats them), the file grows by megabytes and what the
// snapshot keeps and what the reader allocates do not.
func TestReadSnapshotMemorySublinearInFrames(t *testing.T) {
	racetest.Skip(t, "allocation counts: make unit runs it without -race")
	measure := func(data []byte) (kept, allocated uint64) {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		s, _, err := readSnapshot(bytes.NewReader(data), snapshot.Limits)
		require.NoError(t, err)
		runtime.GC()
		runtime.ReadMemStats(&after)
		runtime.KeepAlive(s)
		runtime.KeepAlive(data) // live before and after: not counted
		return after.HeapAlloc - min(after.HeapAlloc, before.HeapAlloc), after.TotalAlloc - before.TotalAlloc
	}
	for _, layout := range []synthsnap.Layout{synthsnap.PyTorch, synthsnap.Plain} {
		o := synthsnap.Options{Events: 20000, Frames: 12, Stacks: 64, UniqueFrames: 300, Layout: layout}
		if layout == synthsnap.Plain {
			o.Events = 4000
		}
		small := synthetic(t, o)
		o.Frames *= 4
		large := synthetic(t, o)
		grown := uint64(len(large) - len(small)) // almost all of it frames
		keptSmall, allocSmall := measure(small)
		keptLarge, allocLarge := measure(large)
		t.Logf("layout %d: %d and %d bytes of pickle; kept %d and %d bytes, allocated %d and %d",
			layout, len(small), len(large), keptSmall, keptLarge, allocSmall, allocLarge)
		// The events are the same: the snapshot grows by the stacks only
		// (64 of them, at most 64 frames of 48 bytes each), and holds the
		// 64 bytes of each snapshot.Event and little else.
		assert.Less(t, keptLarge, keptSmall+grown/8, "kept memory grows with the frames")
		assert.Less(t, keptLarge, uint64(64*o.Events+1<<20))
		if layout == synthsnap.PyTorch {
			// A frame repeated is a memo reference: reading it allocates
			// nothing.
			assert.Less(t, allocLarge, allocSmall+grown/4, "allocations grow with the frames")
		}
	}
}

// BenchmarkReadLargeSnapshot reads a synthetic snapshot of 60,000 events
// of 120 frames (PyTorch's layout, about 50 MB) as whatif does; peak-MB is
// the largest heap the reading reached.
func BenchmarkReadLargeSnapshot(b *testing.B) {
	path := filepath.Join(b.TempDir(), "large.pickle")
	f, err := os.Create(path)
	require.NoError(b, err)
	info, err := synthsnap.Write(f, synthsnap.Options{Events: 60000, Frames: 120})
	require.NoError(b, err)
	require.NoError(b, f.Close())
	b.SetBytes(info.Bytes)
	b.ReportAllocs()
	var peak uint64
	for b.Loop() {
		stop := watchHeap(&peak)
		f, err := os.Open(path)
		require.NoError(b, err)
		s, _, err := readSnapshot(f, snapshot.Limits)
		f.Close()
		stop()
		require.NoError(b, err)
		require.Len(b, s.Traces[0], info.Events)
	}
	b.ReportMetric(float64(peak)/(1<<20), "peak-MB")
}

// watchHeap samples the heap every millisecond into *peak until stop.
func watchHeap(peak *uint64) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		var ms runtime.MemStats
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				runtime.ReadMemStats(&ms)
				*peak = max(*peak, ms.HeapInuse)
			}
		}
	}()
	return func() { close(done); <-finished }
}

// FuzzReadSnapshot: whatever the bytes, readSnapshot gives what
// snapshot.Read gives (the same Snapshot, or an error where it gives one),
// never a panic. A pickle that refers back to a trace event readSnapshot
// left out (an event written twice) is the one it refuses that snapshot.Read
// reads.
func FuzzReadSnapshot(f *testing.F) {
	// Small seeds (the fuzzer minimizes what it finds, which a 20 KB
	// snapshot makes slow): synthetic ones in both layouts stand for the
	// real ones, which TestReadSnapshotMatchesRead reads whole.
	f.Add(synthetic(f, synthsnap.Options{Events: 20, Frames: 3, UniqueFrames: 5, Stacks: 4}))
	f.Add(synthetic(f, synthsnap.Options{Events: 20, Frames: 3, UniqueFrames: 5, Stacks: 4, ShareFrames: true}))
	f.Add(synthetic(f, synthsnap.Options{Events: 20, Frames: 2, UniqueFrames: 5, Stacks: 4, Layout: synthsnap.Plain}))
	f.Add([]byte("(Vsegments\n(lVdevice_traces\n(((Vaction\nValloc\nVaddr\nI4096\nVframes\n((Vname\nVf\nVline\nI3\ndld(Vaction\nVfree_requested\ndlld."))
	f.Add([]byte("\x80\x02cos\nsystem\nq\x00X\x02\x00\x00\x00lsq\x01\x85q\x02Rq\x03."))
	lim := pickle.Limits{MaxInput: 1 << 20, MaxValues: 1 << 16, MaxString: 1 << 12}
	f.Fuzz(func(t *testing.T, data []byte) {
		watch := time.AfterFunc(10*time.Second, func() { panic("FuzzReadSnapshot: one input took 10 s") })
		defer watch.Stop()
		want, got, wantErr, gotErr, lost := readBoth(t, data, lim)
		if gotErr != nil && !strings.HasPrefix(gotErr.Error(), "snapshot: ") {
			t.Fatalf("error without snapshot's prefix: %v", gotErr)
		}
		if wantErr == nil && gotErr != nil && strings.Contains(gotErr.Error(), "a value the reader left out") {
			return
		}
		if (wantErr == nil) != (gotErr == nil) {
			t.Fatalf("snapshot.Read: %v; readSnapshot: %v", wantErr, gotErr)
		}
		if wantErr == nil && !reflect.DeepEqual(want, got) {
			t.Fatalf("readSnapshot and snapshot.Read read different snapshots")
		}
		if len(lost) > 0 {
			t.Fatalf("frames lost under the budget")
		}
	})
}
