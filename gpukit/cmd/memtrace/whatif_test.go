package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpumem/course/gpukit/internal/pickle/pickletest"
)

const gptDefault = "testdata/h200/gpt-default.pickle.gz"

func whatif(args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = run(append([]string{"whatif"}, args...), strings.NewReader(""), &out, &errOut)
	return code, out.String(), errOut.String()
}

// TestWhatifText replays gpt-default's requests under the settings of the
// course's H200 recordings; TestWhatIfDefaultRequests in gpukit/alloc/snapshot
// compares the figures with PyTorch's.
func TestWhatifText(t *testing.T) {
	code, out, errOut := whatif(gptDefault, "--alloc-conf", "", "--alloc-conf", "expandable_segments:True",
		"--alloc-conf", "per_process_memory_fraction:0.010199360106984329", "--capacity", "150109880320")
	require.Equal(t, 0, code, errOut)
	for _, want := range []string{
		"13,747 events, replayed on a device of 139.80 GiB",
		`check under its own setting "" (default): 13,747 events: 4,557 of 4,557 allocations at PyTorch's offset, 78 of 78 segment events as PyTorch made them`,
		"2 segments with 2 blocks in use existed before its first event",
		`"" (default)`, "1436.1 MiB", "1508.0 MiB",
		"expandable_segments:True", "1456.0 MiB",
		"1426.1 MiB", "1458.0 MiB", "event 3935, 48.00 MiB",
		"first OOM under per_process_memory_fraction:0.010199360106984329 (event 3935, 48.00 MiB on stream 0)",
		"note: Requests are replayed as recorded",
		"note: Not modelled:",
	} {
		assert.Contains(t, out, want)
	}
}

func TestWhatifJSON(t *testing.T) {
	code, out, errOut := whatif("--format", "json", "--device", "h100", gptDefault, "--alloc-conf", "max_split_size_mb:64")
	require.Equal(t, 0, code, errOut)
	var rep whatifReport
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	assert.Equal(t, 0, rep.GPU)
	assert.Equal(t, 13747, rep.Events)
	assert.Contains(t, rep.Device, "h100-80gb")
	assert.Equal(t, 4557, rep.Check.AllocsAgreed)
	assert.Zero(t, rep.Check.Disagreements)
	require.Len(t, rep.Rows, 1)
	assert.Equal(t, "max_split_size_mb:64", rep.Rows[0].Setting)
	assert.Equal(t, int64(1581252608), rep.Rows[0].PeakReserved) // 1508.0 MiB, PyTorch's
	assert.Equal(t, int64(80), rep.Rows[0].DeviceAllocs)
	assert.Nil(t, rep.Rows[0].OOM)
	assert.NotEmpty(t, rep.Caveats)
}

// TestWhatifOwnSetting: without --alloc-conf, the row is the snapshot's own
// setting.
func TestWhatifOwnSetting(t *testing.T) {
	code, out, errOut := whatif("testdata/h200/gpt-roundup-4.pickle.gz", "--format", "json")
	require.Equal(t, 0, code, errOut)
	var rep whatifReport
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	require.Len(t, rep.Rows, 1)
	assert.Equal(t, "roundup_power2_divisions:4", rep.Rows[0].Setting)
	assert.Equal(t, int64(1544)<<20, rep.Rows[0].PeakReserved)
}

func TestWhatifUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "needs one SNAPSHOT"},
		{[]string{gptDefault, gptDefault}, "needs one SNAPSHOT"},
		{[]string{gptDefault, "--alloc-conf", "max_split_size_mb:1"}, "max_split_size_mb"},
		{[]string{gptDefault, "--alloc-conf", "bogus:1"}, "bogus"},
		{[]string{gptDefault, "--alloc-conf", "per_process_memory_fraction:2"}, "per_process_memory_fraction"},
		{[]string{gptDefault, "--device", "h100", "--capacity", "1GiB"}, "not both"},
		{[]string{gptDefault, "--device", "v100"}, "names no single card"},
		{[]string{gptDefault, "--capacity", "12GB"}, "did you mean GiB"},
		{[]string{gptDefault, "--capacity", "-1"}, "capacity"},
		{[]string{gptDefault, "--format", "xml"}, "text or json"},
		{[]string{gptDefault, "--memory-fraction", "0"}, "--memory-fraction"},
		{[]string{gptDefault, "--gpu", "x"}, "--gpu"},
		{[]string{gptDefault, "--bogus"}, "bogus"},
	} {
		code, _, errOut := whatif(tc.args...)
		assert.Equal(t, exitUsage, code, "%q: %s", tc.args, errOut)
		assert.True(t, strings.HasPrefix(errOut, "memtrace: "), errOut)
		assert.Contains(t, errOut, tc.want, "%q", tc.args)
	}
}

// TestWhatifHostileSnapshots: a pickle from a stranger is data; whatever
// it holds gives a "memtrace: " error and exit status 1, never a panic.
func TestWhatifHostileSnapshots(t *testing.T) {
	good, err := os.ReadFile("testdata/h200/streams.pickle.gz")
	require.NoError(t, err)
	raw := pickletest.Gunzip(t, "testdata/h200/streams.pickle.gz")
	files := map[string][]byte{
		"os-system.pickle":   []byte("\x80\x02cos\nsystem\nq\x00X\x02\x00\x00\x00lsq\x01\x85q\x02Rq\x03."),
		"deep.pickle":        pickletest.Nested(200000),
		"huge.pickle":        append([]byte{0x80, 0x04, 0x8d}, binary.LittleEndian.AppendUint64(nil, 1<<63)...),
		"truncated.pickle":   raw[:len(raw)/2],
		"truncated.gz":       good[:len(good)/2],
		"empty.pickle":       {},
		"text.pickle":        []byte("not a pickle\n"),
		"list.pickle":        []byte("\x80\x02]."),
		"no-traces.pickle":   []byte("\x80\x02}X\x08\x00\x00\x00segments]s."),
		"bad-segment.pickle": []byte("\x80\x02}(X\x08\x00\x00\x00segments]K\x01aX\r\x00\x00\x00device_traces]u."),
	}
	dir := t.TempDir()
	for name, b := range files {
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, b, 0o644))
		code, out, errOut := whatif(path)
		assert.Equal(t, exitIO, code, "%s: %s", name, errOut)
		assert.Empty(t, out, name)
		assert.True(t, strings.HasPrefix(errOut, "memtrace: "), "%s: %s", name, errOut)
		assert.NotContains(t, errOut, "panic", name)
	}
	code, _, errOut := whatif(filepath.Join(dir, "missing.pickle"))
	assert.Equal(t, exitIO, code)
	assert.Contains(t, errOut, "memtrace: ")
}
