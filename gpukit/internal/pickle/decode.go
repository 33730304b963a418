package pickle

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Decoding reads pickles from strangers (a PyTorch memory snapshot someone
// brings), so it builds data and nothing else:
//
//   - only the opcodes of plain data are implemented: None, bools, ints,
//     floats, strings, bytes, lists, tuples, dicts, sets, the memo, MARK,
//     FRAME. GLOBAL, STACK_GLOBAL, REDUCE, BUILD, NEWOBJ, INST, OBJ, EXT*,
//     PERSID and their kin are refused by name: a memory snapshot
//     constructs no Python object, and the pickles PyTorch writes hold none
//     (torch.cuda.memory._dump_snapshot pickles dicts, lists, strings and
//     numbers);
//   - every length is checked against Limits before anything is made, and
//     a string or bytes value is read in pieces as its bytes arrive, so a
//     declared length of 2⁶³ in a short file allocates nothing big;
//   - the decoder keeps its own stack (no recursion), counts every value it
//     makes, and refuses bytes after STOP.

// Limits bound what Decode builds from an untrusted pickle.
type Limits struct {
	MaxInput  int64 // bytes read, STOP included
	MaxValues int64 // values made (each int, string, list... counts one)
	MaxString int64 // bytes of one string or bytes value
}

// DefaultLimits suit a memory snapshot of up to a few GB.
var DefaultLimits = Limits{MaxInput: 8 << 30, MaxValues: 1 << 30, MaxString: 1 << 30}

// List is a decoded Python list. It is a pointer so that APPEND and the
// memo see the same list, as in Python.
type List struct{ Items []any }

// Set is a decoded Python set or frozenset, its items in the pickle's order.
type Set struct{ Items []any }

// Map is a decoded Python dict: its keys in insertion order, and an index
// for lookup. Keys are None, bools, ints (int64), floats, strings or
// tuples of those; a key of another kind (a list, a dict, a huge int) is
// refused, as Python refuses unhashable keys.
type Map struct {
	Keys, Values []any
	index        map[any]int
}

// Get returns the value of key (a string, an int64...) and whether it is
// there.
func (m *Map) Get(key any) (any, bool) {
	if m == nil {
		return nil, false
	}
	k, ok := hashKey(key)
	if !ok {
		return nil, false
	}
	i, ok := m.index[k]
	if !ok {
		return nil, false
	}
	return m.Values[i], true
}

// Len is the number of keys.
func (m *Map) Len() int {
	if m == nil {
		return 0
	}
	return len(m.Keys)
}

func (m *Map) set(key, value any) error {
	k, ok := hashKey(key)
	if !ok {
		return fmt.Errorf("pickle: a dict key of type %s is not hashable", typeName(key))
	}
	if m.index == nil {
		m.index = map[any]int{}
	}
	if i, ok := m.index[k]; ok {
		m.Values[i] = value
		return nil
	}
	m.index[k] = len(m.Keys)
	m.Keys = append(m.Keys, key)
	m.Values = append(m.Values, value)
	return nil
}

// tupleKey is a tuple as a map key: its items' keys joined.
type tupleKey string

// hashKey is key as a comparable Go value.
func hashKey(key any) (any, bool) {
	switch k := key.(type) {
	case nil, bool, int64, float64, string:
		return k, true
	case int:
		return int64(k), true
	case Tuple:
		var b strings.Builder
		for _, item := range k {
			h, ok := hashKey(item)
			if !ok {
				return nil, false
			}
			fmt.Fprintf(&b, "%T:%v\x00", h, h)
		}
		return tupleKey(b.String()), true
	}
	return nil, false
}

// Decode reads one pickle from r (protocols 0 to 5, data only) and returns
// its value: nil, bool, int64 (or *big.Int beyond 64 bits), float64,
// string, []byte, *List, Tuple, *Map, *Set. It reads r to its end: bytes
// after the pickle's STOP are an error.
func Decode(r io.Reader, lim Limits) (any, error) {
	if r == nil {
		return nil, errors.New("pickle: Decode of a nil reader")
	}
	if lim.MaxInput <= 0 || lim.MaxValues <= 0 || lim.MaxString < 0 {
		return nil, fmt.Errorf("pickle: limits %+v: MaxInput and MaxValues must be positive (DefaultLimits suits a snapshot)", lim)
	}
	d := &decoder{r: bufio.NewReaderSize(io.LimitReader(r, lim.MaxInput+1), 1<<16), lim: lim, memo: map[int64]any{}}
	v, err := d.run()
	if err != nil {
		return nil, fmt.Errorf("%w (at byte %d)", err, d.pos)
	}
	if _, err := d.r.ReadByte(); err == nil {
		return nil, fmt.Errorf("pickle: bytes after the pickle's end (STOP at byte %d)", d.pos)
	} else if err != io.EOF {
		return nil, fmt.Errorf("pickle: %w", err)
	}
	return v, nil
}

// ErrObject is returned for an opcode that would construct a Python object
// (GLOBAL, REDUCE...): a data pickle never needs one.
var ErrObject = errors.New("pickle: constructs a Python object, which a data pickle never does")

type decoder struct {
	r      *bufio.Reader
	lim    Limits
	pos    int64
	stack  []any
	marks  []int
	memo   map[int64]any
	values int64
}

// mark is what MARK leaves on the stack (never a value).
type mark struct{}

func (d *decoder) readByte() (byte, error) {
	b, err := d.r.ReadByte()
	if err != nil {
		return 0, d.eof(err)
	}
	d.pos++
	if d.pos > d.lim.MaxInput {
		return 0, fmt.Errorf("pickle: longer than %d bytes", d.lim.MaxInput)
	}
	return b, nil
}

func (d *decoder) eof(err error) error {
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return errors.New("pickle: truncated (the file ends inside the pickle)")
	}
	return fmt.Errorf("pickle: %w", err)
}

