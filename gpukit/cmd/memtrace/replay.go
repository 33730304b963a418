package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"

	"github.com/gpumem/course/gpukit/alloc"
)

// Error strings of the output lines.
const (
	errOOM          = "oom"
	errUnknownID    = "unknown id"
	errDuplicateID  = "duplicate id"
	errBadFraction  = "invalid fraction"
	errBadOp        = "bad op"
	maxStreamNumber = math.MaxInt32
)

// statKeys are the statistics of every output line, in this order.
var statKeys = [...]string{
	"allocated_bytes.all.current",
	"allocated_bytes.all.peak",
	"reserved_bytes.all.current",
	"reserved_bytes.all.peak",
	"active_bytes.all.current",
	"requested_bytes.all.current",
	"inactive_split_bytes.all.current",
	"allocation.all.current",
	"segment.all.current",
	"inactive_split.all.current",
	"allocated_bytes.small_pool.current",
	"allocated_bytes.large_pool.current",
	"reserved_bytes.small_pool.current",
	"reserved_bytes.large_pool.current",
	"num_device_alloc",
	"num_device_free",
	"num_alloc_retries",
	"num_ooms",
}

// statPrefixes are the quoted keys with their separators, built once.
var statPrefixes = func() [len(statKeys)][]byte {
	var out [len(statKeys)][]byte
	for i, k := range statKeys {
		sep := ","
		if i == 0 {
			sep = "{"
		}
		out[i] = []byte(sep + strconv.Quote(k) + ":")
	}
	return out
}()

// op is one input line. Pointers tell a missing field from a zero one.
type op struct {
	Op       *string  `json:"op"`
	ID       *string  `json:"id"`
	Size     *int64   `json:"size"`
	Stream   *int64   `json:"stream"`
	Fraction *float64 `json:"fraction"`
}

// replayer applies trace lines to one allocator.
type replayer struct {
	a    *alloc.Allocator
	mem  *memory                 // nil on a device's allocator (newDeviceReplayer)
	live map[string]*alloc.Block // nil value: a live size-0 allocation

	stats   [len(statKeys)]int64
	statsOK bool // stats holds the allocator's current values

	badOps  int // malformed lines
	refused int // well-formed operations that failed (oom, unknown id, ...)
}

func newReplayer(capacity int64, cfg alloc.Config) *replayer {
	mem := newMemory(capacity)
	return &replayer{a: alloc.New(mem, cfg, 0), mem: mem, live: make(map[string]*alloc.Block)}
}

// newDeviceReplayer replays on the allocator of a gpukit device (--device).
func newDeviceReplayer(a *alloc.Allocator) *replayer {
	return &replayer{a: a, live: make(map[string]*alloc.Block)}
}

// badOpError explains why a line is malformed.
type badOpError struct{ reason string }

func (e *badOpError) Error() string { return e.reason }

func bad(format string, args ...any) error { return &badOpError{fmt.Sprintf(format, args...)} }

// parse reads and validates one line.
func parse(line []byte) (op, error) {
	var o op
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return o, bad("empty line")
	}
	if bytes.HasPrefix(line, utf8BOM) {
		return o, bad("a UTF-8 byte-order mark inside the input (only the first line may start with one)")
	}
	if line[0] != '{' {
		return o, bad("not a JSON object")
	}
	if fo, ok := fastParse(line); ok {
		return validate(fo)
	}
	o, err := strictParse(line)
	if err != nil {
		return o, bad("%v", err)
	}
	return validate(o)
}

// validKeys lists the keys of an input line, for error messages.
const validKeys = `"op", "id", "size", "stream" and "fraction"`

// strictParse decodes one JSON object with encoding/json, refusing what
// encoding/json alone would let through: unknown keys (it matches keys
// case-insensitively and ignores the rest, so "SIZE" and "strem" would
// pass), repeated keys (it keeps the last) and anything after the object.
func strictParse(line []byte) (op, error) {
	var o op
	dec := json.NewDecoder(bytes.NewReader(line))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return o, errors.New("not a JSON object")
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return o, err
		}
		key, _ := tok.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return o, err
		}
		if seen[key] {
			return o, fmt.Errorf("key %q appears twice", key)
		}
		seen[key] = true
		var dst any
		switch key {
		case "op":
			dst = &o.Op
		case "id":
			dst = &o.ID
		case "size":
			dst = &o.Size
		case "stream":
			dst = &o.Stream
		case "fraction":
			dst = &o.Fraction
		default:
			return o, fmt.Errorf("unknown key %q; valid keys are %s (lower case)", key, validKeys)
		}
		if err := json.Unmarshal(raw, dst); err != nil {
			return o, fmt.Errorf("key %q: %v", key, err)
		}
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return o, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return o, errors.New("text after the JSON object")
	}
	return o, nil
}

