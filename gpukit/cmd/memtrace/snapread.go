package main

import (
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"os"

	"github.com/gpumem/course/gpukit/alloc/snapshot"
	"github.com/gpumem/course/gpukit/internal/pickle"
)

// Reading a snapshot with memory for its events.
//
// snapshot.Read decodes the whole pickle into a tree, then builds the
// Snapshot from the tree: a file of a gigabyte, most of it Python frames,
// took twelve. readSnapshot builds the same Snapshot while the pickle
// streams by (snapshot.Decode with a pickle.StoreFunc): an event becomes a
// snapshot.Event when its dict is stored into its device's list, and
// nothing of the dict is kept; a frame dict becomes one shared frame, a
// frames list one shared stack (a training loop repeats the same stacks),
// so an event's frames cost the 24 bytes of its Frames slice. Events and
// frames are read by snapshot.EventOf and snapshot.FrameOf, the checks
// and messages of snapshot.Read, and hold the same frames (the first
// snapshot.MaxFrames) until the distinct frames and stacks reach a
// budget: later new stacks are not kept, and whatif reads the file again
// for the frames of the OOMs it reports (framesOf). Segments and allocator_settings, small, are
// decoded as a tree and read by snapshot.FromValue, as are the events of a
// pickle written in a layout whose paths the stack does not tell
// (pickle.Item.Known): whatever the file, the Snapshot and the error are
// snapshot.Read's (TestReadSnapshotMatchesRead, FuzzReadSnapshot).

// framesBudget bounds the bytes of distinct frames and stacks kept.
var framesBudget int64 = 64 << 20

// readSnapshot reads a snapshot pickle, gzip-compressed or not, as
// snapshot.Read does, and also returns, per device, the events whose
// frames were not kept.
func readSnapshot(r io.Reader, lim pickle.Limits) (*snapshot.Snapshot, map[int]*bitset, error) {
	rd := newSnapReader()
	v, err := rd.decode(r, lim)
	if err != nil {
		return nil, nil, err
	}
	return rd.assemble(v)
}

func (rd *snapReader) decode(r io.Reader, lim pickle.Limits) (any, error) {
	return snapshot.Decode(r, lim, rd.store)
}

// snapReader is the StoreFunc of readSnapshot and its state.
type snapReader struct {
	traces map[*pickle.List]*devTrace // device lists the reader took over
	accs   map[*pickle.List]*frameAcc // frames lists being filled
	frames map[snapshot.Frame]*frame
	stacks map[uint64][]*stack // by hash of their frames' ids
	seed   maphash.Seed
	kept   int64 // bytes of frames and stacks
	nextID uint64
	pool   []*frameAcc
	idBuf  []byte

	// Events are kept in chunks of compact records until the end: the
	// snapshot.Events are made once, at their final size, instead of
	// growing a slice of them (which holds the old and the new array at
	// once when it grows).
	stackList []*stack // by index: none, lost, then the distinct stacks
	actions   []string
	actionOf  map[string]uint32

	// last is the list the last item went into, which the next item
	// most often goes into too (the frames of a list, the events of a
	// device): one comparison instead of two map lookups.
	last lastList

	// want, in the second pass of framesOf: the events of device wantDev
	// whose frames to collect; nothing else is kept.
	want    map[int][]snapshot.Frame
	wantDev int
}

func newSnapReader() *snapReader {
	return &snapReader{
		traces:    map[*pickle.List]*devTrace{},
		accs:      map[*pickle.List]*frameAcc{},
		frames:    map[snapshot.Frame]*frame{},
		stacks:    map[uint64][]*stack{},
		seed:      maphash.MakeSeed(),
		stackList: []*stack{noStack, lostStack},
		actionOf:  map[string]uint32{},
	}
}

type lastList struct {
	list  *pickle.List
	trace *devTrace
	acc   *frameAcc
}

// devTrace is one device's list of events, read as it streams.
type devTrace struct {
	dev    int // its position in device_traces as the stack told it
	n      int // events stored
	chunks [][]compactEvent
	err    error // the first event that is not one
	errAt  int

	made bool // events made (a list may be in device_traces twice)
	evs  []snapshot.Event
	lost bitset
}

// compactEvent is a snapshot.Event while the file is read: 32 bytes
// instead of 64.
type compactEvent struct {
	addr   uint64
	size   int64
	stream int64
	action uint32 // in snapReader.actions
	stack  uint32 // in snapReader.stackList
}

// eventChunk is the number of events of the largest chunks (1 MiB).
const eventChunk = 1 << 15

// Paths of the values the reader takes over: device_traces[d],
// device_traces[d][i] and device_traces[d][i]["frames"].
func isKey(s pickle.Step, key string) bool { return s.Index < 0 && s.Key == key }

