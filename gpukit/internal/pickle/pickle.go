// Package pickle writes Go values as Python pickles, protocol 2, so that
// Python's pickle.loads (and PyTorch's memory tools, which read snapshots
// with it) can read what gpukit writes; and it reads pickles of plain data
// from strangers, such as a PyTorch memory snapshot (Decode, decode.go:
// data opcodes only, every length bounded; DecodeStore, store.go, reads one
// of a gigabyte keeping only what its caller folds each value into).
//
// The encoder never memoizes: a value reachable twice is written twice, and
// no MEMOIZE, PUT or GET opcode appears in the output. It uses only opcodes
// of protocols 0 to 2, which also keeps the output readable by the small
// JavaScript unpickler of PyTorch's MemoryViz.js.
//
// Mapping of Go values to Python objects:
//
//	nil, nil pointer, nil interface   None
//	bool                              bool
//	int*, uint*                       int (BININT1/BININT2/BININT, LONG1 beyond 32 bits)
//	*big.Int                          int (LONG1 or LONG4)
//	float32, float64                  float (BINFLOAT)
//	string                            str (BINUNICODE; see below for invalid UTF-8)
//	[]byte, [N]byte                   bytes (the protocol-2 form: _codecs.encode(s, 'latin1'))
//	Tuple                             tuple
//	Dict                              dict, keys in the slice's order
//	other slices and arrays           list
//	maps with string or integer keys  dict, keys in sorted order
//	structs                           dict of exported fields, named by `json` tags
//
// Struct tags follow encoding/json: `json:"name"` renames a field,
// `json:"-"` drops it, `json:",omitempty"` drops zero values; embedded
// structs without a name tag are flattened. Keys appear in field order.
// Channels, functions and complex numbers are refused with an error.
//
// A string that is not valid UTF-8 keeps its invalid bytes as lone
// surrogates U+DC80..U+DCFF (Python's "surrogateescape" convention), so
// distinct Go strings remain distinct Python strings.
package pickle

import (
	"bufio"
	"cmp"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"math/big"
	"reflect"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"
)

// Tuple is written as a Python tuple rather than a list.
type Tuple []any

// Dict is written as a Python dict whose keys keep the order of the slice,
// for callers that need a given insertion order (Python dicts are ordered).
type Dict []KV

// KV is one key and value of a Dict.
type KV struct {
	Key   any
	Value any
}

// Opcodes (protocols 0-2) used by the encoder.
const (
	opProto      = 0x80
	opStop       = '.'
	opNone       = 'N'
	opNewTrue    = 0x88
	opNewFalse   = 0x89
	opBinInt     = 'J'
	opBinInt1    = 'K'
	opBinInt2    = 'M'
	opLong1      = 0x8a
	opLong4      = 0x8b
	opBinFloat   = 'G'
	opBinUnicode = 'X'
	opEmptyList  = ']'
	opAppends    = 'e'
	opEmptyDict  = '}'
	opSetItems   = 'u'
	opMark       = '('
	opEmptyTuple = ')'
	opTuple      = 't'
	opTuple1     = 0x85
	opTuple2     = 0x86
	opTuple3     = 0x87
	opGlobal     = 'c'
	opReduce     = 'R'
)

// batchSize is how many list items or dict pairs go between a MARK and its
// APPENDS or SETITEMS, as Python's own pickler does.
const batchSize = 1000

// maxDepth bounds nesting so that a cyclic value fails with an error instead
// of exhausting the stack.
const maxDepth = 10000

// Marshal returns the protocol-2 pickle of v.
func Marshal(v any) ([]byte, error) {
	var e encoder
	e.buf = make([]byte, 0, 256)
	if err := e.encodeTop(v); err != nil {
		return nil, err
	}
	return e.buf, nil
}

// Encoder writes pickles to a stream.
type Encoder struct {
	w io.Writer
}

// NewEncoder returns an Encoder that writes to w.
func NewEncoder(w io.Writer) *Encoder { return &Encoder{w: w} }

// Encode writes one complete pickle of v (PROTO 2 ... STOP). Nothing is
// written when v cannot be encoded.
func (enc *Encoder) Encode(v any) error {
	b, err := Marshal(v)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(enc.w, 64<<10)
	if _, err := bw.Write(b); err != nil {
		return err
	}
	return bw.Flush()
}

// UnsupportedTypeError is returned for values that have no Python form.
type UnsupportedTypeError struct {
	Type reflect.Type
}