// validate checks the fields an op needs.
func validate(o op) (op, error) {
	if o.Op == nil {
		return o, bad(`missing "op"`)
	}
	switch *o.Op {
	case "alloc":
		if o.ID == nil || *o.ID == "" {
			return o, bad(`alloc needs a non-empty string "id"`)
		}
		if o.Size == nil {
			return o, bad(`alloc needs an integer "size"`)
		}
		if *o.Size < 0 {
			return o, bad("negative size %d", *o.Size)
		}
		if o.Stream != nil && (*o.Stream < 0 || *o.Stream > maxStreamNumber) {
			return o, bad("stream %d out of range", *o.Stream)
		}
	case "free":
		if o.ID == nil || *o.ID == "" {
			return o, bad(`free needs a non-empty string "id"`)
		}
	case "set_fraction":
		if o.Fraction == nil {
			return o, bad(`set_fraction needs a number "fraction"`)
		}
	case "empty_cache", "reset_peak":
	default:
		return o, bad("unknown op %q", *o.Op)
	}
	return o, nil
}

// result is the outcome of one line.
type result struct {
	err    string // "" when ok
	offset int64
	hasOff bool
	detail error // why a line is a bad op
}

// apply runs one parsed line.
func (r *replayer) apply(o op) result {
	switch *o.Op {
	case "alloc":
		id := *o.ID
		if _, dup := r.live[id]; dup {
			return result{err: errDuplicateID}
		}
		if *o.Size == 0 {
			r.live[id] = nil
			return result{}
		}
		var s alloc.Stream
		if o.Stream != nil {
			s = alloc.Stream(*o.Stream)
		}
		r.statsOK = false
		b, err := r.a.Malloc(*o.Size, s)
		if err != nil {
			var oom *alloc.OutOfMemoryError
			if errors.As(err, &oom) {
				return result{err: errOOM}
			}
			// Any other refusal of the allocator (a size it cannot
			// represent) is reported as an OOM too: the request
			// cannot be served and nothing was allocated.
			return result{err: errOOM}
		}
		r.live[id] = b
		return result{offset: b.Offset(), hasOff: true}
	case "free":
		b, ok := r.live[*o.ID]
		if !ok {
			return result{err: errUnknownID}
		}
		delete(r.live, *o.ID)
		if b != nil {
			r.statsOK = false
			r.a.Free(b)
		}
		return result{}
	case "empty_cache":
		r.statsOK = false
		r.a.EmptyCache()
		return result{}
	case "set_fraction":
		f := *o.Fraction
		if !(f >= 0 && f <= 1) {
			return result{err: errBadFraction}
		}
		if err := r.a.SetMemoryFraction(f); err != nil {
			return result{err: errBadFraction}
		}
		return result{}
	case "reset_peak":
		r.statsOK = false
		r.a.ResetPeakStats()
		return result{}
	}
	panic("unreachable: parse accepted op " + *o.Op)
}

// step handles input line i and appends its output line to out.
func (r *replayer) step(out []byte, i int, line []byte) ([]byte, result) {
	if r.mem != nil {
		r.mem.clock = float64(i)
	}
	o, err := parse(line)
	var res result
	if err != nil {
		res = result{err: errBadOp, detail: err}
	} else {
		res = r.apply(o)
	}
	return r.appendLine(out, i, res), res
}

func (r *replayer) refreshStats() {
	if r.statsOK {
		return
	}
	for i, k := range statKeys {
		r.stats[i], _ = r.a.Stat(k)
	}
	r.statsOK = true
}

// appendLine writes {"i":…,"ok":…,"error":…,"offset":…,"stats":{…}}.
func (r *replayer) appendLine(out []byte, i int, res result) []byte {
	out = append(out, `{"i":`...)
	out = strconv.AppendInt(out, int64(i), 10)
	if res.err == "" {
		out = append(out, `,"ok":true,"error":null,"offset":`...)
	} else {
		out = append(out, `,"ok":false,"error":"`...)
		out = append(out, res.err...) // constant strings, nothing to escape
		out = append(out, `","offset":`...)
	}
	if res.hasOff {
		out = strconv.AppendInt(out, res.offset, 10)
	} else {
		out = append(out, "null"...)
	}
	out = append(out, `,"stats":`...)
	r.refreshStats()
	for k, v := range r.stats {
		out = append(out, statPrefixes[k]...)
		out = strconv.AppendInt(out, v, 10)
	}
	out = append(out, "}}\n"...)
	return out
}
