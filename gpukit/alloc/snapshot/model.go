package snapshot

import (
	"bufio"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"math/big"
	"strconv"
	"strings"

	"github.com/gpumem/course/gpukit/alloc"
	"github.com/gpumem/course/gpukit/internal/pickle"
)

// Snapshot is what torch.cuda.memory._dump_snapshot() writes: the final
// segments and, per device, the trace of allocator events.
type Snapshot struct {
	Segments []Segment
	// Traces holds device_traces: one list of events per device index.
	Traces [][]Event
	// Settings are the allocator's, from allocator_settings; Recorded is
	// false when the snapshot has none (PyTorch before 2.6 wrote none), and
	// Config is then PyTorch's default.
	Settings Settings
}

// Settings is a snapshot's allocator_settings.
type Settings struct {
	Recorded bool
	Conf     string       // PYTORCH_CUDA_ALLOC_CONF as the process saw it
	Config   alloc.Config // the settings the replay uses
}

// Segment is one segment of the final state (a run of mapped pages, for an
// expandable segment).
type Segment struct {
	Device     int
	Address    uint64
	TotalSize  int64
	Stream     int64
	Small      bool // segment_type "small"
	Expandable bool
	Blocks     []Block
}

// Block is one block of a final segment.
type Block struct {
	Address   uint64
	Size      int64
	Requested int64
	State     string // active_allocated, active_pending_free or inactive
}

// Live reports whether the block is in use or waiting for its streams.
func (b Block) Live() bool {
	return b.State == alloc.StateActiveAllocated || b.State == alloc.StateActivePendingFree
}

// Event is one entry of a device trace.
type Event struct {
	Action string // alloc, free_requested, free_completed, segment_alloc, ...
	Addr   uint64 // for oom: the device's free bytes
	Size   int64
	Stream int64
	Frames []Frame
}

// Frame is one Python frame PyTorch recorded with an event.
type Frame struct {
	Filename string
	Line     int64
	Name     string
}

func (f Frame) String() string {
	return f.Filename + ":" + strconv.FormatInt(f.Line, 10) + " " + f.Name
}

// Limits of Read: a snapshot of a few GB decodes; a hostile one allocates
// nothing beyond these.
var Limits = pickle.Limits{MaxInput: 8 << 30, MaxValues: 1 << 28, MaxString: 1 << 24}

// gzipMagic starts a gzip file.
var gzipMagic = []byte{0x1f, 0x8b}

// Read decodes a snapshot pickle, gzip-compressed or not, with the
// data-only reader of gpukit/internal/pickle (nothing in the file is run)
// and the given limits.
func Read(r io.Reader, lim pickle.Limits) (*Snapshot, error) {
	v, err := Decode(r, lim, nil)
	if err != nil {
		return nil, err
	}
	return FromValue(v)
}

// Decode is the first half of Read: it decodes the pickle, gzip-compressed
// or not, with pickle.DecodeStore and store (nil keeps every value as it
// is), and gives Read's errors. FromValue is the second half.
func Decode(r io.Reader, lim pickle.Limits, store pickle.StoreFunc) (any, error) {
	if r == nil {
		return nil, errors.New("snapshot: Read of a nil reader")
	}
	br := bufio.NewReader(r)
	if head, _ := br.Peek(2); len(head) == 2 && head[0] == gzipMagic[0] && head[1] == gzipMagic[1] {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("snapshot: gzip: %w", err)
		}
		defer zr.Close()
		r = zr
	} else {
		r = br
	}
	v, err := pickle.DecodeStore(r, lim, store)
	if err != nil {
		return nil, fmt.Errorf("snapshot: not a memory snapshot: %w", err)
	}
	return v, nil
}

// FromValue builds a Snapshot from a decoded pickle: a dict with
// "segments" and "device_traces" (keys it does not know are ignored).
func FromValue(v any) (*Snapshot, error) {
	top, ok := v.(*pickle.Map)
	if !ok {
		return nil, fmt.Errorf("snapshot: not a memory snapshot: the pickle holds a %s, not a dict", kind(v))
	}
	s := &Snapshot{}
	segs, err := listAt(top, "segments", "snapshot")
	if err != nil {
		return nil, err
	}
	for i, sv := range segs {
		seg, err := segmentOf(sv)
		if err != nil {
			return nil, fmt.Errorf("snapshot: segments[%d]: %w", i, err)
		}
		s.Segments = append(s.Segments, seg)
	}
	traces, err := listAt(top, "device_traces", "snapshot")
	if err != nil {
		return nil, err
	}
	if len(traces) > MaxDevices {
		return nil, fmt.Errorf("snapshot: device_traces has %d devices, more than %d", len(traces), MaxDevices)
	}
	for d, tv := range traces {
		tl, ok := tv.(*pickle.List)
		if !ok {
			return nil, fmt.Errorf("snapshot: device_traces[%d] is a %s, not a list", d, kind(tv))
		}
		evs := make([]Event, 0, len(tl.Items))
		for i, ev := range tl.Items {
			e, err := eventOf(ev)
			if err != nil {
				return nil, fmt.Errorf("snapshot: device_traces[%d][%d]: %w", d, i, err)
			}
			evs = append(evs, e)
		}
		s.Traces = append(s.Traces, evs)
	}
	if sv, ok := top.Get("allocator_settings"); ok && sv != nil {
		st, err := settingsOf(sv)
		if err != nil {
			return nil, fmt.Errorf("snapshot: allocator_settings: %w", err)
		}
		s.Settings = st
	}
	return s, nil
}

