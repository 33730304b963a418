package safetensors_test

import (
	"encoding/binary"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpumem/course/gpukit/nn/safetensors"
	"github.com/gpumem/course/gpukit/tensor"
)

// file builds a safetensors file from a header string and data, as the
// reference writer lays it out.
func file(header string, data []byte) []byte {
	out := binary.LittleEndian.AppendUint64(nil, uint64(len(header)))
	return append(append(out, header...), data...)
}

func f32bytes(vs ...float32) []byte {
	var b []byte
	for _, v := range vs {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
	}
	return b
}

// A file as safetensors.torch.save_file writes it (compact JSON, metadata
// {"format": "pt"}) is read back with its shapes, dtypes and bytes.
func TestReadReferenceLayout(t *testing.T) {
	header := `{"__metadata__":{"format":"pt"},"b":{"dtype":"I64","shape":[],"data_offsets":[8,16]},"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`
	data := append(f32bytes(1.5, -2), binary.LittleEndian.AppendUint64(nil, 7)...)
	path := filepath.Join(t.TempDir(), "ref.safetensors")
	require.NoError(t, os.WriteFile(path, file(header, data), 0o644))
	f, err := safetensors.Open(path)
	require.NoError(t, err)
	defer f.Close()
	assert.Equal(t, map[string]string{"format": "pt"}, f.Metadata)
	require.Len(t, f.Tensors, 2)
	assert.Equal(t, safetensors.Info{Name: "w", Dtype: "F32", Shape: []int{2}, Begin: 0, End: 8}, f.Tensors[0])
	assert.Equal(t, safetensors.Info{Name: "b", Dtype: "I64", Shape: []int{}, Begin: 8, End: 16}, f.Tensors[1])
	w, err := f.Load(f.Tensors[0])
	require.NoError(t, err)
	assert.Equal(t, []float64{1.5, -2}, w.Float64s())
	b, err := f.Load(f.Tensors[1])
	require.NoError(t, err)
	assert.Equal(t, 7.0, b.Item())
}

func TestWriteRoundTripAndLayout(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.safetensors")
	x := tensor.FromSlice([]float64{1, 2, 3, 4, 5, 6}, []int{2, 3}, tensor.OnHost(false)).T() // non-contiguous
	h := tensor.FromSlice([]float32{0.5, 0.25}, []int{2}, tensor.OnHost(false), tensor.Float16)
	var ts []safetensors.Tensor
	for name, tt := range map[string]*tensor.Tensor{"x": x, "h": h} {
		st, err := safetensors.FromTensor(name, tt)
		require.NoError(t, err)
		ts = append(ts, st)
	}
	require.NoError(t, safetensors.Write(path, ts, map[string]string{"k": "v"}))
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	n := binary.LittleEndian.Uint64(raw)
	assert.Zero(t, (8+n)%8, "the data section starts 8-byte aligned")
	assert.True(t, strings.HasPrefix(string(raw[8:]), "{"))

	f, err := safetensors.Open(path)
	require.NoError(t, err)
	defer f.Close()
	assert.Equal(t, "v", f.Metadata["k"])
	xi, ok := f.Lookup("x")
	require.True(t, ok)
	assert.Equal(t, "F64", xi.Dtype)
	assert.Equal(t, []int{3, 2}, xi.Shape)
	xl, err := f.Load(xi)
	require.NoError(t, err)
	assert.Equal(t, []float64{1, 4, 2, 5, 3, 6}, xl.Float64s())
	hi, _ := f.Lookup("h")
	assert.Equal(t, "F16", hi.Dtype)
	hl, err := f.Load(hi)
	require.NoError(t, err)
	assert.Equal(t, []float64{0.5, 0.25}, hl.Float64s())
}