// read returns the next n bytes; n is checked first, and the bytes are read
// in pieces, so memory grows only with bytes that arrive.
func (d *decoder) read(n int64) ([]byte, error) {
	if n < 0 || n > d.lim.MaxString {
		return nil, fmt.Errorf("pickle: a value of %d bytes, more than the %d allowed", n, d.lim.MaxString)
	}
	if d.pos+n > d.lim.MaxInput {
		return nil, fmt.Errorf("pickle: a value of %d bytes past the %d-byte limit", n, d.lim.MaxInput)
	}
	const piece = 1 << 20
	buf := make([]byte, 0, min(n, piece))
	for int64(len(buf)) < n {
		k := min(n-int64(len(buf)), piece)
		start := len(buf)
		buf = append(buf, make([]byte, k)...)
		if _, err := io.ReadFull(d.r, buf[start:]); err != nil {
			return nil, d.eof(err)
		}
		d.pos += k
	}
	return buf, nil
}

// countWidth is the size of the little-endian length before the bytes of
// each counted string or bytes opcode, indexed by opcode (an array: it is
// read for every string of the file).
var countWidth = [256]uint8{
	'X': 4, 0x8c: 1, 0x8d: 8, // BINUNICODE, SHORT_BINUNICODE, BINUNICODE8
	'T': 4, 'U': 1, // BINSTRING, SHORT_BINSTRING
	'B': 4, 'C': 1, 0x8e: 8, 0x96: 8, // BINBYTES, SHORT_BINBYTES, BINBYTES8, BYTEARRAY8
}

// counted reads the length of op's value, then its bytes (read checks the
// length against the limits first).
func (d *decoder) counted(op byte) ([]byte, error) {
	n, err := d.uint(int(countWidth[op]))
	if err != nil {
		return nil, err
	}
	return d.read(int64(min(n, math.MaxInt64)))
}

func (d *decoder) uint(n int) (uint64, error) {
	b, err := d.read(int64(n))
	if err != nil {
		return 0, err
	}
	var x uint64
	for i := n - 1; i >= 0; i-- {
		x = x<<8 | uint64(b[i])
	}
	return x, nil
}

// line reads up to a newline (protocol 0's text arguments), at most 1 MiB.
func (d *decoder) line() (string, error) {
	var b []byte
	for {
		c, err := d.readByte()
		if err != nil {
			return "", err
		}
		if c == '\n' {
			return string(b), nil
		}
		if len(b) >= 1<<20 {
			return "", errors.New("pickle: a text argument longer than 1 MiB")
		}
		b = append(b, c)
	}
}

func (d *decoder) push(v any) error {
	d.values++
	if d.values > d.lim.MaxValues {
		return fmt.Errorf("pickle: more than %d values", d.lim.MaxValues)
	}
	d.stack = append(d.stack, v)
	return nil
}

func (d *decoder) pop() (any, error) {
	if len(d.stack) == 0 || (len(d.marks) > 0 && len(d.stack) == d.marks[len(d.marks)-1]) {
		return nil, errors.New("pickle: an opcode takes a value from an empty stack")
	}
	v := d.stack[len(d.stack)-1]
	d.stack = d.stack[:len(d.stack)-1]
	return v, nil
}

