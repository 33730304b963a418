package pickle

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpumem/course/gpukit/internal/pickle/pickletest"
	"github.com/gpumem/course/gpukit/internal/racetest"
)

func TestDecodeRoundTrip(t *testing.T) {
	huge, _ := new(big.Int).SetString("-123456789012345678901234567890", 10)
	in := Dict{
		{"none", nil}, {"t", true}, {"f", false},
		{"small", 7}, {"neg", -300}, {"int32", int64(-1) << 31}, {"int64", int64(math.MaxInt64)}, {"huge", huge},
		{"float", 2.5}, {"str", "héllo"}, {"list", []any{1, "two", []any{3.0}}}, {"tuple", Tuple{1, 2, 3, 4}},
		{"nested", Dict{{"a", Dict{}}, {"b", []any{}}}},
	}
	data, err := Marshal(in)
	require.NoError(t, err)
	v, err := Decode(bytes.NewReader(data), DefaultLimits)
	require.NoError(t, err)
	m, ok := v.(*Map)
	require.True(t, ok)
	want := map[string]any{
		"none": nil, "t": true, "f": false, "small": int64(7), "neg": int64(-300), "int32": int64(-1) << 31,
		"int64": int64(math.MaxInt64), "float": 2.5, "str": "héllo",
	}
	for k, w := range want {
		got, ok := m.Get(k)
		require.True(t, ok, k)
		assert.Equal(t, w, got, k)
	}
	h, _ := m.Get("huge")
	assert.Equal(t, 0, huge.Cmp(h.(*big.Int)))
	l, _ := m.Get("list")
	assert.Equal(t, []any{int64(1), "two", &List{Items: []any{2.5 + 0.5}}}, l.(*List).Items)
	tu, _ := m.Get("tuple")
	assert.Equal(t, Tuple{int64(1), int64(2), int64(3), int64(4)}, tu)
	assert.Equal(t, []any{"none", "t", "f", "small", "neg", "int32", "int64", "huge", "float", "str", "list", "tuple", "nested"}, m.Keys, "insertion order")
}

func TestDecodeRefusesBadArguments(t *testing.T) {
	_, err := Decode(nil, DefaultLimits)
	assert.EqualError(t, err, "pickle: Decode of a nil reader")
	_, err = Decode(strings.NewReader("N."), Limits{})
	assert.ErrorContains(t, err, "pickle: limits")
}

// Hand-written pickles: the memo, protocol 0's text forms, sets, MARKs.
func TestDecodeOpcodes(t *testing.T) {
	cases := []struct {
		name string
		data string
		want any
	}{
		{"memo shares a list", "\x80\x04]\x94(K\x01h\x00e.", nil}, // a list that holds itself: checked below
		{"protocol 0", "(lp0\nI1\naF2.5\naS'x'\np1\nag1\naVab\np2\na.", &List{Items: []any{int64(1), 2.5, "x", "x", "ab"}}},
		{"int forms", "(I00\nI01\nL12345678901234567890L\nJ\xff\xff\xff\xffM\xff\xff\x8a\x01\xfft.",
			Tuple{false, true, func() any { z, _ := new(big.Int).SetString("12345678901234567890", 10); return z }(), int64(-1), int64(65535), int64(-1)}},
		{"sets", "\x80\x04\x8f(K\x01K\x02\x90(K\x03\x91\x86.", Tuple{&Set{Items: []any{int64(1), int64(2)}}, &Set{Items: []any{int64(3)}}}},
		{"dict and tuple keys", "}(K\x01K\x02\x86K\x03u.", nil},
		{"POP and DUP", "(K\x01K\x020K\x032t.", Tuple{int64(1), int64(3), int64(3)}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v, err := Decode(strings.NewReader(c.data), DefaultLimits)
			require.NoError(t, err)
			switch c.name {
			case "memo shares a list":
				l := v.(*List)
				require.Len(t, l.Items, 2)
				assert.Same(t, l, l.Items[1], "GET returns the memoized list itself")
			case "dict and tuple keys":
				got, ok := v.(*Map).Get(Tuple{int64(1), int64(2)})
				require.True(t, ok)
				assert.Equal(t, int64(3), got)
			default:
				assert.Equal(t, c.want, v)
			}
		})
	}
}

