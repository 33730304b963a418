package pickle

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"math/bits"
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
//     makes, and refuses bytes after STOP;
//   - it reads through a buffer and keeps no copy of the input; the short
//     strings of a pickle (keys, file and function names) are made once
//     each and shared (at most 2¹⁸ of them, 32 MiB in all); the memo costs
//     four bytes a slot (memo.go); and DecodeStore's StoreFunc may fold or
//     leave out values as they are stored (store.go), so that what is kept
//     of a large pickle is what its reader needs.

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
	index        map[any]int // built past smallMap keys; below, Get scans Keys
}

// smallMap is the size up to which a Map has no index: a memory snapshot
// holds millions of dicts of three to twelve keys, for which a scan is as
// fast as a Go map and takes no memory.
const smallMap = 12

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
	i := m.find(k)
	if i < 0 {
		return nil, false
	}
	return m.Values[i], true
}

// find returns the position of the key whose hashKey is k, or -1.
func (m *Map) find(k any) int {
	if m.index != nil {
		if i, ok := m.index[k]; ok {
			return i
		}
		return -1
	}
	for i, key := range m.Keys {
		if t, ok := key.(Tuple); ok {
			if tk, _ := hashKey(t); tk == k {
				return i
			}
			continue
		}
		// Keys are scalars here, and hashKey keeps a scalar as it is
		// (decoded ints are int64 already).
		if key == k {
			return i
		}
	}
	return -1
}

// Set stores value under key, as SETITEM does: a key already there keeps
// its place, and a key that is not hashable is refused.
func (m *Map) Set(key, value any) error { return m.set(key, value) }

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
		return fmt.Errorf("pickle: a dict key of type %s is not hashable", TypeName(key))
	}
	if i := m.find(k); i >= 0 {
		m.Values[i] = value
		return nil
	}
	if m.index == nil && len(m.Keys) == smallMap {
		m.index = make(map[any]int, 2*smallMap)
		for i, key := range m.Keys {
			hk, _ := hashKey(key)
			m.index[hk] = i
		}
	}
	if m.index != nil {
		m.index[k] = len(m.Keys)
	}
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
	return DecodeStore(r, lim, nil)
}