func (e *UnsupportedTypeError) Error() string {
	return "pickle: unsupported type " + e.Type.String()
}

type encoder struct {
	buf   []byte
	depth int
}

func (e *encoder) encodeTop(v any) error {
	e.buf = append(e.buf, opProto, 2)
	if err := e.encode(reflect.ValueOf(v)); err != nil {
		return err
	}
	e.buf = append(e.buf, opStop)
	return nil
}

var (
	bigIntType = reflect.TypeFor[big.Int]()
	tupleType  = reflect.TypeFor[Tuple]()
	dictType   = reflect.TypeFor[Dict]()
)

func (e *encoder) encode(v reflect.Value) error {
	if !v.IsValid() {
		e.buf = append(e.buf, opNone)
		return nil
	}
	e.depth++
	defer func() { e.depth-- }()
	if e.depth > maxDepth {
		return fmt.Errorf("pickle: value nested deeper than %d levels (cyclic?)", maxDepth)
	}
	switch v.Kind() {
	case reflect.Bool:
		if v.Bool() {
			e.buf = append(e.buf, opNewTrue)
		} else {
			e.buf = append(e.buf, opNewFalse)
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		e.int(v.Int())
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		e.uint(v.Uint())
	case reflect.Float32, reflect.Float64:
		e.float(v.Float())
	case reflect.String:
		e.string(v.String())
	case reflect.Interface:
		return e.encode(v.Elem())
	case reflect.Pointer:
		if v.IsNil() {
			e.buf = append(e.buf, opNone)
			return nil
		}
		if v.Type().Elem() == bigIntType {
			e.bigInt(v.Interface().(*big.Int))
			return nil
		}
		return e.encode(v.Elem())
	case reflect.Slice:
		if v.Type() == dictType {
			return e.orderedDict(v.Interface().(Dict))
		}
		if v.Type().Elem().Kind() == reflect.Uint8 {
			e.bytes(v.Bytes())
			return nil
		}
		if v.Type() == tupleType {
			return e.tuple(v)
		}
		return e.list(v)
	case reflect.Array:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			b := make([]byte, v.Len())
			reflect.Copy(reflect.ValueOf(b), v)
			e.bytes(b)
			return nil
		}
		return e.list(v)
	case reflect.Map:
		if v.IsNil() {
			e.buf = append(e.buf, opEmptyDict)
			return nil
		}
		return e.dict(v)
	case reflect.Struct:
		if v.Type() == bigIntType {
			x := v.Interface().(big.Int)
			e.bigInt(&x)
			return nil
		}
		return e.structDict(v)
	default:
		return &UnsupportedTypeError{Type: v.Type()}
	}
	return nil
}

func (e *encoder) int(x int64) {
	switch {
	case x >= 0 && x <= 0xff:
		e.buf = append(e.buf, opBinInt1, byte(x))
	case x >= 0 && x <= 0xffff:
		e.buf = append(e.buf, opBinInt2, byte(x), byte(x>>8))
	case x >= math.MinInt32 && x <= math.MaxInt32:
		e.buf = append(e.buf, opBinInt)
		e.buf = binary.LittleEndian.AppendUint32(e.buf, uint32(int32(x)))
	default:
		// LONG1: little-endian two's complement, as short as possible.
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], uint64(x))
		n := 8
		for n > 1 {
			top, next := b[n-1], b[n-2]
			if (top == 0 && next < 0x80) || (top == 0xff && next >= 0x80) {
				n--
				continue
			}
			break
		}
		e.buf = append(e.buf, opLong1, byte(n))
		e.buf = append(e.buf, b[:n]...)
	}
}

func (e *encoder) uint(x uint64) {
	if x <= math.MaxInt64 {
		e.int(int64(x))
		return
	}
	// Needs a ninth byte so that the sign bit is clear.
	e.buf = append(e.buf, opLong1, 9)
	e.buf = binary.LittleEndian.AppendUint64(e.buf, x)
	e.buf = append(e.buf, 0)
}