func (d *decoder) top() (any, error) {
	if len(d.stack) == 0 || (len(d.marks) > 0 && len(d.stack) == d.marks[len(d.marks)-1]) {
		return nil, errors.New("pickle: an opcode needs a value on an empty stack")
	}
	return d.stack[len(d.stack)-1], nil
}

// popMark returns the values above the last MARK and removes them and it.
func (d *decoder) popMark() ([]any, error) {
	if len(d.marks) == 0 {
		return nil, errors.New("pickle: an opcode needs a MARK and there is none")
	}
	m := d.marks[len(d.marks)-1]
	d.marks = d.marks[:len(d.marks)-1]
	items := append([]any(nil), d.stack[m:]...)
	d.stack = d.stack[:m]
	return items, nil
}

// objectOps names the opcodes that construct objects or call functions.
var objectOps = map[byte]string{
	'c': "GLOBAL", 0x93: "STACK_GLOBAL", 'R': "REDUCE", 'b': "BUILD", 0x81: "NEWOBJ", 0x92: "NEWOBJ_EX",
	'i': "INST", 'o': "OBJ", 0x82: "EXT1", 0x83: "EXT2", 0x84: "EXT4", 'P': "PERSID", 'Q': "BINPERSID",
	0x97: "NEXT_BUFFER", 0x98: "READONLY_BUFFER",
}

