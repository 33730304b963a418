package pickle

import (
	"bytes"
	"fmt"
	"math/big"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpumem/course/gpukit/internal/pickle/pickletest"
	"github.com/gpumem/course/gpukit/internal/racetest"
)

// stored is what a StoreFunc saw of one item.
type stored struct {
	container any
	known     bool
	path      string // for messages
	steps     []Step // Path and Step
	value     any
}

func pathString(path []Step, step Step) string {
	var b strings.Builder
	for _, s := range append(path, step) {
		if s.Index < 0 {
			fmt.Fprintf(&b, "[%q]", s.Key)
		} else {
			fmt.Fprintf(&b, "[%d]", s.Index)
		}
	}
	return b.String()
}

// record decodes data storing every value as it is, and returns what the
// StoreFunc saw.
func record(t *testing.T, data []byte) (any, []stored) {
	t.Helper()
	var seen []stored
	v, err := DecodeStore(bytes.NewReader(data), DefaultLimits, func(it *Item) (any, bool, error) {
		p, steps := "", []Step(nil)
		if it.Known {
			p, steps = pathString(it.Path, it.Step), append(slices.Clone(it.Path), it.Step)
		}
		seen = append(seen, stored{it.Container, it.Known, p, steps, it.Value})
		return it.Value, true, nil
	})
	require.NoError(t, err)
	return v, seen
}

// at follows path from v.
func at(v any, path []Step) any {
	for _, s := range path {
		switch c := v.(type) {
		case *Map:
			v, _ = c.Get(s.Key)
		case *List:
			v = c.Items[s.Index]
		default:
			return nil
		}
	}
	return v
}

// A StoreFunc that stores everything as it is changes nothing, and every
// path the stack tells is where the value ends up: in each real snapshot
// (Python's pickler, protocol 4 with the memo) and in what gpukit's encoder
// writes, every path is known.
func TestDecodeStorePaths(t *testing.T) {
	racetest.Skip(t, "single-goroutine decoding of whole snapshots: make unit runs it without -race")
	marshaled, err := Marshal(Dict{
		{"segments", []any{Dict{{"address", 1 << 40}, {"blocks", []any{Dict{{"size", 512}}}}}}},
		{"device_traces", []any{[]any{Dict{{"action", "alloc"}, {"frames", []any{Dict{{"name", "f"}}}}}}, []any{}}},
		{"segment_pool_id", Tuple{0, 0}},
	})
	require.NoError(t, err)
	inputs := map[string][]byte{"marshaled": marshaled}
	for _, f := range snapshotFiles(t) {
		// Two streams, a ring that wrapped, three devices, tuples.
		switch base := filepath.Base(f); {
		case base == "streams.pickle.gz", base == "gpt-wrapped.pickle.gz",
			strings.HasPrefix(base, "Constructor-Sun__"), strings.HasPrefix(base, "Maphsge4__select_n__snapshot__5a60"):
			inputs[base] = pickletest.Gunzip(t, f)
		}
	}
	for name, data := range inputs {
		t.Run(name, func(t *testing.T) {
			want, err := Decode(bytes.NewReader(data), DefaultLimits)
			require.NoError(t, err)
			got, seen := record(t, data)
			require.True(t, reflect.DeepEqual(want, got), "DecodeStore with a StoreFunc that stores all gives what Decode gives")
			require.NotEmpty(t, seen)
			for _, s := range seen {
				require.True(t, s.known, "a value with no known path, in a pickle Python wrote")
			}
			// Every stored value is at its path in the result (a dict key
			// set twice holds the last one, which comes later).
			last := map[string]stored{}
			for _, s := range seen {
				last[s.path] = s
			}
			for p, s := range last {
				require.True(t, sameValue(s.value, at(got, s.steps)), "%s", p)
			}
		})
	}
}

// sameValue is identity for lists, dicts and sets, equality for the rest.
func sameValue(a, b any) bool {
	switch a.(type) {
	case *List, *Map, *Set:
		return a == b
	}
	return reflect.DeepEqual(a, b)
}

// Single-item batches (SETITEM and APPEND without a MARK) as Python's
// pickler writes them: {"dt": [[{"k": 5}]]}.
func TestDecodeStoreSingleItems(t *testing.T) {
	data := []byte("\x80\x04}\x94\x8c\x02dt\x94]\x94]\x94}\x94\x8c\x01k\x94K\x05saas.")
	v, seen := record(t, data)
	var paths []string
	for _, s := range seen {
		require.True(t, s.known)
		paths = append(paths, s.path)
	}
	assert.Equal(t, []string{`["dt"][0][0]["k"]`, `["dt"][0][0]`, `["dt"][0]`, `["dt"]`}, paths)
	dt, _ := v.(*Map).Get("dt")
	assert.Equal(t, int64(5), at(dt, []Step{{Index: 0}, {Index: 0}, {Key: "k", Index: -1}}))
}

