package synthsnap

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpumem/course/gpukit/alloc/snapshot"
)

func layouts() map[string]Options {
	return map[string]Options{
		"pytorch":        {Events: 2000, Frames: 20},
		"pytorch shared": {Events: 2000, Frames: 20, ShareFrames: true},
		"plain":          {Events: 2000, Frames: 5, Layout: Plain},
	}
}

// The trace is one PyTorch's allocator makes: the replay agrees with every
// decision; each event has the frames of its stack.
func TestSnapshotReplays(t *testing.T) {
	for name, o := range layouts() {
		var b bytes.Buffer
		info, err := Write(&b, o)
		require.NoError(t, err, name)
		assert.Equal(t, int64(b.Len()), info.Bytes)
		s, err := snapshot.Read(bytes.NewReader(b.Bytes()), snapshot.Limits)
		require.NoError(t, err, name)
		require.Len(t, s.Traces, 1)
		tr := s.Traces[0]
		require.Len(t, tr, info.Events, name)
		assert.GreaterOrEqual(t, info.Events, o.Events)
		g, err := s.Check(snapshot.CheckOptions{MemoryFraction: 1})
		require.NoError(t, err, name)
		assert.Equal(t, info.Allocs, g.Allocs, name)
		assert.Equal(t, g.Allocs, g.AllocsAgreed, name)
		assert.Equal(t, g.SegmentEvents, g.SegmentsAgreed, name)
		assert.Zero(t, g.Disagreements, name)
		k := 0
		for _, e := range tr {
			if e.Action != "alloc" {
				continue
			}
			want := o.StackOf(o.StackOfAlloc(k))
			require.Len(t, e.Frames, min(len(want), 64), name)
			for i, f := range e.Frames {
				fr := FrameOf(want[i])
				assert.Equal(t, snapshot.Frame{Filename: fr.Filename, Line: int64(fr.Line), Name: fr.Name}, f)
			}
			k++
		}
		assert.Equal(t, info.Allocs, k)
	}
}

// Python's pickle reads both layouts (FRAMEs end between opcodes), as
// PyTorch's tools would.
func TestPythonLoads(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3 to read the files with")
	}
	for name, o := range layouts() {
		path := filepath.Join(t.TempDir(), "snap.pickle")
		f, err := os.Create(path)
		require.NoError(t, err)
		info, err := Write(f, o)
		require.NoError(t, err)
		require.NoError(t, f.Close())
		require.Greater(t, info.Bytes, int64(64<<10), "more than one FRAME")
		out, err := exec.Command(python, "-c", `import pickle, sys
s = pickle.load(open(sys.argv[1], "rb"))
print(len(s["device_traces"][0]), sum(len(e["frames"]) for e in s["device_traces"][0]))`, path).CombinedOutput()
		require.NoError(t, err, "%s: %s", name, out)
		fields := strings.Fields(string(out))
		require.Len(t, fields, 2)
		assert.Equal(t, strconv.Itoa(info.Events), fields[0], name)
	}
}