// DecodeStore is Decode with a StoreFunc that sees each value as it goes
// into a list, a dict or a set, and may put another in its place or leave
// it out (store.go). A nil store is Decode.
func DecodeStore(r io.Reader, lim Limits, store StoreFunc) (any, error) {
	if r == nil {
		return nil, errors.New("pickle: Decode of a nil reader")
	}
	if lim.MaxInput <= 0 || lim.MaxValues <= 0 || lim.MaxString < 0 {
		return nil, fmt.Errorf("pickle: limits %+v: MaxInput and MaxValues must be positive (DefaultLimits suits a snapshot)", lim)
	}
	d := newDecoder(r, lim, store)
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

func newDecoder(r io.Reader, lim Limits, store StoreFunc) *decoder {
	d := &decoder{r: bufio.NewReaderSize(io.LimitReader(r, lim.MaxInput+1), 1<<16), lim: lim, strs: map[string]any{}, store: store}
	d.memo.init()
	return d
}

// ErrObject is returned for an opcode that would construct a Python object
// (GLOBAL, REDUCE...): a data pickle never needs one.
var ErrObject = errors.New("pickle: constructs a Python object, which a data pickle never does")

type decoder struct {
	r      *bufio.Reader
	lim    Limits
	pos    int64
	stack  []any
	marks  []int // stack heights at each open MARK
	memo   memo
	values int64

	scratch []byte // the bytes of the last short string read

	// strs shares the strings of the pickle that are short, up to
	// internMaxCount of them and internMaxBytes in all: a snapshot names
	// the same keys, files and functions millions of times.
	strs     map[string]any
	strBytes int64

	// With a StoreFunc (store.go).
	store    StoreFunc
	places   []place // where each value on the stack goes
	path     []Step
	item     Item
	one      [2]any
	dropped  map[any]int64   // lists and sets: items the StoreFunc left out
	memoOf   map[any]int64   // memoized lists, dicts and sets: their first memo slot
	memoMore map[any][]int64 // their other slots, if any
}

// Interned strings: short ones only, and a bounded number.
const (
	internMaxLen   = 1 << 10
	internMaxCount = 1 << 18
	internMaxBytes = 32 << 20
)

// scratchMax is the longest string read into the decoder's own buffer;
// longer ones are read into their own, in pieces.
const scratchMax = 64 << 10

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

// check refuses a value of n bytes beyond the limits, before anything is
// read or made.
func (d *decoder) check(n int64) error {
	if n < 0 || n > d.lim.MaxString {
		return fmt.Errorf("pickle: a value of %d bytes, more than the %d allowed", n, d.lim.MaxString)
	}
	if d.pos+n > d.lim.MaxInput {
		return fmt.Errorf("pickle: a value of %d bytes past the %d-byte limit", n, d.lim.MaxInput)
	}
	return nil
}

// read returns the next n bytes in a slice of their own; n is checked
// first, and the bytes are read in pieces, so memory grows only with bytes
// that arrive.
func (d *decoder) read(n int64) ([]byte, error) {
	if err := d.check(n); err != nil {
		return nil, err
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

// readShort is read for values used at once: up to scratchMax bytes it
// returns the decoder's own buffer, valid until the next read.
func (d *decoder) readShort(n int64) ([]byte, error) {
	if n > scratchMax {
		return d.read(n)
	}
	if err := d.check(n); err != nil {
		return nil, err
	}
	if int64(cap(d.scratch)) < n {
		d.scratch = make([]byte, max(n, 256))
	}
	b := d.scratch[:n]
	if _, err := io.ReadFull(d.r, b); err != nil {
		return nil, d.eof(err)
	}
	d.pos += n
	return b, nil
}

// countWidth is the size of the little-endian length before the bytes of
// each counted string or bytes opcode, indexed by opcode (an array: it is
// read for every string of the file).
var countWidth = [256]uint8{
	'X': 4, 0x8c: 1, 0x8d: 8, // BINUNICODE, SHORT_BINUNICODE, BINUNICODE8
	'T': 4, 'U': 1, // BINSTRING, SHORT_BINSTRING
	'B': 4, 'C': 1, 0x8e: 8, 0x96: 8, // BINBYTES, SHORT_BINBYTES, BINBYTES8, BYTEARRAY8
}

// count reads the length of op's value (checked against the limits when
// the value is read).
func (d *decoder) count(op byte) (int64, error) {
	n, err := d.uint(int(countWidth[op]))
	return int64(min(n, math.MaxInt64)), err
}

// uint reads an n-byte little-endian unsigned int (n <= 8).
func (d *decoder) uint(n int) (uint64, error) {
	if err := d.check(int64(n)); err != nil {
		return 0, err
	}
	b, err := d.r.Peek(n) // in the reader's buffer: nothing copied
	if err != nil {
		return 0, d.eof(err)
	}
	var x uint64
	for i := n - 1; i >= 0; i-- {
		x = x<<8 | uint64(b[i])
	}
	d.r.Discard(n)
	d.pos += int64(n)
	return x, nil
}

// text is the str value of a pickle's UTF-8, shared with every equal short
// string before it.
func (d *decoder) text(b []byte) any {
	short := len(b) <= internMaxLen
	if short {
		if v, ok := d.strs[string(b)]; ok { // no allocation: the compiler reads b in place
			return v
		}
	}
	s := unicodeString(b)
	var v any = s
	if short && len(d.strs) < internMaxCount && d.strBytes+int64(len(b)) <= internMaxBytes {
		key := s
		if len(s) != len(b) || s != string(b) {
			key = string(b) // invalid UTF-8: the key is the bytes as read
		}
		d.strs[key] = v
		d.strBytes += int64(len(b))
	}
	return v
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
	if d.store != nil {
		d.places = append(d.places, d.placeOf(len(d.stack), v))
	}
	d.stack = append(d.stack, v)
	return nil
}

func (d *decoder) pop() (any, error) {
	if len(d.stack) == 0 || (len(d.marks) > 0 && len(d.stack) == d.marks[len(d.marks)-1]) {
		return nil, errors.New("pickle: an opcode takes a value from an empty stack")
	}
	v := d.stack[len(d.stack)-1]
	d.truncate(len(d.stack) - 1)
	return v, nil
}

func (d *decoder) top() (any, error) {
	if len(d.stack) == 0 || (len(d.marks) > 0 && len(d.stack) == d.marks[len(d.marks)-1]) {
		return nil, errors.New("pickle: an opcode needs a value on an empty stack")
	}
	return d.stack[len(d.stack)-1], nil
}

// pushMark opens a MARK.
func (d *decoder) pushMark() error {
	if d.store != nil && len(d.stack) > 0 {
		d.places[len(d.stack)-1].batch++
	}
	d.marks = append(d.marks, len(d.stack))
	if len(d.marks) > 1<<20 {
		return errors.New("pickle: more than 2²⁰ open MARKs")
	}
	return nil
}

// dropMark closes the last MARK and returns its height.
func (d *decoder) dropMark() (int, error) {
	if len(d.marks) == 0 {
		return 0, errors.New("pickle: an opcode needs a MARK and there is none")
	}
	m := d.marks[len(d.marks)-1]
	d.marks = d.marks[:len(d.marks)-1]
	if d.store != nil && m > 0 {
		d.places[m-1].batch--
	}
	return m, nil
}

// truncate removes the values above height m.
func (d *decoder) truncate(m int) {
	clear(d.stack[m:])
	d.stack = d.stack[:m]
	if d.store != nil {
		d.places = d.places[:m]
	}
}

// popMark returns the values above the last MARK and removes them and it.
func (d *decoder) popMark() ([]any, error) {
	m, err := d.dropMark()
	if err != nil {
		return nil, err
	}
	items := append([]any(nil), d.stack[m:]...)
	d.truncate(m)
	return items, nil
}

// storeMarked stores the values above the last MARK into the T under it
// (APPENDS, SETITEMS, ADDITEMS) with store, and drops them from the stack.
func storeMarked[T any](d *decoder, opcode string, store func(*decoder, T, int, []any) error) error {
	m, err := d.dropMark()
	if err != nil {
		return err
	}
	defer d.truncate(m)
	if m == 0 || (len(d.marks) > 0 && d.marks[len(d.marks)-1] == m) {
		return errors.New("pickle: an opcode needs a value on an empty stack")
	}
	top := d.stack[m-1]
	c, ok := top.(T)
	if !ok {
		return fmt.Errorf("pickle: %s on a %s", opcode, TypeName(top))
	}
	return store(d, c, d.depthOf(m-1), d.stack[m:])
}

// popOne pops the n values of one APPEND or SETITEM into d.one, in the
// order they were pushed, and returns the container under them: a T, or
// the error "pickle: <what> a <type>".
func popOne[T any](d *decoder, n int, what string) (c T, err error) {
	for i := n - 1; i >= 0; i-- {
		if d.one[i], err = d.pop(); err != nil {
			return c, err
		}
	}
	target, err := d.top()
	if err != nil {
		return c, err
	}
	c, ok := target.(T)
	if !ok {
		return c, fmt.Errorf("pickle: %s a %s", what, TypeName(target))
	}
	return c, nil
}

// objectOps names the opcodes that construct objects or call functions
// (an array: it is read for every opcode of the file).
var objectOps = [256]string{
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
		if name := objectOps[op]; name != "" {
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
			if b, err = d.readShort(int64(n)); err == nil {
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
			var x uint64
			if x, err = d.uint(8); err == nil {
				// uint read little-endian; BINFLOAT is big-endian.
				err = d.push(math.Float64frombits(bits.ReverseBytes64(x)))
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
			var n int64
			if n, err = d.count(op); err != nil {
				return nil, err
			}
			var b []byte
			if b, err = d.readShort(n); err == nil {
				err = d.push(d.text(b))
			}
		case 'T', 'U': // BINSTRING, SHORT_BINSTRING: Python 2 str, text
			var n int64
			if n, err = d.count(op); err != nil {
				return nil, err
			}
			var b []byte
			if b, err = d.readShort(n); err == nil {
				err = d.push(string(b))
			}
		case 'B', 'C', 0x8e, 0x96: // BINBYTES, SHORT_BINBYTES, BINBYTES8, BYTEARRAY8
			var n int64
			if n, err = d.count(op); err != nil {
				return nil, err
			}
			var b []byte
			if b, err = d.read(n); err == nil {
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
			err = d.pushMark()
		case 'l', 'd', 0x91: // LIST, DICT, FROZENSET: a new container of the values above the MARK
			err = d.build(op)
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
		case 'a': // APPEND
			var l *List
			if l, err = popOne[*List](d, 1, "APPEND to"); err == nil {
				err = d.storeList(l, d.depthOf(len(d.stack)-1), d.one[:1])
			}
			d.one[0] = nil
		case 'e': // APPENDS
			err = storeMarked(d, "APPENDS", (*decoder).storeList)
		case 's': // SETITEM
			var m *Map
			if m, err = popOne[*Map](d, 2, "SETITEM on"); err == nil {
				err = d.storeMap(m, d.depthOf(len(d.stack)-1), d.one[:2])
			}
			d.one[0], d.one[1] = nil, nil
		case 'u': // SETITEMS
			err = storeMarked(d, "SETITEMS", (*decoder).storeMap)
		case 0x90: // ADDITEMS
			err = storeMarked(d, "ADDITEMS", (*decoder).storeSet)
		case '0': // POP
			if len(d.stack) > 0 && (len(d.marks) == 0 || d.marks[len(d.marks)-1] < len(d.stack)) {
				d.truncate(len(d.stack) - 1)
			} else if len(d.marks) > 0 {
				_, _ = d.dropMark() // POP of a MARK
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
				d.memoize(d.memo.count(), v)
			}
		case 'p', 'q', 'r': // PUT, BINPUT, LONG_BINPUT
			var idx int64
			if idx, err = d.memoIndex(op); err != nil {
				return nil, err
			}
			var v any
			if v, err = d.top(); err == nil {
				d.memoize(idx, v)
			}
		case 'g', 'h', 'j': // GET, BINGET, LONG_BINGET
			var idx int64
			if idx, err = d.memoIndex(op); err != nil {
				return nil, err
			}
			var v any
			if v, err = d.memo.get(idx); err == nil {
				err = d.push(v)
			}
		default:
			return nil, fmt.Errorf("pickle: unknown opcode 0x%02x", op)
		}
		if err != nil {
			return nil, err
		}
		if d.memo.count() > d.lim.MaxValues {
			return nil, fmt.Errorf("pickle: more than %d memo entries", d.lim.MaxValues)
		}
	}
}

// build makes the list, dict or frozenset of the values above the last
// MARK (LIST, DICT, FROZENSET), through the StoreFunc.
func (d *decoder) build(op byte) error {
	m, err := d.dropMark()
	if err != nil {
		return err
	}
	items := d.stack[m:]
	var c any
	switch op {
	case 'l':
		c = &List{}
	case 'd':
		c = &Map{}
	default:
		c = &Set{}
	}
	depth := -1
	if d.store != nil {
		depth = d.pathAt(m, d.placeOf(m, c)) // where the new container will go
	}
	switch c := c.(type) {
	case *List:
		err = d.storeList(c, depth, items)
	case *Map:
		err = d.storeMap(c, depth, items)
	case *Set:
		err = d.storeSet(c, depth, items)
	}
	d.truncate(m)
	if err != nil {
		return err
	}
	return d.push(c)
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

// longValue is a little-endian two's complement int: an int64 where it fits.
func longValue(b []byte) any {
	if len(b) == 0 {
		return int64(0)
	}
	if len(b) <= 8 { // sign-extended, without a big.Int (snapshots write addresses so)
		var x uint64
		for i := len(b) - 1; i >= 0; i-- {
			x = x<<8 | uint64(b[i])
		}
		shift := uint(64 - 8*len(b))
		return int64(x<<shift) >> shift
	}
	return intValue(bigLong(b))
}

// bigLong is longValue of a non-empty b as a big.Int.
func bigLong(b []byte) *big.Int {
	be := make([]byte, len(b))
	for i, c := range b {
		be[len(b)-1-i] = c
	}
	z := new(big.Int).SetBytes(be)
	if b[len(b)-1]&0x80 != 0 {
		z.Sub(z, new(big.Int).Lsh(big.NewInt(1), uint(8*len(b))))
	}
	return z
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

// TypeName names v's Python type as the decoder's errors do: "list",
// "dict", "int"... A value a StoreFunc put in place of a list or dict
// names the type it stands for with a method TypeName() string.
func TypeName(v any) string {
	switch v := v.(type) {
	case interface{ TypeName() string }:
		return v.TypeName()
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