func (d *decoder) run() (any, error) {
	for {
		op, err := d.readByte()
		if err != nil {
			return nil, err
		}
		if name, ok := objectOps[op]; ok {
			if op == 'c' { // name what it would have imported
				mod, _ := d.line()
				fn, _ := d.line()
				return nil, fmt.Errorf("%w (GLOBAL %s %s)", ErrObject, mod, fn)
			}
			return nil, fmt.Errorf("%w (%s)", ErrObject, name)
		}
		switch op {
		case 0x80: // PROTO
			v, err := d.readByte()
			if err != nil {
				return nil, err
			}
			if v > 5 {
				return nil, fmt.Errorf("pickle: protocol %d (at most 5 is known)", v)
			}
		case 0x95: // FRAME: a length, then the frame's opcodes inline
			if _, err := d.uint(8); err != nil {
				return nil, err
			}
		case '.': // STOP
			v, err := d.pop()
			if err != nil {
				return nil, err
			}
			if len(d.stack) != 0 || len(d.marks) != 0 {
				return nil, errors.New("pickle: values left on the stack at STOP")
			}
			return v, nil
		case 'N':
			err = d.push(nil)
		case 0x88:
			err = d.push(true)
		case 0x89:
			err = d.push(false)
		case 'J': // BININT
			var x uint64
			if x, err = d.uint(4); err == nil {
				err = d.push(int64(int32(uint32(x))))
			}
		case 'K': // BININT1
			var x uint64
			if x, err = d.uint(1); err == nil {
				err = d.push(int64(x))
			}
		case 'M': // BININT2
			var x uint64
			if x, err = d.uint(2); err == nil {
				err = d.push(int64(x))
			}
		case 0x8a, 0x8b: // LONG1, LONG4
			var n uint64
			if op == 0x8a {
				n, err = d.uint(1)
			} else {
				n, err = d.uint(4)
			}
			if err != nil {
				return nil, err
			}
			if n > 1<<16 {
				return nil, fmt.Errorf("pickle: an int of %d bytes", n)
			}
			var b []byte
			if b, err = d.read(int64(n)); err == nil {
				err = d.push(longValue(b))
			}
		case 'I', 'L': // INT, LONG (protocol 0)
			var s string
			if s, err = d.line(); err != nil {
				return nil, err
			}
			s = strings.TrimSuffix(s, "L")
			switch s {
			case "00":
				err = d.push(false)
			case "01":
				err = d.push(true)
			default:
				z, ok := new(big.Int).SetString(s, 10)
				if !ok {
					return nil, fmt.Errorf("pickle: %q is not an int", s)
				}
				err = d.push(intValue(z))
			}
		case 'G': // BINFLOAT
			var b []byte
			if b, err = d.read(8); err == nil {
				err = d.push(math.Float64frombits(binary.BigEndian.Uint64(b)))
			}
		case 'F': // FLOAT (protocol 0)
			var s string
			if s, err = d.line(); err != nil {
				return nil, err
			}
			f, perr := strconv.ParseFloat(s, 64)
			if perr != nil {
				return nil, fmt.Errorf("pickle: %q is not a float", s)
			}
			err = d.push(f)
		case 'X', 0x8c, 0x8d: // BINUNICODE, SHORT_BINUNICODE, BINUNICODE8
			var b []byte
			if b, err = d.counted(op); err == nil {
				err = d.push(unicodeString(b))
			}
		case 'T', 'U': // BINSTRING, SHORT_BINSTRING: Python 2 str, text
			var b []byte
			if b, err = d.counted(op); err == nil {
				err = d.push(string(b))
			}
		case 'B', 'C', 0x8e, 0x96: // BINBYTES, SHORT_BINBYTES, BINBYTES8, BYTEARRAY8
			var b []byte
			if b, err = d.counted(op); err == nil {
				err = d.push(b)
			}
		case 'S': // STRING (protocol 0): a quoted repr
			var line string
			if line, err = d.line(); err != nil {
				return nil, err
			}
			var str string
			if str, err = unquote(line); err == nil {
				err = d.push(str)
			}
		case 'V': // UNICODE (protocol 0, raw-unicode-escape: kept as read)
			var s string
			if s, err = d.line(); err == nil {
				err = d.push(s)
			}
		case ']':
			err = d.push(&List{})
		case ')':
			err = d.push(Tuple{})
		case '}':
			err = d.push(&Map{})
		case 0x8f: // EMPTY_SET
			err = d.push(&Set{})
		case '(':
			d.marks = append(d.marks, len(d.stack))
			if len(d.marks) > 1<<20 {
				return nil, errors.New("pickle: more than 2²⁰ open MARKs")
			}
		case 'l': // LIST
			var items []any
			if items, err = d.popMark(); err == nil {
				err = d.push(&List{Items: items})
			}
		case 't': // TUPLE
			var items []any
			if items, err = d.popMark(); err == nil {
				err = d.push(Tuple(items))
			}
		case 0x85, 0x86, 0x87: // TUPLE1, TUPLE2, TUPLE3
			n := int(op - 0x84)
			items := make(Tuple, n)
			for i := n - 1; i >= 0; i-- {
				if items[i], err = d.pop(); err != nil {
					return nil, err
				}
			}
			err = d.push(items)
		case 'd': // DICT
			var items []any
			if items, err = d.popMark(); err != nil {
				return nil, err
			}
			m := &Map{}
			if err = setItems(m, items); err == nil {
				err = d.push(m)
			}
		case 0x91: // FROZENSET
			var items []any
			if items, err = d.popMark(); err == nil {
				err = d.push(&Set{Items: items})
			}
		case 'a': // APPEND
			var v, target any
			if v, err = d.pop(); err != nil {
				return nil, err
			}
			if target, err = d.top(); err != nil {
				return nil, err
			}
			l, ok := target.(*List)
			if !ok {
				return nil, fmt.Errorf("pickle: APPEND to a %s", typeName(target))
			}
			l.Items = append(l.Items, v)
		case 'e': // APPENDS
			var items []any
			var l *List
			if items, l, err = marked[*List](d, "APPENDS"); err == nil {
				l.Items = append(l.Items, items...)
			}
		case 's': // SETITEM
			var k, v, target any
			if v, err = d.pop(); err != nil {
				return nil, err
			}
			if k, err = d.pop(); err != nil {
				return nil, err
			}
			if target, err = d.top(); err != nil {
				return nil, err
			}
			m, ok := target.(*Map)
			if !ok {
				return nil, fmt.Errorf("pickle: SETITEM on a %s", typeName(target))
			}
			err = m.set(k, v)
		case 'u': // SETITEMS
			var items []any
			var m *Map
			if items, m, err = marked[*Map](d, "SETITEMS"); err == nil {
				err = setItems(m, items)
			}
		case 0x90: // ADDITEMS
			var items []any
			var set *Set
			if items, set, err = marked[*Set](d, "ADDITEMS"); err == nil {
				set.Items = append(set.Items, items...)
			}
		case '0': // POP
			if len(d.stack) > 0 && (len(d.marks) == 0 || d.marks[len(d.marks)-1] < len(d.stack)) {
				d.stack = d.stack[:len(d.stack)-1]
			} else if len(d.marks) > 0 {
				d.marks = d.marks[:len(d.marks)-1] // POP of a MARK
			} else {
				return nil, errors.New("pickle: POP on an empty stack")
			}
		case '1': // POP_MARK
			_, err = d.popMark()
		case '2': // DUP
			var v any
			if v, err = d.top(); err == nil {
				err = d.push(v)
			}
		case 0x94: // MEMOIZE
			var v any
			if v, err = d.top(); err == nil {
				d.memo[int64(len(d.memo))] = v
			}
		case 'p', 'q', 'r': // PUT, BINPUT, LONG_BINPUT
			var idx int64
			if idx, err = d.memoIndex(op); err != nil {
				return nil, err
			}
			var v any
			if v, err = d.top(); err == nil {
				d.memo[idx] = v
			}
		case 'g', 'h', 'j': // GET, BINGET, LONG_BINGET
			var idx int64
			if idx, err = d.memoIndex(op); err != nil {
				return nil, err
			}
			v, ok := d.memo[idx]
			if !ok {
				return nil, fmt.Errorf("pickle: the memo has no entry %d", idx)
			}
			err = d.push(v)
		default:
			return nil, fmt.Errorf("pickle: unknown opcode 0x%02x", op)
		}
		if err != nil {
			return nil, err
		}
		if int64(len(d.memo)) > d.lim.MaxValues {
			return nil, fmt.Errorf("pickle: more than %d memo entries", d.lim.MaxValues)
		}
	}
}

