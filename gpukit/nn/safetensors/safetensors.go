// Package safetensors reads and writes the .safetensors format in which
// PyTorch users exchange weights (huggingface/safetensors): an 8-byte
// little-endian header length N, N bytes of JSON
//
//	{"fc.weight": {"dtype": "F32", "shape": [4, 3], "data_offsets": [0, 48]},
//	 "__metadata__": {"format": "pt"}}
//
// (padded with spaces), then the tensors' raw little-endian bytes, each at
// its data offsets counted from the end of the header. The offsets must
// tile the data section exactly: no gap, no overlap, nothing after.
//
// Open validates all of that before anything is read, so a corrupt or
// truncated file is refused with an error that names the file and what is
// wrong. Write goes through internal/atomicfile: a crash never leaves half
// a file where a good one was.
package safetensors

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/gpumem/course/internal/atomicfile"
)

// MaxHeader is the largest header accepted (the reference implementation's
// limit, 100 MB).
const MaxHeader = 100_000_000

// Dtypes maps the format's dtype names to their sizes in bytes.
var Dtypes = map[string]int{"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "BOOL": 1}

// Info describes one tensor of a file.
type Info struct {
	Name       string
	Dtype      string // "F32", "F16", "BF16", "F64", "I64", "I32", "BOOL"
	Shape      []int
	Begin, End int64 // byte offsets in the data section
}

// Numel is the number of elements.
func (i Info) Numel() int64 {
	n := int64(1)
	for _, s := range i.Shape {
		n *= int64(s)
	}
	return n
}

// File is an open, validated safetensors file.
type File struct {
	Path     string
	Metadata map[string]string
	Tensors  []Info // in the order of their data
	data     int64  // offset of the data section in the file
	f        *os.File
}

// Open reads and validates path's header. Close the file when done.
func Open(path string) (*File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	sf, err := readHeader(f, st.Size())
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("safetensors: %s: %w", path, err)
	}
	sf.Path, sf.f = path, f
	return sf, nil
}

// Close closes the file.
func (f *File) Close() error { return f.f.Close() }

// Lookup returns the tensor called name.
func (f *File) Lookup(name string) (Info, bool) {
	for _, t := range f.Tensors {
		if t.Name == name {
			return t, true
		}
	}
	return Info{}, false
}

// ReadInto reads tensor info's bytes into dst, which must have exactly
// End-Begin bytes. The bytes go straight from the file into dst, in a few
// large reads that run on several goroutines when dst is large: most of
// the time of reading into fresh memory is the kernel faulting its pages
// in, one page at a time per thread.
func (f *File) ReadInto(info Info, dst []byte) error {
	if int64(len(dst)) != info.End-info.Begin {
		return fmt.Errorf("safetensors: %s: %s holds %d bytes, the destination %d", f.Path, info.Name, info.End-info.Begin, len(dst))
	}
	if err := readAtParallel(f.f, dst, f.data+info.Begin); err != nil {
		return fmt.Errorf("safetensors: %s: reading %s: %w", f.Path, info.Name, err)
	}
	return nil
}

// readChunk is the smallest piece of a read worth its own goroutine.
const readChunk = 8 << 20