func TestDecodeRefusesHostilePickles(t *testing.T) {
	small := Limits{MaxInput: 1 << 20, MaxValues: 1000, MaxString: 1 << 16}
	cases := []struct {
		name, data, want string
	}{
		{"GLOBAL os system", "cos\nsystem\n(S'echo hi'\ntR.", "GLOBAL os system"},
		{"STACK_GLOBAL", "\x80\x04\x8c\x02os\x8c\x06system\x93.", "STACK_GLOBAL"},
		{"REDUCE", "\x80\x02)R.", "REDUCE"},
		{"BUILD", "\x80\x02}b.", "BUILD"},
		{"a length of 2^63", "\x80\x04\x8d\x00\x00\x00\x00\x00\x00\x00\x80.", "bytes, more than"},
		{"a 10 GB string", "\x80\x04\x8d\x00\xe4\x0bT\x02\x00\x00\x00x.", "bytes, more than"},
		{"a 10 GB bytes value", "\x80\x04\x8e\x00\xe4\x0bT\x02\x00\x00\x00x.", "bytes, more than"},
		{"a string longer than the file", "\x80\x04X\x00\x10\x00\x00abc", "truncated"},
		{"truncated", "\x80\x04]\x94(K\x01", "truncated"},
		{"no STOP", "\x80\x04K\x01", "truncated"},
		{"trailing garbage", "\x80\x04K\x01.junk", "bytes after the pickle's end"},
		{"values left", "K\x01K\x02.", "values left on the stack"},
		{"empty stack", "a.", "empty stack"},
		{"memo miss", "h\x05.", "the memo has no entry 5"},
		{"unhashable key", "}]K\x01s.", "not hashable"},
		{"APPEND to a dict", "}K\x01a.", "APPEND to a dict"},
		{"unknown opcode", "\xff.", "unknown opcode 0xff"},
		{"protocol 9", "\x80\x09N.", "protocol 9"},
		{"too many values", "(" + strings.Repeat("K\x01", 2000) + "l.", "more than 1000 values"},
		{"SETITEMS without pairs", "}(K\x01u.", "not key and value pairs"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Decode(strings.NewReader(c.data), small)
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
			assert.True(t, strings.HasPrefix(err.Error(), "pickle: "), err.Error())
			if strings.Contains(c.name, "GLOBAL") || c.name == "REDUCE" || c.name == "BUILD" {
				assert.True(t, errors.Is(err, ErrObject))
			}
		})
	}
}

// snapshotFiles are real PyTorch memory snapshots: the course's own
// (recorded on an H200 by scripts/record_snapshots.py) and, where ../shared
// is beside the checkout, those of public repositories.
func snapshotFiles(t *testing.T) []string {
	files, _ := filepath.Glob("../../cmd/memtrace/testdata/h200/*.pickle.gz")
	shared, _ := filepath.Glob("../../../../shared/realsnap/*.pickle.gz")
	if len(shared) == 0 {
		t.Log("../shared/realsnap is not beside the checkout: only the course's own snapshots are read")
	}
	files = append(files, shared...)
	require.NotEmpty(t, files)
	return files
}

// Every real snapshot decodes, to a dict with PyTorch's two keys.
func TestDecodeSnapshots(t *testing.T) {
	racetest.Skip(t, "single-goroutine decoding of whole snapshots: make unit runs it without -race")
	for _, f := range snapshotFiles(t) {
		v, err := Decode(bytes.NewReader(pickletest.Gunzip(t, f)), DefaultLimits)
		require.NoError(t, err, f)
		m, ok := v.(*Map)
		require.True(t, ok, f)
		for _, key := range []string{"segments", "device_traces"} {
			_, ok := m.Get(key)
			assert.True(t, ok, "%s has no %q", f, key)
		}
	}
}

// The decoder against Python's own pickle module, value by value, on three
// of them (each comparison goes through megabytes of JSON).
func TestDecodeMatchesPython(t *testing.T) {
	racetest.Skip(t, "single-goroutine decoding of whole snapshots: make unit runs it without -race")
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3 to compare with")
	}
	var files []string
	for _, f := range snapshotFiles(t) {
		base := filepath.Base(f)
		if base == "gpt-wrapped.pickle.gz" || base == "streams-expandable.pickle.gz" || strings.HasPrefix(base, "silmont2000__assignment2-systems__mem_sn") {
			files = append(files, f)
		}
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			v, err := Decode(bytes.NewReader(pickletest.Gunzip(t, f)), DefaultLimits)
			require.NoError(t, err)
			cmd := exec.Command(python, "-c", `import gzip, json, pickle, sys
def plain(v):
    if isinstance(v, dict): return {"dict": [[plain(k), plain(x)] for k, x in v.items()]}
    if isinstance(v, (list, tuple)): return [plain(x) for x in v]
    if isinstance(v, float): return {"float": repr(v)}
    if isinstance(v, int) and not isinstance(v, bool): return {"int": str(v)}
    return v
json.dump(plain(pickle.loads(gzip.open(sys.argv[1]).read())), sys.stdout)`, f)
			want, err := cmd.Output()
			require.NoError(t, err)
			got, err := json.Marshal(plainJSON(v))
			require.NoError(t, err)
			// Compared as decoded JSON; on a difference, its path (a diff
			// of megabytes of JSON would take minutes).
			var w, g any
			require.NoError(t, json.Unmarshal(want, &w))
			require.NoError(t, json.Unmarshal(got, &g))
			if path := firstDifference(w, g, "$"); path != "" {
				t.Fatalf("the decoded value differs from Python's at %s", path)
			}
		})
	}
}