func TestCorruptFiles(t *testing.T) {
	good := `{"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`
	data := f32bytes(1, 2)
	tests := []struct {
		name string
		raw  []byte
		msg  string
	}{
		{"empty", nil, "too short for the 8-byte header length"},
		{"truncated length", []byte{1, 2, 3}, "too short"},
		{"huge header", binary.LittleEndian.AppendUint64(nil, 1<<40), "larger than the 100000000 bytes allowed"},
		{"header past end", file(good, data)[:30], "runs past the end"},
		{"truncated data", file(good, data)[:len(file(good, data))-3], "data section is 5 bytes, the header describes 8 (truncated?)"},
		{"trailing bytes", file(good, append(data, 0)), "1 bytes after the last tensor"},
		{"not json", file("{not json}", nil), "header is not valid JSON"},
		{"not object", file(`[1]`, nil), "header is not a JSON object"},
		{"dtype", file(`{"w":{"dtype":"F8","shape":[2],"data_offsets":[0,2]}}`, []byte{0, 0}), `dtype "F8" is not one of`},
		{"offsets size", file(`{"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}}`, data), "hold 8 bytes, but F32 [3] needs 12"},
		{"gap", file(`{"w":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, data), "leave a gap"},
		{"overlap", file(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, data), "leave an overlap"},
		{"negative shape", file(`{"w":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}}`, data), "negative dimension"},
		{"overflow", file(`{"w":{"dtype":"F64","shape":[4611686018427387904,4],"data_offsets":[0,8]}}`, data), "overflows"},
		{"metadata", file(`{"__metadata__":{"a":1}}`, nil), "__metadata__ must map strings to strings"},
		{"unknown field", file(`{"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8],"x":1}}`, data), `unknown field "x"`},
		{"missing shape", file(`{"w":{"dtype":"F32","data_offsets":[0,8]}}`, data), "shape is missing"},
		{"offsets arity", file(`{"w":{"dtype":"F32","shape":[2],"data_offsets":[8]}}`, data), "data_offsets must be [begin, end]"},
	}
	dir := t.TempDir()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "_")+".safetensors")
			require.NoError(t, os.WriteFile(path, tc.raw, 0o644))
			_, err := safetensors.Open(path)
			require.Error(t, err)
			assert.Contains(t, err.Error(), "safetensors: "+path+": ")
			assert.Contains(t, err.Error(), tc.msg)
		})
	}
	_, err := safetensors.Open(filepath.Join(dir, "absent.safetensors"))
	assert.ErrorContains(t, err, "absent.safetensors")
}

func TestWriteRefusesBadTensors(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.safetensors")
	require.NoError(t, os.WriteFile(path, []byte("keep me"), 0o644))
	for _, ts := range [][]safetensors.Tensor{
		{{Name: "a", Dtype: "F32", Shape: []int{2}, Data: make([]byte, 7)}},
		{{Name: "a", Dtype: "F32", Shape: []int{1}, Data: make([]byte, 4)}, {Name: "a", Dtype: "F32", Shape: []int{1}, Data: make([]byte, 4)}},
		{{Name: "__metadata__", Dtype: "F32", Shape: []int{1}, Data: make([]byte, 4)}},
		{{Name: "a", Dtype: "Q4", Shape: []int{1}, Data: make([]byte, 4)}},
	} {
		require.Error(t, safetensors.Write(path, ts, nil))
	}
	raw, _ := os.ReadFile(path)
	assert.Equal(t, "keep me", string(raw), "a refused write leaves the old file")
}

// FuzzParseHeader feeds arbitrary headers to the parser: it must return
// an error or a header whose tensors tile [0, end) in order, never panic.
func FuzzParseHeader(f *testing.F) {
	f.Add([]byte(`{"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`))
	f.Add([]byte(`{"__metadata__":{"format":"pt"},"a":{"dtype":"BOOL","shape":[0],"data_offsets":[0,0]},"b":{"dtype":"BF16","shape":[1,3],"data_offsets":[0,6]}}`))
	f.Add([]byte(`{"w":{"dtype":"F64","shape":[9223372036854775807,2],"data_offsets":[0,16]}}`))
	f.Fuzz(func(t *testing.T, header []byte) {
		h, err := safetensors.ParseHeader(header)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "safetensors: ") {
				t.Fatalf("an error without the package's prefix: %v", err)
			}
			return
		}
		var at int64
		for _, ti := range h.Tensors {
			if ti.Begin != at || ti.End-ti.Begin != ti.Numel()*int64(safetensors.Dtypes[ti.Dtype]) {
				t.Fatalf("accepted a header that does not tile the data: %+v", h.Tensors)
			}
			at = ti.End
		}
	})
}