// readAtParallel fills dst from r at off with one ReadAt per worker
// (io.ReaderAt allows concurrent calls; os.File uses pread) and returns
// the first error, io.ErrUnexpectedEOF for a short read.
func readAtParallel(r io.ReaderAt, dst []byte, off int64) error {
	workers := min(runtime.GOMAXPROCS(0), len(dst)/readChunk)
	if workers <= 1 {
		return readFull(r, dst, off)
	}
	chunk := (len(dst) + workers - 1) / workers
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		lo := w * chunk
		hi := min(lo+chunk, len(dst))
		wg.Go(func() { errs[w] = readFull(r, dst[lo:hi], off+int64(lo)) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func readFull(r io.ReaderAt, dst []byte, off int64) error {
	n, err := r.ReadAt(dst, off)
	if n == len(dst) {
		return nil
	}
	if err == nil || err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return err
}

// readHeader parses and validates the header of a file of size bytes.
func readHeader(r io.Reader, size int64) (*File, error) {
	if size < 8 {
		return nil, fmt.Errorf("file is %d bytes, too short for the 8-byte header length (truncated?)", size)
	}
	var lenBuf [8]byte
	if _, err := io.ReadFull(r, lenBuf[:]); err != nil {
		return nil, fmt.Errorf("reading the header length: %w", err)
	}
	n := binary.LittleEndian.Uint64(lenBuf[:])
	if n > MaxHeader {
		return nil, fmt.Errorf("header length %d is larger than the %d bytes allowed (not a safetensors file?)", n, MaxHeader)
	}
	if int64(n) > size-8 {
		return nil, fmt.Errorf("header length %d runs past the end of the %d-byte file (truncated?)", n, size)
	}
	header := make([]byte, n)
	if _, err := io.ReadFull(r, header); err != nil {
		return nil, fmt.Errorf("reading the %d-byte header: %w", n, err)
	}
	f, err := parseHeader(header)
	if err != nil {
		return nil, err
	}
	f.data = 8 + int64(n)
	var end int64
	if len(f.Tensors) > 0 {
		end = f.Tensors[len(f.Tensors)-1].End
	}
	if have := size - f.data; have != end {
		if have < end {
			return nil, fmt.Errorf("data section is %d bytes, the header describes %d (truncated?)", have, end)
		}
		return nil, fmt.Errorf("data section is %d bytes, the header describes %d: %d bytes after the last tensor", have, end, have-end)
	}
	return f, nil
}

type entry struct {
	Dtype       string  `json:"dtype"`
	Shape       []int   `json:"shape"`
	DataOffsets []int64 `json:"data_offsets"`
}

// ParseHeader parses and validates a JSON header: known dtypes,
// non-negative shapes whose byte size does not overflow, offsets that
// match the shapes and tile the data section from 0 without gaps or
// overlaps. The tensors are returned in data order.
func ParseHeader(header []byte) (*File, error) {
	f, err := parseHeader(header)
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	return f, nil
}

// parseHeader is ParseHeader without the package's prefix, which Open
// puts before the file's name.
func parseHeader(header []byte) (*File, error) {
	trimmed := bytes.TrimRight(header, " ")
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return nil, errors.New("header is not a JSON object")
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(trimmed, &raw); err != nil {
		return nil, fmt.Errorf("header is not valid JSON: %v", err)
	}
	if err := noDuplicateKeys(trimmed); err != nil {
		return nil, err
	}
	f := &File{}
	for name, msg := range raw {
		if name == "__metadata__" {
			if err := json.Unmarshal(msg, &f.Metadata); err != nil {
				return nil, fmt.Errorf("__metadata__ must map strings to strings: %v", err)
			}
			continue
		}
		var e entry
		dec := json.NewDecoder(bytes.NewReader(msg))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&e); err != nil {
			return nil, fmt.Errorf("tensor %q: %v", name, err)
		}
		info, err := e.check(name)
		if err != nil {
			return nil, err
		}
		f.Tensors = append(f.Tensors, info)
	}
	sort.Slice(f.Tensors, func(i, j int) bool {
		a, b := f.Tensors[i], f.Tensors[j]
		return a.Begin < b.Begin || a.Begin == b.Begin && a.End < b.End
	})
	var at int64
	for _, t := range f.Tensors {
		if t.Begin != at {
			what := "a gap"
			if t.Begin < at {
				what = "an overlap"
			}
			return nil, fmt.Errorf("tensor %q: data_offsets [%d, %d] leave %s after byte %d: tensors must tile the data section", t.Name, t.Begin, t.End, what, at)
		}
		at = t.End
	}
	return f, nil
}

// noDuplicateKeys refuses a JSON document in which an object repeats a
// key: encoding/json keeps the last, so a header could hold two entries
// for one tensor (even of different dtypes) or two values for one
// metadata key, and readers would disagree on which is meant. The format
// disallows it (huggingface/safetensors README.md, "Duplicate keys are
// disallowed"; serde_json, the reference parser, refuses them). data is
// valid JSON.
func noDuplicateKeys(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	var stack []*jsonObject // innermost last; nil for an array
	var lastKey string
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("header is not valid JSON: %v", err)
		}
		var top *jsonObject
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.expect {
			if d, ok := tok.(json.Delim); ok && d == '}' {
				stack = stack[:len(stack)-1]
				markValue(stack)
				continue
			}
			key := tok.(string)
			if top.keys[key] {
				if top.name == "" {
					return fmt.Errorf("tensor %q appears twice in the header (duplicate keys are not allowed)", key)
				}
				return fmt.Errorf("key %q appears twice in %q (duplicate keys are not allowed)", key, top.name)
			}
			top.keys[key] = true
			top.expect = false
			lastKey = key
			continue
		}
		switch tok {
		case json.Delim('{'):
			name := lastKey
			if len(stack) == 0 {
				name = ""
			}
			stack = append(stack, &jsonObject{keys: map[string]bool{}, name: name, expect: true})
		case json.Delim('['):
			stack = append(stack, nil)
		case json.Delim(']'):
			stack = stack[:len(stack)-1]
			markValue(stack)
		default:
			markValue(stack)
		}
	}
}