// MaxDevices bounds device indices (PyTorch's DeviceIndex is an int8):
// FromValue refuses a longer device_traces before it reads a device.
const MaxDevices = 256

// kind names v's Python type in the messages.
var kind = pickle.TypeName

func listAt(m *pickle.Map, key, where string) ([]any, error) {
	v, ok := m.Get(key)
	if !ok {
		return nil, fmt.Errorf("%s: no %q: not a memory snapshot", where, key)
	}
	l, ok := v.(*pickle.List)
	if !ok {
		return nil, fmt.Errorf("%s: %q is a %s, not a list", where, key, kind(v))
	}
	return l.Items, nil
}

// fields reads the keys of one dict, each with the check its kind needs.
// A key is an any, so that a constant key costs no allocation.
type fields struct {
	m   *pickle.Map
	err error
}

func dictOf(v any) (fields, error) {
	m, ok := v.(*pickle.Map)
	if !ok {
		return fields{}, fmt.Errorf("a %s, not a dict", kind(v))
	}
	return fields{m: m}, nil
}

// int reads a non-negative integer below 2⁶³; optional keys give def.
func (f *fields) int(key any, required bool, def int64) int64 {
	if f.err != nil {
		return 0
	}
	v, ok := f.m.Get(key)
	if !ok {
		if required {
			f.err = fmt.Errorf("no %q", key)
		}
		return def
	}
	switch x := v.(type) {
	case int64:
		if x < 0 {
			f.err = fmt.Errorf("%q is %d, below 0", key, x)
			return 0
		}
		return x
	case bool:
		f.err = fmt.Errorf("%q is a bool, not an int", key)
	case *big.Int:
		f.err = fmt.Errorf("%q is %s, beyond 2^63", key, x)
	default:
		f.err = fmt.Errorf("%q is a %s, not an int", key, kind(v))
	}
	return 0
}

func (f *fields) str(key any, required bool) string {
	if f.err != nil {
		return ""
	}
	v, ok := f.m.Get(key)
	if !ok {
		if required {
			f.err = fmt.Errorf("no %q", key)
		}
		return ""
	}
	s, ok := v.(string)
	if !ok {
		f.err = fmt.Errorf("%q is a %s, not a str", key, kind(v))
	}
	return s
}

func (f *fields) bool(key any) bool {
	if f.err != nil {
		return false
	}
	v, ok := f.m.Get(key)
	if !ok || v == nil {
		return false
	}
	b, ok := v.(bool)
	if !ok {
		f.err = fmt.Errorf("%q is a %s, not a bool", key, kind(v))
	}
	return b
}

func (f *fields) list(key any) []any {
	if f.err != nil {
		return nil
	}
	v, ok := f.m.Get(key)
	if !ok || v == nil {
		return nil
	}
	l, ok := v.(*pickle.List)
	if !ok {
		f.err = fmt.Errorf("%q is a %s, not a list", key, kind(v))
		return nil
	}
	return l.Items
}

func segmentOf(v any) (Segment, error) {
	f, err := dictOf(v)
	if err != nil {
		return Segment{}, err
	}
	s := Segment{
		Device:     int(f.int("device", false, 0)),
		Address:    uint64(f.int("address", true, 0)),
		TotalSize:  f.int("total_size", true, 0),
		Stream:     f.int("stream", false, 0),
		Expandable: f.bool("is_expandable"),
	}
	if s.Device >= MaxDevices {
		return s, fmt.Errorf("device %d, more than %d devices", s.Device, MaxDevices)
	}
	switch t := f.str("segment_type", false); t {
	case "small":
		s.Small = true
	case "large", "":
	default:
		if f.err == nil {
			f.err = fmt.Errorf("segment_type %q is neither small nor large", t)
		}
	}
	blocks := f.list("blocks")
	if f.err != nil {
		return s, f.err
	}
	next := s.Address // where a block without an address starts
	for i, bv := range blocks {
		bf, err := dictOf(bv)
		if err != nil {
			return s, fmt.Errorf("blocks[%d]: %w", i, err)
		}
		b := Block{
			Address:   uint64(bf.int("address", false, 0)),
			Size:      bf.int("size", true, 0),
			Requested: bf.int("requested_size", false, 0),
			State:     bf.str("state", true),
		}
		if bf.err != nil {
			return s, fmt.Errorf("blocks[%d]: %w", i, bf.err)
		}
		// Old snapshots give blocks no address: they follow each other from
		// the segment's start (torch/cuda/_memory_viz.py does the same).
		if _, ok := bf.m.Get("address"); !ok {
			b.Address = next
		}
		next = b.Address + uint64(b.Size)
		s.Blocks = append(s.Blocks, b)
	}
	return s, nil
}

