package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpumem/course/gpukit/alloc"
)

const (
	MiB = 1 << 20
	GiB = 1 << 30
)

type outLine struct {
	I      int              `json:"i"`
	OK     bool             `json:"ok"`
	Error  *string          `json:"error"`
	Offset *int64           `json:"offset"`
	Stats  map[string]int64 `json:"stats"`
}

// replayString runs a trace and returns the decoded output lines and stderr.
func replayString(t *testing.T, capacity int64, conf, trace string) ([]outLine, string) {
	t.Helper()
	cfg, err := alloc.ParseConfig(conf)
	if err != nil {
		t.Fatal(err)
	}
	r := newReplayer(capacity, cfg)
	var out, errOut bytes.Buffer
	if err := r.replay(strings.NewReader(trace), &out, &errOut); err != nil {
		t.Fatal(err)
	}
	return decodeLines(t, out.Bytes()), errOut.String()
}

func decodeLines(t *testing.T, b []byte) []outLine {
	t.Helper()
	var lines []outLine
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var l outLine
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&l); err != nil {
			t.Fatalf("output line %q: %v", sc.Text(), err)
		}
		if len(l.Stats) != len(statKeys) {
			t.Fatalf("output line %d has %d stats, want %d", l.I, len(l.Stats), len(statKeys))
		}
		for _, k := range statKeys {
			if _, ok := l.Stats[k]; !ok {
				t.Fatalf("output line %d lacks %s", l.I, k)
			}
		}
		if l.OK != (l.Error == nil) {
			t.Fatalf("output line %d: ok=%v but error=%v", l.I, l.OK, l.Error)
		}
		lines = append(lines, l)
	}
	return lines
}

// want is what one output line must say; only the stats listed are checked.
type want struct {
	err    string // "" for ok
	offset int64  // -1 for null
	stats  map[string]int64
}

const null = -1

func check(t *testing.T, got []outLine, wants []want) {
	t.Helper()
	if len(got) != len(wants) {
		t.Fatalf("%d output lines, want %d", len(got), len(wants))
	}
	for i, w := range wants {
		g := got[i]
		if g.I != i {
			t.Errorf("line %d: i=%d", i, g.I)
		}
		gotErr := ""
		if g.Error != nil {
			gotErr = *g.Error
		}
		if gotErr != w.err {
			t.Errorf("line %d: error %q, want %q", i, gotErr, w.err)
		}
		switch {
		case w.offset == null && g.Offset != nil:
			t.Errorf("line %d: offset %d, want null", i, *g.Offset)
		case w.offset != null && (g.Offset == nil || *g.Offset != w.offset):
			t.Errorf("line %d: offset %v, want %d", i, g.Offset, w.offset)
		}
		for k, v := range w.stats {
			if g.Stats[k] != v {
				t.Errorf("line %d: %s = %d, want %d", i, k, g.Stats[k], v)
			}
		}
	}
}

