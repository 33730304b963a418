package pickle

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"math"
	"math/big"
	"os/exec"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"
)

// pyWorker is a python3 process that reads length-prefixed pickles on stdin
// and answers each with one line: the canonical form of the decoded value
// (see canonPy), or "E" and the error.
const pyWorkerSrc = `
import sys, pickle, struct
def canon(v):
    if v is None: return "N"
    if v is True: return "T"
    if v is False: return "F"
    if isinstance(v, int): return "i" + str(v)
    if isinstance(v, float): return "f" + struct.pack(">d", v).hex()
    if isinstance(v, str): return "s" + v.encode("utf-8", "surrogatepass").hex()
    if isinstance(v, bytes): return "b" + v.hex()
    if isinstance(v, list): return "[" + ",".join(canon(x) for x in v) + "]"
    if isinstance(v, tuple): return "(" + ",".join(canon(x) for x in v) + ")"
    if isinstance(v, dict): return "{" + ",".join(canon(k) + ":" + canon(x) for k, x in v.items()) + "}"
    raise TypeError("unexpected type %r" % type(v))
inp = sys.stdin.buffer
out = sys.stdout
while True:
    h = inp.read(4)
    if len(h) < 4: break
    n = struct.unpack("<I", h)[0]
    data = inp.read(n)
    try:
        out.write(canon(pickle.loads(data)) + "\n")
    except Exception as e:
        out.write("E" + repr(e).replace("\n", " ") + "\n")
    out.flush()
`

type pyWorker struct {
	mu  sync.Mutex
	in  io.WriteCloser
	out *bufio.Reader
}

var (
	workerOnce sync.Once
	worker     *pyWorker
)

func python(t testing.TB) *pyWorker {
	workerOnce.Do(func() {
		path, err := exec.LookPath("python3")
		if err != nil {
			return
		}
		cmd := exec.Command(path, "-c", pyWorkerSrc)
		in, err := cmd.StdinPipe()
		if err != nil {
			return
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			return
		}
		if err := cmd.Start(); err != nil {
			return
		}
		worker = &pyWorker{in: in, out: bufio.NewReader(out)}
	})
	if worker == nil {
		t.Skip("python3 not available")
	}
	return worker
}

// decode asks Python to load p and returns its canonical form.
func (w *pyWorker) decode(t testing.TB, p []byte) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var h [4]byte
	binary.LittleEndian.PutUint32(h[:], uint32(len(p)))
	if _, err := w.in.Write(append(h[:], p...)); err != nil {
		t.Fatalf("writing to python: %v", err)
	}
	line, err := w.out.ReadString('\n')
	if err != nil {
		t.Fatalf("reading from python: %v", err)
	}
	return strings.TrimSuffix(line, "\n")
}

// canon is the Go side of canonPy: what Python should see for v.
func canon(v reflect.Value) string {
	if !v.IsValid() {
		return "N"
	}
	switch v.Kind() {
	case reflect.Bool:
		if v.Bool() {
			return "T"
		}
		return "F"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "i" + strconv.FormatInt(v.Int(), 10)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return "i" + strconv.FormatUint(v.Uint(), 10)
	case reflect.Float32, reflect.Float64:
		return fmt.Sprintf("f%016x", math.Float64bits(v.Float()))
	case reflect.String:
		return "s" + hex.EncodeToString([]byte(surrogateEscapeIfInvalid(v.String())))
	case reflect.Interface:
		return canon(v.Elem())
	case reflect.Pointer:
		if v.IsNil() {
			return "N"
		}
		if b, ok := v.Interface().(*big.Int); ok {
			return "i" + b.String()
		}
		return canon(v.Elem())
	case reflect.Slice, reflect.Array:
		if d, ok := v.Interface().(Dict); ok {
			var parts []string
			for _, kv := range d {
				parts = append(parts, canon(reflect.ValueOf(kv.Key))+":"+canon(reflect.ValueOf(kv.Value)))
			}
			return "{" + strings.Join(parts, ",") + "}"
		}
		if v.Type().Elem().Kind() == reflect.Uint8 {
			b := make([]byte, v.Len())
			reflect.Copy(reflect.ValueOf(b), v)
			return "b" + hex.EncodeToString(b)
		}
		var parts []string
		for i := range v.Len() {
			parts = append(parts, canon(v.Index(i)))
		}
		if v.Type() == tupleType {
			return "(" + strings.Join(parts, ",") + ")"
		}
		return "[" + strings.Join(parts, ",") + "]"
	case reflect.Map:
		keys := v.MapKeys()
		slices.SortFunc(keys, func(a, b reflect.Value) int { return strings.Compare(a.String(), b.String()) })
		var parts []string
		for _, k := range keys {
			parts = append(parts, canon(k)+":"+canon(v.MapIndex(k)))
		}
		return "{" + strings.Join(parts, ",") + "}"
	case reflect.Struct:
		var parts []string
		for _, f := range structFields(v.Type()) {
			fv, ok := fieldByIndex(v, f.index)
			if !ok || (f.omitEmpty && isEmpty(fv)) {
				continue
			}
			parts = append(parts, canon(reflect.ValueOf(f.name))+":"+canon(fv))
		}
		return "{" + strings.Join(parts, ",") + "}"
	}
	panic("canon: unexpected kind " + v.Kind().String())
}