// MaxFrames bounds the frames kept per event: the frames after it are
// neither kept nor checked.
const MaxFrames = 64

func eventOf(v any) (Event, error) {
	e, err := EventOf(v)
	if err != nil {
		return e, err
	}
	f := fields{m: v.(*pickle.Map)}
	frames := f.list("frames")
	if f.err != nil {
		return e, f.err
	}
	for i, fv := range frames[:min(len(frames), MaxFrames)] {
		fr, err := FrameOf(fv)
		if err != nil {
			return e, fmt.Errorf("frames[%d]: %w", i, err)
		}
		e.Frames = append(e.Frames, fr)
	}
	return e, nil
}

// EventOf reads an event dict of a device trace but its "frames" (FrameOf
// reads each of those), with Read's checks and messages.
func EventOf(v any) (Event, error) {
	f, err := dictOf(v)
	if err != nil {
		return Event{}, err
	}
	e := Event{
		Action: f.str("action", true),
		Addr:   uint64(f.int("addr", false, 0)),
		Size:   f.int("size", false, 0),
		Stream: f.int("stream", false, 0),
	}
	return e, f.err
}

// FrameOf reads one frame dict of an event's "frames", with Read's checks
// and messages.
func FrameOf(v any) (Frame, error) {
	f, err := dictOf(v)
	if err != nil {
		return Frame{}, err
	}
	fr := Frame{Filename: f.str("filename", false), Line: f.int("line", false, 0), Name: f.str("name", false)}
	return fr, f.err
}

// settingsOf reads allocator_settings: the structured keys, which hold the
// values the allocator used, rather than the string, which may hold keys
// gpukit does not model.
func settingsOf(v any) (Settings, error) {
	f, err := dictOf(v)
	if err != nil {
		return Settings{}, err
	}
	st := Settings{Recorded: true, Conf: f.str("PYTORCH_CUDA_ALLOC_CONF", false)}
	if ms, ok := f.m.Get("max_split_size"); ok {
		switch x := ms.(type) {
		case int64:
			if x > 0 {
				st.Config.MaxSplitSize = x
			}
		case *big.Int: // SIZE_MAX written unsigned: unlimited
		default:
			return st, fmt.Errorf("max_split_size is a %s, not an int", kind(ms))
		}
	}
	if g, ok := f.m.Get("garbage_collection_threshold"); ok {
		switch x := g.(type) {
		case float64:
			st.Config.GarbageCollectionThreshold = x
		case int64:
			st.Config.GarbageCollectionThreshold = float64(x)
		default:
			return st, fmt.Errorf("garbage_collection_threshold is a %s, not a float", kind(g))
		}
	}
	st.Config.ExpandableSegments = f.bool("expandable_segments")
	if dv, ok := f.m.Get("roundup_power2_divisions"); ok && dv != nil {
		dm, ok := dv.(*pickle.Map)
		if !ok {
			return st, fmt.Errorf("roundup_power2_divisions is a %s, not a dict", kind(dv))
		}
		for i, k := range dm.Keys {
			ks, ok := k.(string)
			if !ok {
				return st, fmt.Errorf("roundup_power2_divisions: a key of type %s", kind(k))
			}
			// gpukit's own snapshots put "MB" after each class.
			mb, err := strconv.ParseInt(strings.TrimSuffix(ks, "MB"), 10, 64)
			if err != nil || mb <= 0 || mb&(mb-1) != 0 {
				return st, fmt.Errorf("roundup_power2_divisions: key %q is not a power of two (MiB)", ks)
			}
			class := 0
			for mb > 1 {
				mb >>= 1
				class++
			}
			n, ok := dm.Values[i].(int64)
			if !ok {
				return st, fmt.Errorf("roundup_power2_divisions[%q] is a %s, not an int", ks, kind(dm.Values[i]))
			}
			if class < alloc.RoundupIntervals {
				if n < 0 || n > 1<<30 {
					return st, fmt.Errorf("roundup_power2_divisions[%q] = %d out of range", ks, n)
				}
				st.Config.RoundupPower2Divisions[class] = int(n)
			}
		}
	}
	if f.err != nil {
		return st, f.err
	}
	if err := st.Config.Validate(); err != nil {
		return st, err
	}
	return st, nil
}