func TestReplayPolicy(t *testing.T) {
	// Expected values follow PyTorch's CUDACachingAllocator: sizes round up
	// to 512 B; <= 1 MiB uses the small pool and 2 MiB segments; larger
	// requests the large pool, 20 MiB segments below 10 MiB and 2 MiB-rounded
	// segments above; a large block is split when the remainder is > 1 MiB.
	tests := []struct {
		name     string
		capacity int64
		conf     string
		trace    string
		want     []want
	}{
		{
			name: "4,000,000 B in a 20 MiB segment", capacity: GiB,
			trace: `{"op":"alloc","id":"a","size":4000000,"stream":0}`,
			want: []want{{offset: 0, stats: map[string]int64{
				"allocated_bytes.all.current": 4000256, "allocated_bytes.all.peak": 4000256,
				"reserved_bytes.all.current": 20971520, "reserved_bytes.all.peak": 20971520,
				"active_bytes.all.current": 4000256, "requested_bytes.all.current": 4000000,
				"inactive_split_bytes.all.current": 20971520 - 4000256, "inactive_split.all.current": 1,
				"allocation.all.current": 1, "segment.all.current": 1,
				"allocated_bytes.large_pool.current": 4000256, "allocated_bytes.small_pool.current": 0,
				"reserved_bytes.large_pool.current": 20971520, "reserved_bytes.small_pool.current": 0,
				"num_device_alloc": 1, "num_device_free": 0, "num_alloc_retries": 0, "num_ooms": 0,
			}}},
		},
		{
			name: "small pool packs 512-byte blocks", capacity: GiB,
			trace: `{"op":"alloc","id":"a","size":1000}
{"op":"alloc","id":"b","size":1}
{"op":"alloc","id":"c","size":1048576}`,
			want: []want{
				{offset: 0, stats: map[string]int64{"allocated_bytes.small_pool.current": 1024, "reserved_bytes.small_pool.current": 2 * MiB, "requested_bytes.all.current": 1000}},
				{offset: 1024, stats: map[string]int64{"allocated_bytes.small_pool.current": 1536, "segment.all.current": 1, "inactive_split_bytes.all.current": 2*MiB - 1536}},
				// exactly 1 MiB is still small: it fits in the same segment
				{offset: 1536, stats: map[string]int64{"allocated_bytes.small_pool.current": 1536 + MiB, "segment.all.current": 1, "num_device_alloc": 1}},
			},
		},
		{
			name: "above 10 MiB: 2 MiB-rounded segment, small remainder not split", capacity: GiB,
			trace: `{"op":"alloc","id":"a","size":12000000}`,
			want: []want{{offset: 0, stats: map[string]int64{
				"allocated_bytes.all.current": 12582912, "requested_bytes.all.current": 12000000,
				"reserved_bytes.all.current": 12582912, "inactive_split.all.current": 0, "inactive_split_bytes.all.current": 0,
			}}},
		},
		{
			name: "best fit splits the cached remainder", capacity: GiB,
			trace: `{"op":"alloc","id":"a","size":4000000}
{"op":"alloc","id":"b","size":4000000}
{"op":"free","id":"a"}
{"op":"alloc","id":"c","size":2000000}`,
			want: []want{
				{offset: 0},
				{offset: 4000256, stats: map[string]int64{"allocated_bytes.all.current": 8000512, "num_device_alloc": 1}},
				{offset: null, stats: map[string]int64{"allocated_bytes.all.current": 4000256, "allocated_bytes.all.peak": 8000512, "inactive_split.all.current": 2}},
				// the freed 4,000,256 B block at 0 is the best fit (smaller than the 12,971,008 B tail)
				{offset: 0, stats: map[string]int64{"allocated_bytes.all.current": 4000256 + 2000384, "reserved_bytes.all.current": 20971520}},
			},
		},
		{
			name: "free and reuse without a device malloc", capacity: GiB,
			trace: `{"op":"alloc","id":"a","size":4000000}
{"op":"free","id":"a"}
{"op":"alloc","id":"b","size":4000000}`,
			want: []want{
				{offset: 0},
				{offset: null, stats: map[string]int64{"allocated_bytes.all.current": 0, "reserved_bytes.all.current": 20971520, "inactive_split.all.current": 0}},
				{offset: 0, stats: map[string]int64{"num_device_alloc": 1, "allocated_bytes.all.current": 4000256}},
			},
		},
		{
			name: "OOM after a retry when the cache cannot help", capacity: 30 * MiB,
			trace: `{"op":"alloc","id":"a","size":4000000}
{"op":"alloc","id":"b","size":18874368}
{"op":"free","id":"b"}`,
			want: []want{
				{offset: 0},
				{err: errOOM, offset: null, stats: map[string]int64{"num_alloc_retries": 1, "num_ooms": 1, "allocated_bytes.all.current": 4000256, "reserved_bytes.all.current": 20971520}},
				{err: errUnknownID, offset: null, stats: map[string]int64{"num_ooms": 1}},
			},
		},
		{
			name: "cached segment released to make room", capacity: 30 * MiB,
			trace: `{"op":"alloc","id":"a","size":4000000}
{"op":"free","id":"a"}
{"op":"alloc","id":"b","size":25165824}`,
			want: []want{
				{offset: 0},
				{offset: null},
				{offset: 0, stats: map[string]int64{"num_alloc_retries": 1, "num_ooms": 0, "num_device_free": 1, "num_device_alloc": 2, "reserved_bytes.all.current": 25165824, "reserved_bytes.all.peak": 25165824}},
			},
		},
		{
			name: "memory fraction caps reservation", capacity: 100 * MiB,
			trace: `{"op":"set_fraction","fraction":0.1}
{"op":"alloc","id":"a","size":4000000}
{"op":"set_fraction","fraction":1}
{"op":"alloc","id":"a","size":4000000}`,
			want: []want{
				{offset: null},
				{err: errOOM, offset: null, stats: map[string]int64{"num_ooms": 1, "reserved_bytes.all.current": 0}},
				{offset: null},
				{offset: 0, stats: map[string]int64{"reserved_bytes.all.current": 20971520}},
			},
		},
		{
			name: "empty_cache releases only entirely free segments", capacity: GiB,
			trace: `{"op":"alloc","id":"a","size":4000000}
{"op":"alloc","id":"b","size":1000}
{"op":"free","id":"a"}
{"op":"empty_cache"}`,
			want: []want{
				{offset: 0}, {offset: 0}, {offset: null},
				{offset: null, stats: map[string]int64{"reserved_bytes.all.current": 2 * MiB, "reserved_bytes.all.peak": 20971520 + 2*MiB, "num_device_free": 1, "segment.all.current": 1}},
			},
		},
		{
			name: "reset_peak", capacity: GiB,
			trace: `{"op":"alloc","id":"a","size":4000000}
{"op":"free","id":"a"}
{"op":"reset_peak"}`,
			want: []want{
				{offset: 0}, {offset: null, stats: map[string]int64{"allocated_bytes.all.peak": 4000256}},
				{offset: null, stats: map[string]int64{"allocated_bytes.all.peak": 0, "reserved_bytes.all.peak": 20971520}},
			},
		},
		{
			name: "max_split_size_mb keeps large cached blocks whole", capacity: GiB, conf: "max_split_size_mb:32",
			trace: `{"op":"alloc","id":"a","size":67108864}
{"op":"free","id":"a"}
{"op":"alloc","id":"b","size":4000000}`,
			want: []want{
				{offset: 0, stats: map[string]int64{"reserved_bytes.all.current": 64 * MiB}},
				{offset: null},
				// the 64 MiB block is oversize and may not serve a small request: a new 20 MiB segment
				{offset: 0, stats: map[string]int64{"reserved_bytes.all.current": 84 * MiB, "num_device_alloc": 2}},
			},
		},
		{
			name: "streams keep separate blocks", capacity: GiB,
			trace: `{"op":"alloc","id":"a","size":1000,"stream":0}
{"op":"free","id":"a"}
{"op":"alloc","id":"b","size":1000,"stream":1}`,
			want: []want{
				{offset: 0}, {offset: null},
				{offset: 0, stats: map[string]int64{"segment.all.current": 2, "reserved_bytes.small_pool.current": 4 * MiB}},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, stderr := replayString(t, tc.capacity, tc.conf, tc.trace)
			if stderr != "" {
				t.Errorf("unexpected stderr %q", stderr)
			}
			check(t, got, tc.want)
		})
	}
}