func tracePath(p []pickle.Step) bool {
	return len(p) == 2 && isKey(p[0], "device_traces") && p[1].Index >= 0
}

func eventPath(p []pickle.Step) bool {
	return len(p) == 3 && tracePath(p[:2]) && p[2].Index >= 0
}

func framesPath(p []pickle.Step) bool {
	return len(p) == 4 && eventPath(p[:3]) && isKey(p[3], "frames")
}

// store is the StoreFunc: events into the device's devTrace, frames into
// the frameAcc of their list, frames lists into stacks; everything else
// as it is.
func (rd *snapReader) store(it *pickle.Item) (any, bool, error) {
	switch c := it.Container.(type) {
	case *pickle.List:
		if c == rd.last.list { // the list of the item before
			if rd.last.trace != nil {
				rd.event(rd.last.trace, it.Value)
				return pickle.Forget, false, nil
			}
			return rd.addFrame(rd.last.acc, it.Value), false, nil
		}
		if t := rd.traces[c]; t != nil {
			rd.last = lastList{list: c, trace: t}
			rd.event(t, it.Value)
			return pickle.Forget, false, nil
		}
		if a := rd.accs[c]; a != nil {
			rd.last = lastList{list: c, acc: a}
			return rd.addFrame(a, it.Value), false, nil
		}
		if !it.Known {
			break
		}
		if tracePath(it.Path) {
			t := &devTrace{dev: int(it.Path[1].Index)}
			rd.traces[c] = t
			for _, ev := range c.Items { // stored before the stack told where
				rd.event(t, ev)
			}
			rd.event(t, it.Value)
			return pickle.Forget, false, nil
		}
		if framesPath(it.Path) && rd.wanted(int(it.Path[1].Index), int(it.Path[2].Index)) {
			a := rd.newAcc()
			rd.accs[c] = a
			for _, fv := range c.Items {
				rd.addFrame(a, fv)
			}
			return rd.addFrame(a, it.Value), false, nil
		}
		if rd.want != nil && framesPath(it.Path) {
			return it.Value, false, nil // the second pass keeps no other frames
		}
	case *pickle.Map:
		if it.Known && isKey(it.Step, "frames") && eventPath(it.Path) {
			if l, ok := it.Value.(*pickle.List); ok {
				return rd.stackOf(l), true, nil // in the event, and in the memo
			}
		}
	}
	return it.Value, true, nil
}

// wanted says whether the frames of event i of device d are collected.
func (rd *snapReader) wanted(d, i int) bool {
	if rd.want == nil {
		return true
	}
	_, ok := rd.want[i]
	return ok && d == rd.wantDev
}

// event reads the next event of t as snapshot.Read does.
func (rd *snapReader) event(t *devTrace, v any) {
	i := t.n
	t.n++
	if t.err != nil {
		return
	}
	e, st, err := rd.eventOf(v)
	if err != nil {
		t.err, t.errAt, t.chunks = err, i, nil
		return
	}
	if rd.want != nil {
		if _, ok := rd.want[i]; ok && t.dev == rd.wantDev && st != nil {
			rd.want[i] = st.frames
		}
		return
	}
	if st == nil {
		st = noStack
	}
	a, ok := rd.actionOf[e.Action]
	if !ok {
		a = uint32(len(rd.actions))
		rd.actions = append(rd.actions, e.Action)
		rd.actionOf[e.Action] = a
	}
	if n := len(t.chunks); n == 0 || len(t.chunks[n-1]) == cap(t.chunks[n-1]) {
		size := 256 // chunks double up to eventChunk: a small trace takes little
		if n > 0 {
			size = min(2*cap(t.chunks[n-1]), eventChunk)
		}
		t.chunks = append(t.chunks, make([]compactEvent, 0, size))
	}
	last := &t.chunks[len(t.chunks)-1]
	*last = append(*last, compactEvent{addr: e.Addr, size: e.Size, stream: e.Stream, action: a, stack: st.index})
}

// events makes the snapshot.Events of t, and the set of those whose
// frames were not kept; t's chunks go as they are copied.
func (rd *snapReader) events(t *devTrace) ([]snapshot.Event, bitset) {
	if t.made {
		return t.evs, t.lost
	}
	evs := make([]snapshot.Event, 0, t.n)
	var lost bitset
	for c, chunk := range t.chunks {
		for _, ce := range chunk {
			st := rd.stackList[ce.stack]
			if st.lost {
				lost.set(len(evs))
			}
			evs = append(evs, snapshot.Event{Action: rd.actions[ce.action], Addr: ce.addr, Size: ce.size, Stream: ce.stream, Frames: st.frames})
		}
		t.chunks[c] = nil
	}
	t.made, t.evs, t.lost, t.chunks = true, evs, lost, nil
	return evs, lost
}