func (e *encoder) bigInt(x *big.Int) {
	if x.IsInt64() {
		e.int(x.Int64())
		return
	}
	// Two's complement, little-endian, minimal length with a sign bit.
	n := x.BitLen()/8 + 1
	var mag *big.Int
	if x.Sign() >= 0 {
		mag = x
	} else {
		// 2^(8n) + x
		mag = new(big.Int).Lsh(big.NewInt(1), uint(8*n))
		mag.Add(mag, x)
	}
	be := mag.FillBytes(make([]byte, n))
	le := make([]byte, n)
	for i := range be {
		le[n-1-i] = be[i]
	}
	// Trim redundant sign bytes.
	for len(le) > 1 {
		top, next := le[len(le)-1], le[len(le)-2]
		if (top == 0 && next < 0x80) || (top == 0xff && next >= 0x80) {
			le = le[:len(le)-1]
			continue
		}
		break
	}
	if len(le) < 256 {
		e.buf = append(e.buf, opLong1, byte(len(le)))
	} else {
		e.buf = append(e.buf, opLong4)
		e.buf = binary.LittleEndian.AppendUint32(e.buf, uint32(len(le)))
	}
	e.buf = append(e.buf, le...)
}

func (e *encoder) float(f float64) {
	e.buf = append(e.buf, opBinFloat)
	e.buf = binary.BigEndian.AppendUint64(e.buf, math.Float64bits(f))
}

func (e *encoder) string(s string) {
	if !utf8.ValidString(s) {
		s = surrogateEscape(s)
	}
	e.buf = append(e.buf, opBinUnicode)
	e.buf = binary.LittleEndian.AppendUint32(e.buf, uint32(len(s)))
	e.buf = append(e.buf, s...)
}

// surrogateEscape returns s with every byte that is not part of valid UTF-8
// replaced by the lone surrogate U+DC80+byte, written as its three-byte
// (surrogatepass) UTF-8 form. This is Python's "surrogateescape" convention:
// pickle.loads decodes BINUNICODE with 'surrogatepass', so Python sees the
// same str as os.fsdecode would give, and s.encode('utf-8',
// 'surrogateescape') gives back the original bytes. Distinct Go strings stay
// distinct Python strings.
func surrogateEscape(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			c := 0xDC00 | rune(s[i])
			// UTF-8 of a surrogate code point, which utf8.EncodeRune refuses.
			b.WriteByte(byte(0xE0 | c>>12))
			b.WriteByte(byte(0x80 | (c>>6)&0x3F))
			b.WriteByte(byte(0x80 | c&0x3F))
			i++
			continue
		}
		b.WriteString(s[i : i+n])
		i += n
	}
	return b.String()
}

// bytes writes b the way Python's pickler does for protocol 2, which has no
// bytes opcode: _codecs.encode(b.decode('latin1'), 'latin1'), and bytes()
// for the empty value.
func (e *encoder) bytes(b []byte) {
	if len(b) == 0 {
		e.buf = append(e.buf, opGlobal)
		e.buf = append(e.buf, "__builtin__\nbytes\n"...)
		e.buf = append(e.buf, opEmptyTuple, opReduce)
		return
	}
	e.buf = append(e.buf, opGlobal)
	e.buf = append(e.buf, "_codecs\nencode\n"...)
	// Latin-1 decoding maps each byte to the code point of the same value.
	var sb strings.Builder
	sb.Grow(len(b) * 2)
	for _, c := range b {
		sb.WriteRune(rune(c))
	}
	e.string(sb.String())
	e.string("latin1")
	e.buf = append(e.buf, opTuple2, opReduce)
}

func (e *encoder) list(v reflect.Value) error {
	e.buf = append(e.buf, opEmptyList)
	n := v.Len()
	for start := 0; start < n; start += batchSize {
		end := min(start+batchSize, n)
		e.buf = append(e.buf, opMark)
		for i := start; i < end; i++ {
			if err := e.encode(v.Index(i)); err != nil {
				return err
			}
		}
		e.buf = append(e.buf, opAppends)
	}
	return nil
}

func (e *encoder) tuple(v reflect.Value) error {
	n := v.Len()
	if n == 0 {
		e.buf = append(e.buf, opEmptyTuple)
		return nil
	}
	if n > 3 {
		e.buf = append(e.buf, opMark)
	}
	for i := range n {
		if err := e.encode(v.Index(i)); err != nil {
			return err
		}
	}
	switch n {
	case 1:
		e.buf = append(e.buf, opTuple1)
	case 2:
		e.buf = append(e.buf, opTuple2)
	case 3:
		e.buf = append(e.buf, opTuple3)
	default:
		e.buf = append(e.buf, opTuple)
	}
	return nil
}

