package snapshot

import (
	"errors"
	"fmt"
	"slices"

	"github.com/gpumem/course/gpukit/alloc"
)

// Unlimited is the capacity of a replay given none: a device larger than
// anything a trace asks for.
const Unlimited int64 = 1 << 50

// replayer runs a plan on one gpukit allocator.
type replayer struct {
	s    *Snapshot
	tr   []Event
	p    *plan
	a    *alloc.Allocator
	mem  *memory
	live map[uint64]*alloc.Block // by PyTorch's address
	late map[uint64][]*event     // frees waiting for their free_completed, by PyTorch's address
	fake alloc.Stream            // the next stream used for a late free's event
	// synced holds the events of syncOnly completions: done when the
	// allocator waits for them, or after the next request.
	synced []*event

	follow *follower // Check only

	// Figures of WhatIf.
	peakAllocStep int // the step after which allocated memory peaked, -1 before any
	peakAlloc     int64
	oom           *OOM
	stopAtOOM     bool
}

func newReplayer(s *Snapshot, d int, cfg alloc.Config, capacity int64, fraction float64) (*replayer, error) {
	if d < 0 || d >= len(s.Traces) {
		return nil, fmt.Errorf("snapshot: no trace for device %d (the snapshot has traces for %d devices)", d, len(s.Traces))
	}
	if capacity <= 0 {
		capacity = Unlimited
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	mem := newMemory(capacity)
	r := &replayer{
		s: s, tr: s.Traces[d], mem: mem,
		a:             alloc.New(mem, cfg, d),
		live:          map[uint64]*alloc.Block{},
		late:          map[uint64][]*event{},
		fake:          -1,
		peakAllocStep: -1,
	}
	if fraction > 0 && fraction < 1 {
		if err := r.a.SetMemoryFraction(fraction); err != nil {
			return nil, fmt.Errorf("snapshot: %w", err)
		}
	}
	return r, nil
}

// adopt gives the allocator the segments of the first event, with their
// blocks in use, at PyTorch's addresses (Check).
func (r *replayer) adopt(in *Initial) error {
	r.mem.adopting = true
	defer func() { r.mem.adopting = false }()
	for _, ps := range slices.Concat(in.Plain, in.Expandable) {
		base := ps.Address
		ap := alloc.PriorSegment{Size: ps.Size, Stream: alloc.Stream(ps.Stream), Small: ps.Small, Expandable: ps.Size == 0}
		for _, run := range ps.Mapped {
			ap.Mapped = append(ap.Mapped, alloc.PageRun{Offset: int64(run.Addr - base), Size: run.Size})
		}
		for _, b := range ps.Blocks {
			ap.Blocks = append(ap.Blocks, alloc.PriorBlock{Offset: int64(b.Address - base), Size: b.Size, Requested: b.Requested})
		}
		r.mem.place = base
		blocks, err := r.a.Adopt(ap)
		if err != nil {
			return fmt.Errorf("snapshot: the segment at %#x at the first event: %w", base, err)
		}
		for i, b := range blocks {
			r.live[ps.Blocks[i].Address] = b
		}
	}
	return nil
}

// allocInitial asks for the blocks in use at the first event, by address,
// as requests (WhatIf): under other settings, the segments that held them
// would have been others.
func (r *replayer) allocInitial(in *Initial) {
	for _, ps := range slices.Concat(in.Plain, in.Expandable) {
		for _, b := range ps.Blocks {
			size := b.Requested
			if size == 0 {
				size = b.Size
			}
			blk, err := r.a.Malloc(size, alloc.Stream(ps.Stream))
			if err != nil {
				if r.oom == nil {
					r.oom = &OOM{Index: -1, Size: size, Stream: ps.Stream}
				}
				continue
			}
			r.live[b.Address] = blk
		}
	}
	r.notePeak(-1)
}

func (r *replayer) notePeak(i int) {
	if cur := r.a.MemoryAllocated(); cur > r.peakAlloc {
		r.peakAlloc, r.peakAllocStep = cur, i
	}
}

// run replays steps [0, stop), or up to the first OOM with stopAtOOM.
func (r *replayer) run(stop int) {
	for i := 0; i < stop && i < len(r.p.steps); i++ {
		st := r.p.steps[i]
		if r.follow != nil {
			r.follow.begin(r.p, st)
		}
		if st.kind == stepEmptyCache {
			r.a.EmptyCache()
			if r.follow != nil {
				r.follow.emptyCache(r, st)
			}
			continue
		}
		e := &r.tr[st.index]
		switch st.kind {
		case stepAlloc, stepOOM:
			if r.follow != nil && r.follow.startsWithRelease() && r.a.CachedFit(e.Size, alloc.Stream(e.Stream)) {
				// PyTorch's malloc releases nothing when a cached block
				// fits: the program emptied the cache before asking.
				r.p.emptyFirst[int32(i)] = true
			}
			if r.p.emptyFirst[int32(i)] {
				r.a.EmptyCache()
				if r.follow != nil {
					r.follow.g.EmptyCaches++
				}
			}
			b, err := r.a.Malloc(e.Size, alloc.Stream(e.Stream))
			for _, ev := range r.synced {
				ev.done = true
			}
			r.synced = r.synced[:0]
			if r.follow != nil {
				r.follow.request(r, st, b, err)
			}
			if err != nil {
				var oom *alloc.OutOfMemoryError
				if r.oom == nil && errors.As(err, &oom) {
					r.oom = &OOM{Index: int(st.index), Size: e.Size, Stream: e.Stream, Frames: e.Frames}
				}
				if r.stopAtOOM {
					return
				}
				break
			}
			if b != nil {
				r.live[e.Addr] = b
				r.notePeak(i)
			}
		case stepFree:
			b := r.live[e.Addr]
			if b == nil {
				break // never served (an OOM of the replay) or unknown
			}
			delete(r.live, e.Addr)
			if st.late {
				ev := &event{}
				r.a.RecordStream(b, r.fake)
				r.fake--
				r.mem.event = ev
				r.late[e.Addr] = append(r.late[e.Addr], ev)
			}
			r.a.Free(b)
		case stepComplete:
			if evs := r.late[e.Addr]; len(evs) > 0 {
				if st.syncOnly {
					r.synced = append(r.synced, evs[0])
				} else {
					evs[0].done = true
				}
				if len(evs) == 1 {
					delete(r.late, e.Addr)
				} else {
					r.late[e.Addr] = evs[1:]
				}
			} else if b := r.live[e.Addr]; b != nil {
				// Waiting for its streams at the first event: it was
				// adopted (or asked for) as in use.
				delete(r.live, e.Addr)
				r.a.Free(b)
			}
		}
	}
}