// jsonObject is an object that noDuplicateKeys is inside.
type jsonObject struct {
	keys   map[string]bool
	name   string // the key that holds this object, for the message
	expect bool   // the next token is a key (or the closing brace)
}

// markValue records that the innermost object got a key's value: its next
// token is a key again.
func markValue(stack []*jsonObject) {
	if n := len(stack); n > 0 && stack[n-1] != nil {
		stack[n-1].expect = true
	}
}

func (e entry) check(name string) (Info, error) {
	size, ok := Dtypes[e.Dtype]
	if !ok {
		return Info{}, fmt.Errorf("tensor %q: dtype %q is not one of F64, F32, F16, BF16, I64, I32, BOOL", name, e.Dtype)
	}
	if e.Shape == nil {
		return Info{}, fmt.Errorf("tensor %q: shape is missing", name)
	}
	if len(e.DataOffsets) != 2 {
		return Info{}, fmt.Errorf("tensor %q: data_offsets must be [begin, end], got %v", name, e.DataOffsets)
	}
	nbytes := int64(size)
	for _, s := range e.Shape {
		if s < 0 {
			return Info{}, fmt.Errorf("tensor %q: negative dimension in shape %v", name, e.Shape)
		}
		if s > 0 && nbytes > math.MaxInt64/int64(s) {
			return Info{}, fmt.Errorf("tensor %q: shape %v overflows a 64-bit byte count", name, e.Shape)
		}
		nbytes *= int64(s)
	}
	b, en := e.DataOffsets[0], e.DataOffsets[1]
	if b < 0 || en < b {
		return Info{}, fmt.Errorf("tensor %q: data_offsets [%d, %d] are not an interval", name, b, en)
	}
	if en-b != nbytes {
		return Info{}, fmt.Errorf("tensor %q: data_offsets [%d, %d] hold %d bytes, but %s %v needs %d", name, b, en, en-b, e.Dtype, e.Shape, nbytes)
	}
	return Info{Name: name, Dtype: e.Dtype, Shape: slices.Clone(e.Shape), Begin: b, End: en}, nil
}

// Tensor is one tensor to write: its raw little-endian bytes, which must
// be exactly numel·itemsize long.
type Tensor struct {
	Name  string
	Dtype string
	Shape []int
	Data  []byte
}

// Write writes tensors and metadata to path, atomically. Tensors are laid
// out in the order given; names must be unique and not "__metadata__".
func Write(path string, tensors []Tensor, metadata map[string]string) error {
	header, err := EncodeHeader(tensors, metadata)
	if err != nil {
		return fmt.Errorf("safetensors: %s: %w", path, err)
	}
	return atomicfile.Write(path, 0o644, func(w io.Writer) error {
		if _, err := w.Write(header); err != nil {
			return err
		}
		for _, t := range tensors {
			if _, err := w.Write(t.Data); err != nil {
				return err
			}
		}
		return nil
	})
}

// EncodeHeader returns the 8-byte length and the JSON header (padded with
// spaces to a multiple of 8 bytes, so the data section is aligned) for
// tensors laid out in order.
func EncodeHeader(tensors []Tensor, metadata map[string]string) ([]byte, error) {
	var sb strings.Builder
	sb.WriteByte('{')
	first := true
	sep := func() {
		if !first {
			sb.WriteByte(',')
		}
		first = false
	}
	if len(metadata) > 0 {
		m, err := json.Marshal(metadata)
		if err != nil {
			return nil, err
		}
		sep()
		sb.WriteString(`"__metadata__":`)
		sb.Write(m)
	}
	seen := map[string]bool{}
	var at int64
	for _, t := range tensors {
		if t.Name == "__metadata__" || seen[t.Name] {
			return nil, fmt.Errorf("tensor name %q is reserved or repeated", t.Name)
		}
		seen[t.Name] = true
		e := entry{Dtype: t.Dtype, Shape: t.Shape, DataOffsets: []int64{at, at + int64(len(t.Data))}}
		if e.Shape == nil {
			e.Shape = []int{}
		}
		if _, err := e.check(t.Name); err != nil {
			return nil, err
		}
		name, _ := json.Marshal(t.Name)
		body, _ := json.Marshal(e)
		sep()
		sb.Write(name)
		sb.WriteByte(':')
		sb.Write(body)
		at += int64(len(t.Data))
	}
	sb.WriteByte('}')
	for (8+sb.Len())%8 != 0 {
		sb.WriteByte(' ')
	}
	out := make([]byte, 8, 8+sb.Len())
	binary.LittleEndian.PutUint64(out, uint64(sb.Len()))
	return append(out, sb.String()...), nil
}