func TestReplayErrors(t *testing.T) {
	trace := strings.Join([]string{
		`{"op":"free","id":"never"}`,              // 0 unknown
		`{"op":"alloc","id":"z","size":0}`,        // 1 size 0
		`{"op":"free","id":"z"}`,                  // 2 free size 0
		`{"op":"free","id":"z"}`,                  // 3 already freed
		`{"op":"alloc","id":"b","size":1000}`,     // 4
		`{"op":"alloc","id":"b","size":5}`,        // 5 duplicate
		`{"op":"alloc","id":"z","size":0}`,        // 6 size 0 again
		`{"op":"alloc","id":"z","size":0}`,        // 7 duplicate of a size-0 id
		`{"op":"set_fraction","fraction":-0.1}`,   // 8
		`{"op":"set_fraction","fraction":1.5}`,    // 9
		`not json`,                                // 10
		`{"op":"alloc","id":"a"}`,                 // 11 missing size
		`{"op":"alloc","id":"a","size":-1}`,       // 12 negative size
		`{"op":"alloc","size":5}`,                 // 13 missing id
		`{"op":"nope"}`,                           // 14 unknown op
		`{"op":"alloc","id":5,"size":5}`,          // 15 id not a string
		`{"op":"alloc","id":"a","size":"5"}`,      // 16 size not a number
		`{"op":"alloc","id":"a","size":1.5}`,      // 17 size not an integer
		`{"op":"set_fraction"}`,                   // 18 missing fraction
		`{"op":"set_fraction","fraction":"half"}`, // 19
		`[]`,            // 20
		``,              // 21 empty line
		`{"op":"free"}`, // 22
		`{"op":"alloc","id":"a","size":5,"stream":-1}`, // 23 negative stream
		`{"op":"alloc","id":"a","size":5} trailing`,    // 24
		`{"id":"a"}`,                      // 25 missing op
		`{"op":null}`,                     // 26
		`{"op":"alloc","id":"","size":5}`, // 27 empty id
		`{"op":"alloc","id":"big","size":1099511627776}`, // 28 OOM
		`{"op":"free","id":"big"}`,                       // 29 failed alloc's id is not live
		`{"op":"free","id":"b"}`,                         // 30 ok
		`{"op":"alloc","id":"b","size":5}`,               // 31 id reusable after free
	}, "\n")
	got, stderr := replayString(t, GiB, "", trace)
	wants := []want{
		{err: errUnknownID, offset: null},
		{offset: null, stats: map[string]int64{"num_device_alloc": 0, "allocation.all.current": 0}},
		{offset: null},
		{err: errUnknownID, offset: null},
		{offset: 0},
		{err: errDuplicateID, offset: null, stats: map[string]int64{"allocation.all.current": 1}},
		{offset: null},
		{err: errDuplicateID, offset: null},
		{err: errBadFraction, offset: null},
		{err: errBadFraction, offset: null},
	}
	for i := 10; i <= 27; i++ {
		wants = append(wants, want{err: errBadOp, offset: null, stats: map[string]int64{"allocation.all.current": 1, "allocated_bytes.all.current": 1024}})
	}
	wants = append(wants,
		want{err: errOOM, offset: null, stats: map[string]int64{"num_ooms": 1}},
		want{err: errUnknownID, offset: null},
		want{offset: null, stats: map[string]int64{"allocation.all.current": 0}},
		want{offset: 0, stats: map[string]int64{"allocation.all.current": 1, "allocated_bytes.all.current": 512}},
	)
	check(t, got, wants)
	// Each malformed line is reported once on stderr with its 1-based number.
	for i := 10; i <= 27; i++ {
		if !strings.Contains(stderr, fmt.Sprintf("line %d: bad op", i+1)) {
			t.Errorf("stderr lacks line %d:\n%s", i+1, stderr)
		}
	}
	if n := strings.Count(stderr, "\n"); n != 18 {
		t.Errorf("stderr has %d lines, want 18:\n%s", n, stderr)
	}
}