func (e *encoder) dict(v reflect.Value) error {
	kt := v.Type().Key()
	keys := v.MapKeys()
	switch kt.Kind() {
	case reflect.String:
		slices.SortFunc(keys, func(a, b reflect.Value) int { return strings.Compare(a.String(), b.String()) })
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		slices.SortFunc(keys, func(a, b reflect.Value) int { return cmp.Compare(a.Int(), b.Int()) })
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		slices.SortFunc(keys, func(a, b reflect.Value) int { return cmp.Compare(a.Uint(), b.Uint()) })
	default:
		return fmt.Errorf("pickle: unsupported map key type %s", kt)
	}
	e.buf = append(e.buf, opEmptyDict)
	for start := 0; start < len(keys); start += batchSize {
		end := min(start+batchSize, len(keys))
		e.buf = append(e.buf, opMark)
		for _, k := range keys[start:end] {
			if err := e.encode(k); err != nil {
				return err
			}
			if err := e.encode(v.MapIndex(k)); err != nil {
				return err
			}
		}
		e.buf = append(e.buf, opSetItems)
	}
	return nil
}

func (e *encoder) orderedDict(d Dict) error {
	e.buf = append(e.buf, opEmptyDict)
	for start := 0; start < len(d); start += batchSize {
		end := min(start+batchSize, len(d))
		e.buf = append(e.buf, opMark)
		for _, kv := range d[start:end] {
			if err := e.encode(reflect.ValueOf(kv.Key)); err != nil {
				return err
			}
			if err := e.encode(reflect.ValueOf(kv.Value)); err != nil {
				return err
			}
		}
		e.buf = append(e.buf, opSetItems)
	}
	return nil
}

// field is one struct field as it appears in a dict.
type field struct {
	name      string
	index     []int
	omitEmpty bool
}

var fieldCache sync.Map // reflect.Type -> []field

func structFields(t reflect.Type) []field {
	if f, ok := fieldCache.Load(t); ok {
		return f.([]field)
	}
	var fields []field
	seen := map[string]bool{}
	var walk func(t reflect.Type, index []int, depth int)
	walk = func(t reflect.Type, index []int, depth int) {
		for i := range t.NumField() {
			sf := t.Field(i)
			tag := sf.Tag.Get("json")
			if tag == "-" {
				continue
			}
			name, opts, _ := strings.Cut(tag, ",")
			idx := append(slices.Clip(index), i)
			if sf.Anonymous && name == "" {
				ft := sf.Type
				if ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				if ft.Kind() == reflect.Struct && depth < 16 {
					walk(ft, idx, depth+1)
					continue
				}
			}
			if !sf.IsExported() {
				continue
			}
			if name == "" {
				name = sf.Name
			}
			if seen[name] {
				continue // the shallower field wins, as in encoding/json
			}
			seen[name] = true
			fields = append(fields, field{name: name, index: idx, omitEmpty: hasOpt(opts, "omitempty")})
		}
	}
	walk(t, nil, 0)
	fieldCache.Store(t, fields)
	return fields
}

func hasOpt(opts, want string) bool {
	for o := range strings.SplitSeq(opts, ",") {
		if o == want {
			return true
		}
	}
	return false
}

func (e *encoder) structDict(v reflect.Value) error {
	fields := structFields(v.Type())
	e.buf = append(e.buf, opEmptyDict)
	count := 0
	open := false
	for _, f := range fields {
		fv, ok := fieldByIndex(v, f.index)
		if !ok {
			continue // nil embedded pointer
		}
		if f.omitEmpty && isEmpty(fv) {
			continue
		}
		if !open {
			e.buf = append(e.buf, opMark)
			open = true
		}
		e.string(f.name)
		if err := e.encode(fv); err != nil {
			return err
		}
		count++
		if count%batchSize == 0 {
			e.buf = append(e.buf, opSetItems)
			open = false
		}
	}
	if open {
		e.buf = append(e.buf, opSetItems)
	}
	return nil
}

func fieldByIndex(v reflect.Value, index []int) (reflect.Value, bool) {
	for i, x := range index {
		if i > 0 && v.Kind() == reflect.Pointer {
			if v.IsNil() {
				return reflect.Value{}, false
			}
			v = v.Elem()
		}
		v = v.Field(x)
	}
	return v, true
}

func isEmpty(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Interface, reflect.Pointer:
		return v.IsZero()
	}
	return false
}