// Protocol 0 builds a list before the one it goes into exists: the paths
// of [1, 2] and [3] are not known, and their items are stored as they are;
// the top-level list, made last, knows its own.
func TestDecodeStoreUnknownPaths(t *testing.T) {
	data := []byte("((I1\nI2\nl(I3\nllp0\n.")
	want, err := Decode(bytes.NewReader(data), DefaultLimits)
	require.NoError(t, err)
	got, seen := record(t, data)
	assert.Equal(t, want, got)
	var known []string
	for _, s := range seen {
		known = append(known, fmt.Sprintf("%v %s", s.known, s.path))
	}
	assert.Equal(t, []string{"false ", "false ", "false ", "true [0]", "true [1]"}, known)
}

// What a StoreFunc puts in a list's or dict's place is what a later GET of
// it gets; Forget makes such a GET an error; items left out keep their
// positions.
func TestDecodeStoreReplaceForget(t *testing.T) {
	// {"a": L, "b": L} with L = [1, 2, 3] written once, then GET 2 after
	// L is stored under "a" (SETITEMS, then SETITEM).
	data := []byte("\x80\x04}\x94(\x8c\x01a\x94]\x94(K\x01K\x02K\x03eu\x8c\x01b\x94h\x02s.")
	plain, err := Decode(bytes.NewReader(data), DefaultLimits)
	require.NoError(t, err)
	a, _ := plain.(*Map).Get("a")
	b, _ := plain.(*Map).Get("b")
	require.Same(t, a, b)

	var indices []int64
	v, err := DecodeStore(bytes.NewReader(data), DefaultLimits, func(it *Item) (any, bool, error) {
		if _, ok := it.Container.(*List); ok && it.Known {
			indices = append(indices, it.Step.Index)
			return it.Value, it.Step.Index != 1, nil // leave out the second item
		}
		if it.Known && len(it.Path) == 0 && it.Step.Key == "a" {
			return fmt.Sprintf("a list of %d", len(it.Value.(*List).Items)), true, nil
		}
		return it.Value, true, nil
	})
	require.NoError(t, err)
	assert.Equal(t, []int64{0, 1, 2}, indices)
	a, _ = v.(*Map).Get("a")
	b, _ = v.(*Map).Get("b")
	assert.Equal(t, "a list of 2", a)
	assert.Equal(t, "a list of 2", b, "the GET after the replacement gets the replacement")

	_, err = DecodeStore(bytes.NewReader(data), DefaultLimits, func(it *Item) (any, bool, error) {
		if it.Known && len(it.Path) == 0 && it.Step.Key == "a" {
			return Forget, true, nil
		}
		return it.Value, true, nil
	})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "the memo entry 2 is a value the reader left out")
	assert.True(t, strings.HasPrefix(err.Error(), "pickle: "))

	// A GET in the same batch comes before L is stored: it gets L itself
	// (store.go: the decoder does not look further for the value).
	sameBatch := []byte("\x80\x04}\x94(\x8c\x01a\x94]\x94(K\x01K\x02K\x03e\x8c\x01b\x94h\x02u.")
	v, err = DecodeStore(bytes.NewReader(sameBatch), DefaultLimits, func(it *Item) (any, bool, error) {
		if it.Known && len(it.Path) == 0 && it.Step.Key == "a" {
			return "folded", true, nil
		}
		return it.Value, true, nil
	})
	require.NoError(t, err)
	a, _ = v.(*Map).Get("a")
	b, _ = v.(*Map).Get("b")
	assert.Equal(t, "folded", a)
	assert.IsType(t, &List{}, b)

	_, err = DecodeStore(bytes.NewReader(data), DefaultLimits, func(it *Item) (any, bool, error) {
		return nil, false, fmt.Errorf("pickle: the caller stops at %v", it.Value)
	})
	assert.ErrorContains(t, err, "pickle: the caller stops at 1 (at byte")
}