type frame struct {
	Filename string `json:"filename"`
	Line     int    `json:"line"`
	Name     string `json:"name"`
}

type base struct {
	Device int `json:"device"`
}

type entry struct {
	base
	Action  string  `json:"action"`
	Addr    uint64  `json:"addr"`
	Free    int64   `json:"device_free,omitempty"`
	Frames  []frame `json:"frames"`
	Skip    string  `json:"-"`
	private int     //nolint:unused
	Ptr     *frame  `json:"ptr"`
	Any     any     `json:"any"`
	Pair    Tuple   `json:"pair"`
	Floats  []float32
}

func TestRoundTripPython(t *testing.T) {
	w := python(t)
	huge, _ := new(big.Int).SetString("-123456789012345678901234567890", 10)
	cases := []struct {
		name string
		v    any
	}{
		{"nil", nil},
		{"true", true},
		{"false", false},
		{"zero", 0},
		{"255", 255},
		{"256", 256},
		{"65535", 65535},
		{"65536", 65536},
		{"minus one", -1},
		{"int32 max", int64(math.MaxInt32)},
		{"int32 min", int64(math.MinInt32)},
		{"2^31", int64(1) << 31},
		{"address", uint64(0x7f3a_0000_0000)},
		{"int64 max", int64(math.MaxInt64)},
		{"int64 min", int64(math.MinInt64)},
		{"uint64 max", uint64(math.MaxUint64)},
		{"2^63", uint64(1) << 63},
		{"-2^31-1", int64(math.MinInt32) - 1},
		{"-129", -129},
		{"-32768", -32768},
		{"int8", int8(-5)},
		{"big", huge},
		{"big small", big.NewInt(7)},
		{"float", 3.25},
		{"float neg zero", math.Copysign(0, -1)},
		{"float inf", math.Inf(1)},
		{"float nan", math.NaN()},
		{"float32", float32(1.5)},
		{"string", "héllo, wörld ✓ 🚀"},
		{"empty string", ""},
		{"invalid utf8", "a\xffb"},
		{"bytes", []byte{0, 1, 127, 128, 255}},
		{"empty bytes", []byte{}},
		{"array bytes", [3]byte{9, 8, 7}},
		{"list", []any{1, "two", 3.0, nil, true}},
		{"nil list", []int(nil)},
		{"long list", make([]int, 2500)},
		{"tuple0", Tuple{}},
		{"tuple1", Tuple{1}},
		{"tuple2", Tuple{0, 0}},
		{"tuple3", Tuple{"a", 1, nil}},
		{"tuple5", Tuple{1, 2, 3, 4, 5}},
		{"dict", map[string]any{"z": 1, "a": []any{map[string]any{}}, "m": nil}},
		{"nil dict", map[string]int(nil)},
		{"ordered dict", Dict{{"z", 1}, {"a", Dict{}}, {3, "int key"}, {"m", []any{}}}},
		{"big dict", func() map[string]int {
			m := map[string]int{}
			for i := range 2100 {
				m[fmt.Sprintf("k%05d", i)] = i
			}
			return m
		}()},
		{"struct", entry{base: base{Device: 1}, Action: "alloc", Addr: 1 << 40, Frames: []frame{{"a.go", 12, "main.f"}}, Skip: "x", Pair: Tuple{0, 0}, Floats: []float32{0.5}}},
		{"struct ptr", &entry{Action: "oom", Free: 42, Ptr: &frame{Name: "n"}, Any: map[string]any{"k": Tuple{1, 2}}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := Marshal(c.v)
			if err != nil {
				t.Fatal(err)
			}
			if !memoFree(p) {
				t.Fatalf("output memoizes: %x", p)
			}
			got := w.decode(t, p)
			want := canon(reflect.ValueOf(c.v))
			if got != want {
				t.Fatalf("python decoded\n %s\nwant\n %s\npickle %x", got, want, p)
			}
		})
	}
}