func (rd *snapReader) eventOf(v any) (snapshot.Event, *stack, error) {
	e, err := snapshot.EventOf(v)
	if err != nil {
		return e, nil, err
	}
	fv, ok := v.(*pickle.Map).Get("frames")
	if !ok || fv == nil {
		return e, nil, nil
	}
	var st *stack
	switch x := fv.(type) {
	case *stack:
		st = x
	case *pickle.List:
		st = rd.stackOf(x)
	default:
		return e, nil, fmt.Errorf("%q is a %s, not a list", "frames", pickle.TypeName(fv))
	}
	if st.err != nil {
		return e, nil, st.err
	}
	e.Frames = st.frames
	return e, st, nil
}

// assemble builds the Snapshot from what the pickle left (segments,
// settings, and the device lists, empty where the reader took their events
// over) with snapshot.FromValue, part by part, so that the checks and the
// first error are snapshot.Read's, in its order: the segments, then each
// device's trace, then allocator_settings.
func (rd *snapReader) assemble(v any) (*snapshot.Snapshot, map[int]*bitset, error) {
	top, ok := v.(*pickle.Map)
	if !ok {
		_, err := snapshot.FromValue(v)
		return nil, nil, err
	}
	// part reads a dict of the given keys and values (absent: not there).
	part := func(kv ...any) (*snapshot.Snapshot, error) {
		m := &pickle.Map{}
		for i := 0; i < len(kv); i += 2 {
			if kv[i+1] == absent {
				continue
			}
			if err := m.Set(kv[i], kv[i+1]); err != nil {
				return nil, err
			}
		}
		return snapshot.FromValue(m)
	}
	get := func(key string) any {
		if v, ok := top.Get(key); ok {
			return v
		}
		return absent
	}
	segs, err := part("segments", get("segments"), "device_traces", &pickle.List{})
	if err != nil {
		return nil, nil, err
	}
	s := &snapshot.Snapshot{Segments: segs.Segments}
	lost := map[int]*bitset{}
	tv := get("device_traces")
	devs, ok := tv.(*pickle.List)
	if !ok || len(devs.Items) > snapshot.MaxDevices {
		_, err := part("segments", &pickle.List{}, "device_traces", tv) // snapshot's error
		if err == nil {
			err = errors.New("snapshot: internal error: device_traces read twice differently")
		}
		return nil, nil, err
	}
	for d, item := range devs.Items {
		if l, ok := item.(*pickle.List); ok && rd.traces[l] != nil {
			t := rd.traces[l]
			if t.err != nil {
				return nil, nil, fmt.Errorf("snapshot: device_traces[%d][%d]: %w", d, t.errAt, t.err)
			}
			evs, notKept := rd.events(t)
			s.Traces = append(s.Traces, evs)
			if notKept.any() {
				lost[d] = &notKept
			}
			continue
		}
		// Not streamed: snapshot reads it, at its place.
		padded := &pickle.List{Items: make([]any, d+1)}
		for i := range d {
			padded.Items[i] = &pickle.List{}
		}
		padded.Items[d] = item
		one, err := part("segments", &pickle.List{}, "device_traces", padded)
		if err != nil {
			return nil, nil, err
		}
		s.Traces = append(s.Traces, one.Traces[d])
	}
	settings, err := part("segments", &pickle.List{}, "device_traces", &pickle.List{}, "allocator_settings", get("allocator_settings"))
	if err != nil {
		return nil, nil, err
	}
	s.Settings = settings.Settings
	return s, lost, nil
}

// absent stands for a key the top-level dict does not have.
var absent any = struct{ absent bool }{}

// framesOf reads the snapshot at path again for the frames of some events
// of device dev: the OOMs a replay reports, whose frames readSnapshot did
// not keep. Only their frames are kept.
func framesOf(path string, lim pickle.Limits, dev int, events []int) (map[int][]snapshot.Frame, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	rd := newSnapReader()
	rd.want, rd.wantDev = map[int][]snapshot.Frame{}, dev
	for _, i := range events {
		rd.want[i] = nil
	}
	if _, err := rd.decode(f, lim); err != nil {
		return nil, err
	}
	return rd.want, nil
}

// bitset is a set of event indices.
type bitset struct{ words []uint64 }

func (b *bitset) set(i int) {
	for len(b.words) <= i/64 {
		b.words = append(b.words, 0)
	}
	b.words[i/64] |= 1 << (i % 64)
}

func (b *bitset) has(i int) bool {
	return b != nil && i >= 0 && i/64 < len(b.words) && b.words[i/64]&(1<<(i%64)) != 0
}

func (b *bitset) any() bool {
	for _, w := range b.words {
		if w != 0 {
			return true
		}
	}
	return false
}