func TestFailedOpsChangeNothing(t *testing.T) {
	// Stats lines around failures must match the line before them.
	trace := `{"op":"alloc","id":"a","size":4000000}
{"op":"alloc","id":"a","size":5}
{"op":"free","id":"x"}
{"op":"set_fraction","fraction":2}
bad`
	got, _ := replayString(t, GiB, "", trace)
	for i := 1; i < len(got); i++ {
		for _, k := range statKeys {
			if got[i].Stats[k] != got[0].Stats[k] {
				t.Errorf("line %d: %s changed from %d to %d", i, k, got[0].Stats[k], got[i].Stats[k])
			}
		}
	}
}

func TestLongLineAndCRLF(t *testing.T) {
	long := `{"op":"alloc","id":"` + strings.Repeat("x", maxLine+10) + `","size":1}`
	trace := "{\"op\":\"alloc\",\"id\":\"a\",\"size\":1}\r\n" + long + "\n{\"op\":\"free\",\"id\":\"a\"}"
	got, stderr := replayString(t, GiB, "", trace)
	check(t, got, []want{{offset: 0}, {err: errBadOp, offset: null}, {offset: null}})
	if !strings.Contains(stderr, "line 2: bad op") {
		t.Errorf("stderr %q", stderr)
	}
}

func TestUsage(t *testing.T) {
	for _, args := range [][]string{
		nil,
		{"replay"},
		{"replay", "--device-memory", "lots"},
		{"replay", "--device-memory", "0"},
		{"replay", "--device-memory", "1GiB", "--alloc-conf", "max_split_size_mb:-3"},
		{"replay", "--device-memory", "1GiB", "--alloc-conf", "nonsense_key:1"},
		{"replay", "--device-memory", "1GiB", "extra"},
		{"replay", "--bogus"},
		{"inspect"},
	} {
		var out, errOut bytes.Buffer
		if code := run(args, strings.NewReader(""), &out, &errOut); code != 2 {
			t.Errorf("run(%q) = %d, want 2", args, code)
		}
		if !strings.Contains(errOut.String(), "Usage:") {
			t.Errorf("run(%q) printed no usage: %q", args, errOut.String())
		}
	}
	var out, errOut bytes.Buffer
	if code := run([]string{"replay", "--device-memory", "64MiB"}, strings.NewReader(`{"op":"alloc","id":"a","size":1}`), &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	if !strings.HasPrefix(out.String(), `{"i":0,"ok":true,"error":null,"offset":0,"stats":{"allocated_bytes.all.current":512,`) {
		t.Errorf("output %q", out.String())
	}
}

// TestHugeRequests: the memtrace line of issue 8, twice, which once gave
// ok:true, 4 MiB allocated and requested_bytes −2 on a 2 GiB device.
func TestHugeRequests(t *testing.T) {
	line := `{"op":"alloc","id":"a","size":9223372036854775807}`
	got, _ := replayString(t, 2*GiB, "", line+"\n"+strings.Replace(line, `"a"`, `"b"`, 1))
	zero := map[string]int64{"allocated_bytes.all.current": 0, "requested_bytes.all.current": 0, "reserved_bytes.all.current": 0}
	check(t, got, []want{{err: errOOM, offset: null, stats: zero}, {err: errOOM, offset: null, stats: zero}})
	got, _ = replayString(t, 2*GiB, "roundup_power2_divisions:4", `{"op":"alloc","id":"a","size":8070450532247928833}`)
	check(t, got, []want{{err: errOOM, offset: null, stats: zero}})
}

// TestStrictInput: a byte-order mark, unknown, misspelled and repeated keys.
func TestStrictInput(t *testing.T) {
	trace := "\xef\xbb\xbf" + `{"op":"alloc","id":"a","size":1000}` + "\n" + // 0 BOM on the first line: accepted
		`{"op":"alloc","id":"b","strem":1,"size":5}` + "\n" + // 1
		`{"op":"alloc","id":"b","SIZE":5}` + "\n" + // 2
		`{"op":"alloc","id":"b","size":5,"size":6}` + "\n" + // 3
		"\xef\xbb\xbf" + `{"op":"free","id":"a"}` + "\n" + // 4 BOM later: refused
		`{"op":"free","id":"a"}` // 5
	got, stderr := replayString(t, GiB, "", trace)
	check(t, got, []want{{offset: 0}, {err: errBadOp, offset: null}, {err: errBadOp, offset: null},
		{err: errBadOp, offset: null}, {err: errBadOp, offset: null}, {offset: null}})
	for _, msg := range []string{
		`line 2: bad op: unknown key "strem"; valid keys are "op", "id", "size", "stream" and "fraction"`,
		`line 3: bad op: unknown key "SIZE"`,
		`line 4: bad op: key "size" appears twice`,
		`line 5: bad op: a UTF-8 byte-order mark`,
	} {
		if !strings.Contains(stderr, msg) {
			t.Errorf("stderr lacks %q:\n%s", msg, stderr)
		}
	}
}

// TestExitStatus: malformed lines give 3; refused operations give 0, or 3
// with --strict.
func TestExitStatus(t *testing.T) {
	for _, tc := range []struct {
		trace  string
		strict bool
		want   int
	}{
		{`{"op":"alloc","id":"a","size":1}`, false, 0},
		{`{"op":"alloc","id":"a","size":1}`, true, 0},
		{`{"op":"free","id":"x"}`, false, 0},
		{`{"op":"free","id":"x"}`, true, 3},
		{`{"op":"alloc","id":"a","size":1099511627776}`, true, 3},
		{`{"op":"alloc","id":"a","size":1,"strem":0}`, false, 3},
	} {
		args := []string{"replay", "--device-memory", "64MiB"}
		if tc.strict {
			args = append(args, "--strict")
		}
		var out, errOut bytes.Buffer
		if code := run(args, strings.NewReader(tc.trace), &out, &errOut); code != tc.want {
			t.Errorf("%q strict=%v: exit %d, want %d (%s)", tc.trace, tc.strict, code, tc.want, errOut.String())
		}
		if out.Len() == 0 {
			t.Errorf("%q: no output", tc.trace)
		}
	}
}

// TestOutputsCheckedFirst: bad output paths stop memtrace before it reads
// a line, and one path for both outputs is refused.
func TestOutputsCheckedFirst(t *testing.T) {
	dir := t.TempDir()
	same := filepath.Join(dir, "x")
	for _, tc := range []struct {
		args []string
		want int
	}{
		{[]string{"--snapshot", same, "--html", same}, 2},
		{[]string{"--snapshot", same, "--html", filepath.Join(dir, ".", "x")}, 2},
		{[]string{"--snapshot", filepath.Join(dir, "missing", "s.pickle")}, 1},
		{[]string{"--html", dir}, 1},
	} {
		args := append([]string{"replay", "--device-memory", "64MiB"}, tc.args...)
		var out, errOut bytes.Buffer
		if code := run(args, strings.NewReader(`{"op":"alloc","id":"a","size":1}`), &out, &errOut); code != tc.want {
			t.Errorf("%q: exit %d, want %d (%s)", tc.args, code, tc.want, errOut.String())
		}
		if out.Len() != 0 {
			t.Errorf("%q: replayed before checking the outputs: %s", tc.args, out.String())
		}
	}
	// A good file that was there survives a failed run untouched.
	good := filepath.Join(dir, "good.pickle")
	if err := os.WriteFile(good, []byte("good"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	run([]string{"replay", "--device-memory", "64MiB", "--snapshot", good, "--html", good}, strings.NewReader(""), &out, &errOut)
	if b, _ := os.ReadFile(good); string(b) != "good" {
		t.Errorf("the existing file became %q", b)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("files left behind: %v", entries)
	}
}

func TestParseBytes(t *testing.T) {
	for in, want := range map[string]int64{"1073741824": 1 << 30, "1GiB": 1 << 30, "512 MiB": 512 << 20, "64KiB": 64 << 10, "100B": 100} {
		got, err := parseBytes(in)
		if err != nil || got != want {
			t.Errorf("parseBytes(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "-1", "0", "1.5GiB", "GiB", "99999999999999999999", "9000000000GiB", "1X", "2G", "2GB", "3 mb"} {
		_, err := parseBytes(in)
		if err == nil {
			t.Errorf("parseBytes(%q) succeeded", in)
			continue
		}
		if !strings.Contains(in, "9") && strings.ContainsAny(in, "XGbm.") && !strings.Contains(err.Error(), "valid suffixes are B, KiB, MiB and GiB") {
			t.Errorf("parseBytes(%q): %v does not list the valid suffixes", in, err)
		}
	}
	if _, err := parseBytes("2G"); err == nil || !strings.Contains(err.Error(), "did you mean GiB?") {
		t.Errorf("parseBytes(2G): %v", err)
	}
}

// TestBinary builds memtrace and runs it on a trace file, with the pickle
// and HTML outputs.
func TestBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a binary")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "memtrace")
	build := exec.Command("go", "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	trace := filepath.Join(dir, "trace.jsonl")
	content := `{"op":"alloc","id":"a","size":4000000,"stream":0}
{"op":"alloc","id":"b","size":1000}
{"op":"free","id":"a"}
oops
{"op":"alloc","id":"c","size":99999999999}
`
	if err := os.WriteFile(trace, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	in, err := os.Open(trace)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	snap, page := filepath.Join(dir, "s.pickle"), filepath.Join(dir, "s.html")
	cmd := exec.Command(bin, "replay", "--device-memory", "1073741824", "--snapshot", snap, "--html", page)
	cmd.Stdin = in
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// The malformed line 4 makes the exit status 3; the outputs are written.
	if err := cmd.Run(); err == nil {
		t.Fatal("memtrace succeeded on a trace with a malformed line")
	} else if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 3 {
		t.Fatalf("memtrace: %v\n%s", err, stderr.String())
	}
	got := decodeLines(t, stdout.Bytes())
	check(t, got, []want{
		{offset: 0, stats: map[string]int64{"allocated_bytes.all.current": 4000256, "reserved_bytes.all.current": 20971520}},
		{offset: 0},
		{offset: null},
		{err: errBadOp, offset: null},
		{err: errOOM, offset: null},
	})
	if !strings.Contains(stderr.String(), "line 4: bad op") {
		t.Errorf("stderr %q", stderr.String())
	}
	p, err := os.ReadFile(snap)
	if err != nil || len(p) < 3 || p[0] != 0x80 || p[1] != 2 || p[len(p)-1] != '.' {
		t.Fatalf("snapshot pickle %v: % x", err, p[:min(len(p), 8)])
	}
	h, err := os.ReadFile(page)
	if err != nil || !bytes.Contains(h, []byte("<!DOCTYPE html>")) {
		t.Fatalf("html: %v", err)
	}
	if py, err := exec.LookPath("python3"); err == nil {
		out, err := exec.Command(py, "-c", `import pickle,sys
d = pickle.load(open(sys.argv[1], "rb"))
print(len(d["segments"]), [e["action"] for e in d["device_traces"][0]])`, snap).CombinedOutput()
		if err != nil {
			t.Fatalf("python: %v\n%s", err, out)
		}
		if !strings.Contains(string(out), "'segment_alloc', 'alloc'") || !strings.Contains(string(out), "'oom'") {
			t.Errorf("python read %s", out)
		}
	}
	// exit status 2 on a usage error
	if err := exec.Command(bin, "replay").Run(); err == nil {
		t.Error("memtrace replay without --device-memory succeeded")
	} else if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 {
		t.Errorf("exit: %v", err)
	}
}

func FuzzStep(f *testing.F) {
	for _, s := range []string{
		`{"op":"alloc","id":"a","size":4000000,"stream":0}`,
		`{"op":"free","id":"a"}`,
		`{"op":"empty_cache"}`,
		`{"op":"set_fraction","fraction":0.5}`,
		`{"op":"reset_peak"}`,
		`{"op":"alloc","id":"a","size":9223372036854775807}`,
		`{"op":"alloc","id":"a","size":9223372036854775296,"stream":2147483647}`,
		`{"op":"alloc","id":"b","size":1e3}`,
		`{"op":"set_fraction","fraction":1e400}`,
		"\x00\xff",
		`{"op":"alloc","id":"\ud800","size":1}`,
		`{"op":"alloc","id":"h","size":9223372036854775807}`,
		`{"op":"alloc","id":"a","strem":1,"size":5}`,
		`{"op":"alloc","id":"a","SIZE":5}`,
		`{"op":"alloc","id":"a","size":5,"size":6}`,
		"\xef\xbb\xbf" + `{"op":"alloc","id":"a","size":5}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r := newReplayer(64*MiB, alloc.Config{})
		// A few lines of state first, then the fuzzed line twice and
		// a free of every id, so that frees and duplicates get exercised.
		var out []byte
		lines := [][]byte{
			[]byte(`{"op":"alloc","id":"a","size":1000}`),
			[]byte(`{"op":"alloc","id":"b","size":3000000}`),
			data, data,
			[]byte(`{"op":"free","id":"a"}`),
		}
		for _, l := range bytes.Split(data, []byte("\n")) {
			lines = append(lines, l)
		}
		for i, l := range lines {
			before := len(out)
			out, _ = r.step(out, i, l)
			var line outLine
			if err := json.Unmarshal(out[before:], &line); err != nil {
				t.Fatalf("line %d output %q is not JSON: %v", i, out[before:], err)
			}
			st := line.Stats
			if !(0 <= st["requested_bytes.all.current"] && st["requested_bytes.all.current"] <= st["active_bytes.all.current"] &&
				0 <= st["allocated_bytes.all.current"] && st["allocated_bytes.all.current"] <= st["active_bytes.all.current"] &&
				st["active_bytes.all.current"] <= st["reserved_bytes.all.current"] && st["reserved_bytes.all.current"] <= 64*MiB) {
				t.Fatalf("line %d %q: impossible stats %v", i, l, st)
			}
			var o op
			if json.Unmarshal(l, &o) == nil && o.Size != nil && *o.Size > 64*MiB && line.OK && o.Op != nil && *o.Op == "alloc" {
				t.Fatalf("line %d %q: an allocation larger than the device succeeded", i, l)
			}
		}
	})
}

// genTrace writes n random operations: mostly allocs and frees of live ids
// with sizes over both pools, some empty_cache and reset_peak.
func genTrace(n int, seed uint64) []byte {
	rng := rand.New(rand.NewPCG(seed, 1))
	var b bytes.Buffer
	b.Grow(n * 48)
	var live []int
	next := 0
	for range n {
		x := rng.IntN(1000)
		switch {
		case x < 2:
			b.WriteString(`{"op":"empty_cache"}` + "\n")
		case x < 3:
			b.WriteString(`{"op":"reset_peak"}` + "\n")
		case x < 500 || len(live) < 8:
			var size int
			switch y := rng.IntN(10); {
			case y < 6:
				size = 1 + rng.IntN(64<<10)
			case y < 9:
				size = 1 + rng.IntN(8<<20)
			default:
				size = 1 + rng.IntN(64<<20)
			}
			fmt.Fprintf(&b, `{"op":"alloc","id":"t%d","size":%d,"stream":%d}`+"\n", next, size, rng.IntN(2))
			live = append(live, next)
			next++
		default:
			k := rng.IntN(len(live))
			fmt.Fprintf(&b, `{"op":"free","id":"t%d"}`+"\n", live[k])
			live[k] = live[len(live)-1]
			live = live[:len(live)-1]
		}
	}
	return b.Bytes()
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// BenchmarkReplay replays a million-operation trace; the target is under
// two seconds per replay (see the report in the package's history).
func BenchmarkReplay(b *testing.B) {
	trace := genTrace(1_000_000, 42)
	b.SetBytes(int64(len(trace)))
	b.ResetTimer()
	for b.Loop() {
		r := newReplayer(8*GiB, alloc.Config{})
		if err := r.replay(bytes.NewReader(trace), discard{}, discard{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStats measures the allocator's Stats map, the per-line cost that
// dominates a replay.
func BenchmarkStats(b *testing.B) {
	r := newReplayer(GiB, alloc.Config{})
	for b.Loop() {
		r.statsOK = false
		r.refreshStats()
	}
}

func FuzzFastParse(f *testing.F) {
	for _, s := range []string{
		`{"op":"alloc","id":"a","size":4000000,"stream":0}`,
		` { "op" : "free" , "id" : "a" } `,
		`{"op":"set_fraction","fraction":0.5e-1}`,
		`{"op":"alloc","id":"a","size":-0}`,
		`{"op":"alloc","id":"a","size":01}`,
		`{"op":"alloc","op":"free","id":"a"}`,
		`{"op":"alloc","id":"a\u0041","size":1}`,
		`{}`,
		`{"op":"alloc","id":"a","size":1,}`,
		`{"op":"set_fraction","fraction":1E+2}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		so, serr := strictParse(line)
		if serr == nil {
			// strictParse accepts only what encoding/json accepts.
			var jo op
			if err := json.Unmarshal(line, &jo); err != nil {
				t.Fatalf("strictParse accepted %q, encoding/json refuses it: %v", line, err)
			}
			if a, b := fmt.Sprint(deref(so)), fmt.Sprint(deref(jo)); a != b {
				t.Fatalf("%q: strictParse %s, encoding/json %s", line, a, b)
			}
		}
		fo, ok := fastParse(line)
		if !ok {
			return
		}
		if serr != nil {
			t.Fatalf("fastParse accepted %q, strictParse refuses it: %v", line, serr)
		}
		if a, b := fmt.Sprint(deref(fo)), fmt.Sprint(deref(so)); a != b {
			t.Fatalf("%q: fastParse %s, strictParse %s", line, a, b)
		}
	})
}

func deref(o op) []any {
	var out []any
	if o.Op != nil {
		out = append(out, "op", *o.Op)
	}
	if o.ID != nil {
		out = append(out, "id", *o.ID)
	}
	if o.Size != nil {
		out = append(out, "size", *o.Size)
	}
	if o.Stream != nil {
		out = append(out, "stream", *o.Stream)
	}
	if o.Fraction != nil {
		out = append(out, "fraction", *o.Fraction)
	}
	return out
}

// TestReplayExpandable replays with expandable_segments:True: the numbers
// are those derived from PyTorch's allocator in gpukit/alloc's
// expandable_test.go and alloctest's BatchJitter case.
func TestReplayExpandable(t *testing.T) {
	trace := `{"op":"alloc","id":"a","size":12582912}
{"op":"free","id":"a"}
{"op":"alloc","id":"b","size":22020096}
{"op":"alloc","id":"c","size":31457280}
{"op":"free","id":"b"}
{"op":"empty_cache"}
{"op":"free","id":"c"}
{"op":"empty_cache"}
`
	got, errOut := replayString(t, GiB, "expandable_segments:True", trace)
	if errOut != "" {
		t.Fatalf("stderr: %s", errOut)
	}
	check(t, got, []want{
		// 12 MiB maps one 20 MiB page; no segment is counted.
		{"", 0, map[string]int64{"reserved_bytes.all.current": 20 * MiB, "segment.all.current": 0, "num_device_alloc": 1}},
		{"", null, map[string]int64{"reserved_bytes.all.current": 20 * MiB, "inactive_split.all.current": 0}},
		// 21 MiB: the free 20 MiB page plus one more page.
		{"", 0, map[string]int64{"reserved_bytes.all.current": 40 * MiB, "num_device_alloc": 2}},
		// 30 MiB: the free 19 MiB after b plus one page: offset 21 MiB.
		{"", 21 * MiB, map[string]int64{"reserved_bytes.all.current": 60 * MiB, "num_device_alloc": 3}},
		{"", null, nil},
		// b's [0, 21) holds one whole free page, [0, 20).
		{"", null, map[string]int64{"reserved_bytes.all.current": 40 * MiB, "num_device_free": 1}},
		{"", null, nil},
		{"", null, map[string]int64{"reserved_bytes.all.current": 0, "num_device_free": 2}},
	})
}

// TestReplayOnADevice: --device replays on a gpukit device's allocator and
// answers exactly as the simulated memory of --device-memory does, as long
// as nothing runs out of memory (gpu-check compares cuda:0 with it).
func TestReplayOnADevice(t *testing.T) {
	rng := rand.New(rand.NewPCG(26, 1))
	var trace strings.Builder
	var live []int
	for i := 0; i < 400; i++ {
		switch {
		case len(live) > 0 && rng.IntN(3) == 0:
			j := rng.IntN(len(live))
			fmt.Fprintf(&trace, `{"op":"free","id":"b%d"}`+"\n", live[j])
			live = append(live[:j], live[j+1:]...)
		case i%97 == 96:
			trace.WriteString(`{"op":"empty_cache"}` + "\n")
		default:
			size := []int64{1 + rng.Int64N(4096), 1 + rng.Int64N(MiB), 1 + rng.Int64N(12*MiB), 1 + rng.Int64N(40*MiB)}[rng.IntN(4)]
			fmt.Fprintf(&trace, `{"op":"alloc","id":"b%d","size":%d}`+"\n", i, size)
			live = append(live, i)
		}
	}
	replay := func(args ...string) string {
		var out, errOut bytes.Buffer
		if code := run(append([]string{"replay"}, args...), strings.NewReader(trace.String()), &out, &errOut); code != 0 {
			t.Fatalf("memtrace %q: exit %d: %s", args, code, errOut.String())
		}
		return out.String()
	}
	want := replay("--device-memory", "80GiB")
	got := replay("--device", "sim:7")
	if got != want {
		t.Errorf("--device sim:7 and --device-memory differ:\n%s", firstDifference(got, want))
	}
	if !strings.Contains(want, `"reserved_bytes.all.peak":`) || strings.Contains(want, `"error":"oom"`) {
		t.Errorf("the trace should reserve memory and never run out:\n%.300s", want)
	}
}

func firstDifference(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range min(len(al), len(bl)) {
		if al[i] != bl[i] {
			return fmt.Sprintf("line %d:\n got %s\nwant %s", i, al[i], bl[i])
		}
	}
	return fmt.Sprintf("%d lines, want %d", len(al), len(bl))
}

func TestDeviceFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"replay", "--device", "sim:0", "--device-memory", "1GiB"}, "give one of --device-memory and --device"},
		{[]string{"replay", "--device", "gpu:0"}, "invalid device name"},
	} {
		var out, errOut bytes.Buffer
		if code := run(tc.args, strings.NewReader(""), &out, &errOut); code != exitUsage {
			t.Errorf("run(%q) = %d, want %d", tc.args, code, exitUsage)
		}
		if !strings.Contains(errOut.String(), tc.want) {
			t.Errorf("run(%q) said %q, want %q", tc.args, errOut.String(), tc.want)
		}
	}
}