// memoFree reports whether p has no memo opcodes. It walks the opcode stream
// (the encoder only emits a small, known set of opcodes), so that a 0x94
// byte inside an argument does not count.
func memoFree(p []byte) bool {
	ops, err := opcodes(p)
	if err != nil {
		return false
	}
	for _, op := range ops {
		switch op {
		case 0x94, 'q', 'r', 'p', 'h', 'j', 'g':
			return false
		}
	}
	return true
}

// opcodes splits a pickle written by this package into its opcodes.
func opcodes(p []byte) ([]byte, error) {
	var ops []byte
	i := 0
	for i < len(p) {
		op := p[i]
		ops = append(ops, op)
		i++
		switch op {
		case opProto, opBinInt1:
			i++
		case opBinInt2:
			i += 2
		case opBinInt:
			i += 4
		case opBinFloat:
			i += 8
		case opLong1:
			if i >= len(p) {
				return nil, io.ErrUnexpectedEOF
			}
			i += 1 + int(p[i])
		case opLong4, opBinUnicode:
			if i+4 > len(p) {
				return nil, io.ErrUnexpectedEOF
			}
			i += 4 + int(binary.LittleEndian.Uint32(p[i:]))
		case opGlobal:
			for n := 0; n < 2; n++ {
				j := bytes.IndexByte(p[i:], '\n')
				if j < 0 {
					return nil, io.ErrUnexpectedEOF
				}
				i += j + 1
			}
		case opStop:
			if i != len(p) {
				return nil, fmt.Errorf("STOP at %d of %d", i, len(p))
			}
			return ops, nil
		case opNone, opNewTrue, opNewFalse, opEmptyList, opAppends, opEmptyDict, opSetItems,
			opMark, opEmptyTuple, opTuple, opTuple1, opTuple2, opTuple3, opReduce:
		default:
			return nil, fmt.Errorf("unexpected opcode %#x at %d", op, i-1)
		}
	}
	return nil, io.ErrUnexpectedEOF
}

func TestNoMemoAndKnownOpcodes(t *testing.T) {
	v := map[string]any{"s": []any{"same", "same", []int{1, 2}}, "t": Tuple{1, 2}, "b": []byte("x"), "n": int64(1) << 50}
	p, err := Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if !memoFree(p) {
		t.Fatalf("pickle uses memo or unknown opcodes: %x", p)
	}
	if p[0] != opProto || p[1] != 2 {
		t.Fatalf("pickle does not start with PROTO 2: %x", p[:2])
	}
}

func TestDeterministic(t *testing.T) {
	m := map[string]any{}
	for i := range 100 {
		m[strconv.Itoa(i)] = i
	}
	first, _ := Marshal(m)
	for range 20 {
		again, _ := Marshal(m)
		if !bytes.Equal(first, again) {
			t.Fatal("two encodings of the same map differ")
		}
	}
}

func TestIntKeysSorted(t *testing.T) {
	w := python(t)
	p, err := Marshal(map[int]string{3: "c", -1: "a", 2: "b"})
	if err != nil {
		t.Fatal(err)
	}
	got := w.decode(t, p)
	want := "{i-1:s61,i2:s62,i3:s63}"
	if got != want {
		t.Fatalf("got %s want %s", got, want)
	}
}

func TestUnsupported(t *testing.T) {
	for _, v := range []any{make(chan int), func() {}, complex(1, 2), map[float64]int{1: 1}, []any{1, make(chan int)}} {
		if _, err := Marshal(v); err == nil {
			t.Errorf("Marshal(%T) succeeded, want error", v)
		}
	}
	type node struct {
		Next *node `json:"next"`
	}
	n := &node{}
	n.Next = n
	if _, err := Marshal(n); err == nil {
		t.Error("Marshal of a cycle succeeded, want error")
	}
}

func TestEncoderWrites(t *testing.T) {
	var b bytes.Buffer
	if err := NewEncoder(&b).Encode([]int{1, 2}); err != nil {
		t.Fatal(err)
	}
	want, _ := Marshal([]int{1, 2})
	if !bytes.Equal(b.Bytes(), want) {
		t.Fatalf("Encoder wrote %x, Marshal %x", b.Bytes(), want)
	}
	b.Reset()
	if err := NewEncoder(&b).Encode(make(chan int)); err == nil || b.Len() != 0 {
		t.Fatalf("Encode of a channel: err %v, wrote %d bytes", err, b.Len())
	}
}

