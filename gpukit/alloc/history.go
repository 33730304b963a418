package alloc

import (
	"runtime"
	"slices"
	"strings"
)

// DefaultMaxEntries is the size of the history ring when
// HistoryOptions.MaxEntries is not set.
const DefaultMaxEntries = 100000

// maxFrames caps the Go stack recorded for one event.
const maxFrames = 16

// HistoryOptions control RecordHistory, like the arguments of
// torch.cuda.memory._record_memory_history.
type HistoryOptions struct {
	// Enabled starts recording; false stops it and, as in PyTorch, discards
	// the recorded entries (take a Snapshot first).
	Enabled bool
	// MaxEntries bounds the ring of trace entries; the oldest are dropped.
	// 0 means DefaultMaxEntries.
	MaxEntries int
	// Stacks records the Go stack of every allocation, free and segment
	// event, and of the blocks and segments in snapshots.
	Stacks bool
}

// history is a bounded ring of trace entries.
type history struct {
	enabled bool
	max     int
	buf     []TraceEntry
	start   int // index of the oldest entry once the ring is full
}

func (h *history) add(e TraceEntry) {
	if len(h.buf) < h.max {
		h.buf = append(h.buf, e)
		return
	}
	h.buf[h.start] = e
	h.start = (h.start + 1) % h.max
}

func (h *history) entries() []TraceEntry {
	out := make([]TraceEntry, 0, len(h.buf))
	out = append(out, h.buf[h.start:]...)
	return append(out, h.buf[:h.start]...)
}

// RecordHistory starts or stops recording trace entries (alloc,
// free_requested, free_completed, segment_alloc, segment_free, segment_map,
// segment_unmap, oom) for Snapshot.
func (a *Allocator) RecordHistory(opts HistoryOptions) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !opts.Enabled {
		a.hist = history{}
		a.stacks.Store(false)
		return
	}
	max := opts.MaxEntries
	if max <= 0 {
		max = DefaultMaxEntries
	}
	old := a.hist.entries()
	if len(old) > max {
		old = old[len(old)-max:]
	}
	a.hist = history{enabled: true, max: max, buf: old}
	a.stacks.Store(opts.Stacks)
}

func (a *Allocator) trace(action string, addr uint64, size int64, s Stream, frames []Frame) {
	a.traceAt(a.traceClock(), action, addr, size, s, frames)
}

// traceClock reads the device clock for an entry that traceAt records
// later (a segment_free once the device free has succeeded); 0 when
// history is off, so that the clock is read exactly when trace would.
func (a *Allocator) traceClock() int64 {
	if !a.hist.enabled {
		return 0
	}
	return int64(a.mem.NowMicros())
}

// traceAt records an entry stamped at, a reading of traceClock.
func (a *Allocator) traceAt(at int64, action string, addr uint64, size int64, s Stream, frames []Frame) {
	if !a.hist.enabled {
		return
	}
	a.hist.add(TraceEntry{Action: action, Addr: addr, Size: size, Stream: s,
		TimeMicros: at, Frames: frames})
}

func (a *Allocator) traceOOM(free, size int64, s Stream, frames []Frame) {
	if !a.hist.enabled {
		return
	}
	a.hist.add(TraceEntry{Action: ActionOOM, Addr: uint64(free), Size: size, Stream: s,
		TimeMicros: int64(a.mem.NowMicros()), DeviceFree: free, Frames: frames})
}

var allocPkgPrefix = func() string {
	pc, _, _, _ := runtime.Caller(0)
	name := runtime.FuncForPC(pc).Name() // ".../gpukit/alloc.init.func1" or similar
	if i := strings.LastIndex(name, "/"); i >= 0 {
		if j := strings.Index(name[i:], "."); j >= 0 {
			return name[:i+j+1]
		}
	}
	return "github.com/gpumem/course/gpukit/alloc."
}()

// captureFrames returns the caller's Go stack, without the allocator's own
// frames and the runtime's, innermost first.
func captureFrames() []Frame {
	var pcs [maxFrames + 8]uintptr
	n := runtime.Callers(2, pcs[:])
	it := runtime.CallersFrames(pcs[:n])
	out := make([]Frame, 0, maxFrames)
	for len(out) < maxFrames {
		f, more := it.Next()
		internal := strings.HasPrefix(f.Function, allocPkgPrefix) && !strings.HasSuffix(f.File, "_test.go")
		if !internal && f.Function != "" && !strings.HasPrefix(f.Function, "runtime.") {
			out = append(out, Frame{Filename: f.File, Line: f.Line, Name: f.Function})
		}
		if !more {
			break
		}
	}
	return out
}

// Snapshot returns the allocator's segments, with their blocks and states,
// and the recorded history, in the structure of
// torch.cuda.memory._snapshot(). Segments are sorted by address.
// DeviceTraces has one slice per device index up to this allocator's; only
// this device's is filled.
func (a *Allocator) Snapshot() Snapshot {
	a.mu.Lock()
	defer a.mu.Unlock()
	segs := make([]Segment, 0, len(a.segments))
	var totalActive int64
	// describe reports the blocks from head on as one segment, up to the
	// first unmapped block.
	describe := func(seg *segment, head *node, frames []Frame) {
		s := Segment{
			Device:       a.device,
			Address:      head.addr,
			Stream:       seg.stream,
			SegmentType:  "large",
			IsExpandable: seg.exp != nil,
			Frames:       frames,
		}
		if seg.pool.small {
			s.SegmentType = "small"
		}
		for n := head; n != nil && !n.unmapped; n = n.next {
			state := StateInactive
			active := n.allocated || n.eventCount > 0 || len(n.streamUses) > 0
			switch {
			case n.allocated:
				state = StateActiveAllocated
			case active:
				state = StateActivePendingFree
			}
			s.Blocks = append(s.Blocks, BlockInfo{Address: n.addr, Size: n.size,
				RequestedSize: n.requested, State: state, Frames: n.frames})
			s.TotalSize += n.size
			if n.allocated {
				s.AllocatedSize += n.size
			}
			if active {
				s.ActiveSize += n.size
				s.RequestedSize += n.requested
			}
		}
		totalActive += s.ActiveSize
		segs = append(segs, s)
	}
	for _, seg := range a.segments {
		describe(seg, seg.head, seg.frames)
	}
	// An expandable segment is reported as one segment per contiguous run
	// of mapped pages.
	for _, seg := range a.expSegs {
		for n := seg.head; n != nil; n = n.next {
			if !n.unmapped && (n.prev == nil || n.prev.unmapped) {
				describe(seg, n, n.segFrames)
			}
		}
	}
	slices.SortFunc(segs, func(x, y Segment) int {
		switch {
		case x.Address < y.Address:
			return -1
		case x.Address > y.Address:
			return 1
		}
		return 0
	})
	a.trace(ActionSnapshot, 0, totalActive, 0, nil)
	traces := make([][]TraceEntry, max(a.device, 0)+1)
	traces[max(a.device, 0)] = a.hist.entries()
	return Snapshot{Segments: segs, DeviceTraces: traces, AllocatorSettings: a.cfg.settings()}
}