// Every hostile pickle is refused the same way with a StoreFunc.
func TestDecodeStoreRefusesHostilePickles(t *testing.T) {
	small := Limits{MaxInput: 1 << 20, MaxValues: 1000, MaxString: 1 << 16}
	for _, data := range []string{
		"cos\nsystem\n(S'echo hi'\ntR.", "\x80\x04\x8c\x02os\x8c\x06system\x93.", "\x80\x02)R.",
		"\x80\x04\x8d\x00\x00\x00\x00\x00\x00\x00\x80.", "\x80\x04\x8d\x00\xe4\x0bT\x02\x00\x00\x00x.",
		"\x80\x04X\x00\x10\x00\x00abc", "\x80\x04]\x94(K\x01", "\x80\x04K\x01.junk", "K\x01K\x02.", "a.",
		"h\x05.", "}]K\x01s.", "}K\x01a.", "\xff.", "(" + strings.Repeat("K\x01", 2000) + "l.", "}(K\x01u.",
		string(pickletest.Nested(100000)),
	} {
		lim := small
		if len(data) > 1<<16 {
			lim = DefaultLimits
		}
		want, wantErr := Decode(strings.NewReader(data), lim)
		got, err := DecodeStore(strings.NewReader(data), lim, func(it *Item) (any, bool, error) { return it.Value, true, nil })
		if wantErr != nil {
			require.Error(t, err)
			assert.Equal(t, wantErr.Error(), err.Error())
			continue
		}
		require.NoError(t, err) // deep nesting: a pickle, not a snapshot
		assert.True(t, reflect.DeepEqual(want, got))
	}
}

// The memo stays the size of its slots: a list PUT a million times into
// slot 0 takes one entry, and lists a StoreFunc replaces give theirs back.
func TestMemoStaysSmall(t *testing.T) {
	var b bytes.Buffer
	b.WriteString("\x80\x02]")
	for range 1 << 20 {
		b.WriteString("q\x00")
	}
	b.WriteString(".")
	d := newDecoder(bytes.NewReader(b.Bytes()), DefaultLimits, func(it *Item) (any, bool, error) { return it.Value, true, nil })
	_, err := d.run()
	require.NoError(t, err)
	assert.LessOrEqual(t, len(d.memo.vals), 3)

	// [[1], [1], ...] in batches of 1000, as Python writes it: each inner
	// list memoized, and replaced by one string when stored.
	b.Reset()
	b.WriteString("\x80\x04]\x94")
	for range 1 << 6 {
		b.WriteString("(")
		for range 1 << 10 {
			b.WriteString("]\x94K\x01a")
		}
		b.WriteString("e")
	}
	b.WriteString(".")
	d = newDecoder(bytes.NewReader(b.Bytes()), DefaultLimits, func(it *Item) (any, bool, error) {
		if _, ok := it.Value.(*List); ok {
			return "folded", true, nil
		}
		return it.Value, true, nil
	})
	v, err := d.run()
	require.NoError(t, err)
	assert.Len(t, v.(*List).Items, 1<<16)
	assert.Equal(t, int64(1<<16+1), d.memo.count())
	assert.Less(t, len(d.memo.vals), 1100, "the replaced lists gave their entries back, which the next batch took")
	assert.Len(t, d.memoOf, 1, "only the outer list is still in the memo")
}

// LONG1 up to 8 bytes is read without a big.Int, as the same value as
// with one.
func TestLongValue(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 10000 {
		b := make([]byte, 1+r.IntN(12))
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		if r.IntN(4) == 0 {
			b[len(b)-1] |= 0x80
		}
		z := bigLong(b) // beyond 8 bytes, decode_test's big values check it
		got := longValue(b)
		if z.IsInt64() {
			require.Equal(t, z.Int64(), got, "%x", b)
		} else {
			require.Equal(t, 0, z.Cmp(got.(*big.Int)), "%x", b)
		}
	}
}

// A dict past smallMap keys is indexed; Get and overwrites behave alike
// below and above.
func TestMapIndex(t *testing.T) {
	for _, n := range []int{3, smallMap, smallMap + 1, 100} {
		m := &Map{}
		for i := range n {
			require.NoError(t, m.Set(int64(i), i))
			require.NoError(t, m.Set(Tuple{int64(i), "t"}, -i))
		}
		require.NoError(t, m.Set(int64(1), "again"))
		assert.Equal(t, 2*n, m.Len())
		for i := range n {
			want := any(i)
			if i == 1 {
				want = "again"
			}
			got, ok := m.Get(i) // an int finds the int64
			assert.True(t, ok)
			assert.Equal(t, want, got)
			got, ok = m.Get(Tuple{int64(i), "t"})
			assert.True(t, ok)
			assert.Equal(t, -i, got)
		}
		_, ok := m.Get(int64(n))
		assert.False(t, ok)
		_, ok = m.Get(float64(1))
		assert.False(t, ok, "1.0 is another key than 1, as before")
		assert.Error(t, m.Set(&List{}, 1))
	}
}