// marked pops the values above the last MARK and returns them with the
// container below them, which must be a T (the opcode is named in the
// error).
func marked[T any](d *decoder, opcode string) ([]any, T, error) {
	var zero T
	items, err := d.popMark()
	if err != nil {
		return nil, zero, err
	}
	top, err := d.top()
	if err != nil {
		return nil, zero, err
	}
	c, ok := top.(T)
	if !ok {
		return nil, zero, fmt.Errorf("pickle: %s on a %s", opcode, typeName(top))
	}
	return items, c, nil
}

func (d *decoder) memoIndex(op byte) (int64, error) {
	switch op {
	case 'p', 'g':
		s, err := d.line()
		if err != nil {
			return 0, err
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("pickle: %q is not a memo index", s)
		}
		return n, nil
	case 'q', 'h':
		n, err := d.uint(1)
		return int64(n), err
	}
	n, err := d.uint(4)
	return int64(n), err
}

func setItems(m *Map, items []any) error {
	if len(items)%2 != 0 {
		return errors.New("pickle: a dict's items are not key and value pairs")
	}
	for i := 0; i < len(items); i += 2 {
		if err := m.set(items[i], items[i+1]); err != nil {
			return err
		}
	}
	return nil
}

// longValue is a little-endian two's complement int: an int64 where it fits.
func longValue(b []byte) any {
	if len(b) == 0 {
		return int64(0)
	}
	be := make([]byte, len(b))
	for i, c := range b {
		be[len(b)-1-i] = c
	}
	z := new(big.Int).SetBytes(be)
	if b[len(b)-1]&0x80 != 0 {
		z.Sub(z, new(big.Int).Lsh(big.NewInt(1), uint(8*len(b))))
	}
	return intValue(z)
}

func intValue(z *big.Int) any {
	if z.IsInt64() {
		return z.Int64()
	}
	return z
}

// unicodeString turns a pickle's UTF-8 into a Go string; lone surrogates
// (which Python writes with surrogatepass) become U+FFFD.
func unicodeString(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}

// unquote reads protocol 0's STRING argument: a Python repr in single or
// double quotes.
func unquote(s string) (string, error) {
	if len(s) < 2 || (s[0] != '\'' && s[0] != '"') || s[len(s)-1] != s[0] {
		return "", fmt.Errorf("pickle: the STRING argument %q is not quoted", s)
	}
	inner := s[1 : len(s)-1]
	if s[0] == '\'' {
		inner = strings.ReplaceAll(strings.ReplaceAll(inner, `\'`, `'`), `"`, `\"`)
	}
	out, err := strconv.Unquote(`"` + inner + `"`)
	if err != nil {
		return "", fmt.Errorf("pickle: the STRING argument %q: %v", s, err)
	}
	return out, nil
}

func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "None"
	case *List:
		return "list"
	case *Map:
		return "dict"
	case Tuple:
		return "tuple"
	case *Set:
		return "set"
	case string:
		return "str"
	case []byte:
		return "bytes"
	case int64, *big.Int:
		return "int"
	case float64:
		return "float"
	case bool:
		return "bool"
	}
	return fmt.Sprintf("%T", v)
}