// plainJSON is v in the form the test's Python writes.
func plainJSON(v any) any {
	switch x := v.(type) {
	case *Map:
		pairs := make([]any, len(x.Keys))
		for i := range x.Keys {
			pairs[i] = []any{plainJSON(x.Keys[i]), plainJSON(x.Values[i])}
		}
		return map[string]any{"dict": pairs}
	case *List:
		out := make([]any, len(x.Items))
		for i, item := range x.Items {
			out[i] = plainJSON(item)
		}
		return out
	case Tuple:
		return plainJSON(&List{Items: x})
	case float64:
		return map[string]any{"float": pyRepr(x)}
	case int64:
		return map[string]any{"int": big.NewInt(x).String()}
	case *big.Int:
		return map[string]any{"int": x.String()}
	}
	return v
}

// pyRepr is Python's repr of a float: the shortest digits, positional from
// 1e-4 up to 1e16 (with ".0" for a whole number), else an exponent.
func pyRepr(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	case math.IsNaN(f):
		return "nan"
	}
	e := strconv.FormatFloat(f, 'e', -1, 64)
	exp, _ := strconv.Atoi(e[strings.IndexByte(e, 'e')+1:])
	if exp < -4 || exp >= 16 {
		return e
	}
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.ContainsAny(s, ".") {
		s += ".0"
	}
	return s
}

func FuzzDecode(f *testing.F) {
	data, _ := Marshal(Dict{{"segments", []any{Dict{{"address", 1 << 40}, {"blocks", []any{}}}}}, {"f", 2.5}})
	f.Add(data)
	f.Add([]byte("\x80\x04]\x94(K\x01h\x00e."))
	f.Add([]byte("(lp0\nI1\naF2.5\naS'x'\np1\nag1\na."))
	f.Add([]byte("\x80\x04\x8f(K\x01K\x02\x90(K\x03\x91\x86."))
	f.Add([]byte("cos\nsystem\n(S'echo hi'\ntR."))
	f.Add([]byte("\x80\x04}\x94\x8c\x02dt\x94]\x94]\x94}\x94\x8c\x01k\x94K\x05saas."))
	f.Add([]byte("\x80\x04}\x94(\x8c\x01a\x94]\x94(K\x01K\x02K\x03eu\x8c\x01b\x94h\x02s."))
	lim := Limits{MaxInput: 1 << 20, MaxValues: 1 << 16, MaxString: 1 << 16}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := Decode(bytes.NewReader(data), lim)
		if err == nil && v == nil && !bytes.Contains(data, []byte("N")) {
			// None is the only value that decodes to nil.
			t.Fatalf("nil without an N opcode: %q", data)
		}
		if err != nil && !strings.HasPrefix(err.Error(), "pickle: ") {
			t.Fatalf("error without the package's prefix: %v", err)
		}
		// A StoreFunc that stores everything changes nothing.
		all, allErr := DecodeStore(bytes.NewReader(data), lim, func(it *Item) (any, bool, error) {
			if !it.Known && it.Path != nil {
				t.Fatalf("a path that is not known")
			}
			return it.Value, true, nil
		})
		if (err == nil) != (allErr == nil) || (err != nil && err.Error() != allErr.Error()) {
			t.Fatalf("Decode: %v; DecodeStore storing everything: %v", err, allErr)
		}
		if err == nil && !reflect.DeepEqual(v, all) {
			t.Fatalf("DecodeStore storing everything decoded another value")
		}
		// One that folds lists, leaves out dict values and forgets some
		// items: whatever it does, no panic, and errors keep the prefix.
		_, err = DecodeStore(bytes.NewReader(data), lim, func(it *Item) (any, bool, error) {
			switch {
			case it.Step.Index%3 == 1:
				return Forget, false, nil
			case it.Step.Index < 0 && len(it.Path)%2 == 1:
				return it.Value, false, nil
			}
			if _, ok := it.Value.(*List); ok {
				return "folded", true, nil
			}
			return it.Value, true, nil
		})
		if err != nil && !strings.HasPrefix(err.Error(), "pickle: ") {
			t.Fatalf("error without the package's prefix: %v", err)
		}
	})
}

// firstDifference is the path of the first place a and b differ, or "".
func firstDifference(a, b any, path string) string {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return fmt.Sprintf("%s (%v against %v)", path, brief(a), brief(b))
		}
		for k, v := range x {
			if d := firstDifference(v, y[k], path+"."+k); d != "" {
				return d
			}
		}
		return ""
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return fmt.Sprintf("%s (%v against %v)", path, brief(a), brief(b))
		}
		for i := range x {
			if d := firstDifference(x[i], y[i], fmt.Sprintf("%s[%d]", path, i)); d != "" {
				return d
			}
		}
		return ""
	}
	if a != b {
		return fmt.Sprintf("%s (%v against %v)", path, brief(a), brief(b))
	}
	return ""
}

func brief(v any) string {
	s := fmt.Sprint(v)
	if len(s) > 80 {
		s = s[:80] + "..."
	}
	return s
}