// FuzzOpen writes arbitrary bytes as a file and opens it: an error or a
// file whose tensors can all be loaded.
func FuzzOpen(f *testing.F) {
	f.Add(file(`{"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`, f32bytes(1, 2)))
	f.Add(file(`{"w":{"dtype":"I32","shape":[1],"data_offsets":[0,4]}}`, f32bytes(1)))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, raw []byte) {
		path := filepath.Join(dir, "f.safetensors")
		if err := os.WriteFile(path, raw, 0o644); err != nil {
			t.Fatal(err)
		}
		sf, err := safetensors.Open(path)
		if err != nil {
			return
		}
		defer sf.Close()
		for _, ti := range sf.Tensors {
			if ti.Numel() > 1<<20 {
				continue
			}
			x, err := sf.Load(ti)
			if err != nil {
				t.Fatalf("validated file fails to load %s: %v", ti.Name, err)
			}
			x.Release()
		}
	})
}

// A tensor large enough to be read in several pieces at once comes back
// byte for byte; a file cut short after Open is refused, naming the file,
// and no tensor is returned.
func TestLoadLargeAndTruncatedAfterOpen(t *testing.T) {
	const n = 40 << 20 // bytes: several read chunks
	data := make([]byte, n)
	for i := range data {
		data[i] = byte(i*7 + i>>12)
	}
	path := filepath.Join(t.TempDir(), "large.safetensors")
	require.NoError(t, safetensors.Write(path, []safetensors.Tensor{{Name: "w", Dtype: "F32", Shape: []int{n / 4}, Data: data}}, nil))
	f, err := safetensors.Open(path)
	require.NoError(t, err)
	defer f.Close()
	x, err := f.Load(f.Tensors[0])
	require.NoError(t, err)
	assert.True(t, string(data) == string(x.Storage().Bytes()[:n]), "loaded bytes differ from the file's")
	x.Release()

	require.NoError(t, os.Truncate(path, int64(n/2)))
	x, err = f.Load(f.Tensors[0])
	require.Error(t, err)
	assert.Nil(t, x)
	assert.ErrorContains(t, err, path)
	assert.ErrorContains(t, err, "reading w: unexpected EOF")
}

// BenchmarkLoad256MiB reads a 256 MiB tensor into host memory through
// Open and Load; BenchmarkIOCopy256MiB copies the same file to
// io.Discard. The target is Load at ≥ 0.5× io.Copy's throughput.
func BenchmarkLoad256MiB(b *testing.B) {
	path := bigFile(b)
	b.SetBytes(256 << 20)
	for b.Loop() {
		f, err := safetensors.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		x, err := f.Load(f.Tensors[0])
		if err != nil {
			b.Fatal(err)
		}
		x.Release()
		f.Close()
	}
}

func BenchmarkIOCopy256MiB(b *testing.B) {
	path := bigFile(b)
	b.SetBytes(256 << 20)
	for b.Loop() {
		f, err := os.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := io.Copy(io.Discard, f); err != nil {
			b.Fatal(err)
		}
		f.Close()
	}
}

var bigPath string

func bigFile(b *testing.B) string {
	b.Helper()
	if bigPath != "" {
		return bigPath
	}
	dir, err := os.MkdirTemp("", "safetensors-bench")
	if err != nil {
		b.Fatal(err)
	}
	bigPath = filepath.Join(dir, "big.safetensors")
	data := make([]byte, 256<<20)
	for i := range data {
		data[i] = byte(i)
	}
	ts := []safetensors.Tensor{{Name: "w", Dtype: "F32", Shape: []int{64 << 20}, Data: data}}
	if err := safetensors.Write(bigPath, ts, nil); err != nil {
		b.Fatal(err)
	}
	return bigPath
}

func TestMain(m *testing.M) {
	code := m.Run()
	if bigPath != "" {
		os.RemoveAll(filepath.Dir(bigPath))
	}
	os.Exit(code)
}