// gen builds a value from fuzz input.
type gen struct {
	data []byte
	pos  int
}

func (g *gen) byte() byte {
	if g.pos >= len(g.data) {
		return 0
	}
	b := g.data[g.pos]
	g.pos++
	return b
}

func (g *gen) u64() uint64 {
	var x uint64
	for i := range 8 {
		x |= uint64(g.byte()) << (8 * i)
	}
	return x
}

func (g *gen) str() string {
	n := int(g.byte() % 16)
	end := min(g.pos+n, len(g.data))
	s := string(g.data[g.pos:end])
	g.pos = end
	return s
}

func (g *gen) value(depth int) any {
	k := g.byte() % 17
	if depth > 4 && k >= 11 {
		k %= 11
	}
	switch k {
	case 0:
		return nil
	case 1:
		return g.byte()&1 == 1
	case 2:
		return int64(int8(g.byte()))
	case 3:
		return int64(g.u64())
	case 4:
		return g.u64()
	case 5:
		return math.Float64frombits(g.u64())
	case 6:
		return g.str()
	case 7:
		return []byte(g.str())
	case 8:
		return int32(g.u64())
	case 9:
		return uint16(g.u64())
	case 10:
		return float32(math.Float64frombits(g.u64()))
	case 11:
		n := int(g.byte() % 5)
		l := make([]any, n)
		for i := range l {
			l[i] = g.value(depth + 1)
		}
		return l
	case 12:
		n := int(g.byte() % 5)
		l := make(Tuple, n)
		for i := range l {
			l[i] = g.value(depth + 1)
		}
		return l
	case 13:
		n := int(g.byte() % 5)
		m := map[string]any{}
		for range n {
			m[g.str()] = g.value(depth + 1)
		}
		return m
	case 14:
		return frame{Filename: g.str(), Line: int(int32(g.u64())), Name: g.str()}
	case 15:
		return Dict{{g.str(), g.value(depth + 1)}, {int64(g.u64()), g.value(depth + 1)}}
	default:
		return &entry{Action: g.str(), Addr: g.u64(), Free: int64(g.u64() % 3), Any: g.value(depth + 1)}
	}
}

func FuzzMarshal(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{3, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f})
	f.Add([]byte{11, 4, 6, 3, 'a', 'b', 'c', 5, 1, 2, 3, 4, 5, 6, 7, 8, 13, 2, 1, 'k', 0, 2, 'j', 1})
	f.Add([]byte{15, 2, 'x', 'y', 1, 2, 3, 4, 5, 6, 7, 8, 1, 12, 3, 4, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 7, 2, 0xc3, 0x28, 6, 1, 0x80})
	f.Fuzz(func(t *testing.T, data []byte) {
		g := &gen{data: data}
		v := g.value(0)
		p, err := Marshal(v)
		if err != nil {
			t.Fatalf("Marshal(%#v): %v", v, err)
		}
		if !memoFree(p) {
			t.Fatalf("bad opcode stream for %#v: %x", v, p)
		}
		if !utf8.Valid([]byte(canon(reflect.ValueOf(v)))) {
			t.Fatal("canonical form not UTF-8")
		}
		if _, err := exec.LookPath("python3"); err != nil {
			return
		}
		w := python(t)
		got := w.decode(t, p)
		want := canon(reflect.ValueOf(v))
		if got != want {
			t.Fatalf("python decoded\n %s\nwant\n %s\nvalue %#v\npickle %x", got, want, v, p)
		}
	})
}

func surrogateEscapeIfInvalid(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return surrogateEscape(s)
}

func TestSurrogateEscape(t *testing.T) {
	w := python(t)
	p, err := Marshal([]string{"a\xffb", "\xdd", "\xdd\xdd", "\xed\xb2\x80"})
	if err != nil {
		t.Fatal(err)
	}
	cmdOut := w.decode(t, p)
	want := "[s61edb3bf62,sedb39d,sedb39dedb39d,sedb3adedb2b2edb280]" // U+DCFF, U+DCDD, ... as surrogatepass UTF-8
	if cmdOut != want {
		t.Fatalf("got %s want %s", cmdOut, want)
	}
}
