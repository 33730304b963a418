package snapshot

import (
	"errors"
	"fmt"
	"strings"

	"github.com/gpumem/course/gpukit/alloc"
)

// CheckOptions choose what Check replays.
type CheckOptions struct {
	Device int // the device whose trace is replayed
	// Config replaces the snapshot's own settings when not nil.
	Config *alloc.Config
	// Capacity of the device in bytes (0: Unlimited). Check fails a
	// cudaMalloc where PyTorch's failed, whatever the capacity; it matters
	// for the range an expandable segment reserves and for MemoryFraction.
	Capacity int64
	// MemoryFraction, when in (0, 1), is the cap that
	// torch.cuda.set_per_process_memory_fraction set, which the snapshot
	// does not record; garbage_collection_threshold acts only under it.
	MemoryFraction float64
}

// Agreement is how far gpukit's allocator, replaying a trace, decided as
// PyTorch did.
type Agreement struct {
	Device int
	Events int // events in the trace
	// Allocs counts alloc events, AllocsAgreed those whose block gpukit put
	// at PyTorch's address: the same segment (made at PyTorch's address when
	// gpukit made it as PyTorch did) at the same offset.
	Allocs, AllocsAgreed int
	// OOMs counts oom events, OOMsAgreed those gpukit refused too.
	OOMs, OOMsAgreed int
	// SegmentEvents counts segment_alloc, segment_free, segment_map and
	// segment_unmap events; SegmentsAgreed those gpukit's allocator made in
	// the same request, in the same order, with the same size and stream.
	SegmentEvents, SegmentsAgreed int
	EmptyCaches                   int // empty_cache() calls the trace shows
	// Disagreements counts the requests (and empty_cache calls) in which
	// anything differed; First describes the first.
	Disagreements int
	First         *Disagreement
	// Adopted is what existed at the first event: segments and blocks.
	AdoptedSegments, AdoptedBlocks int
	// Problems lists what did not add up in the snapshot itself.
	Problems []string
}

// Full reports whether every decision agreed.
func (g *Agreement) Full() bool { return g.Disagreements == 0 }

func (g *Agreement) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s events: %s of %s allocations at PyTorch's offset, %s of %s segment events as PyTorch made them",
		Count(int64(g.Events)), Count(int64(g.AllocsAgreed)), Count(int64(g.Allocs)),
		Count(int64(g.SegmentsAgreed)), Count(int64(g.SegmentEvents)))
	if g.OOMs > 0 {
		fmt.Fprintf(&b, ", %d of %d OOMs", g.OOMsAgreed, g.OOMs)
	}
	if g.Disagreements > 0 {
		fmt.Fprintf(&b, "; %d requests disagree", g.Disagreements)
	}
	return b.String()
}

// Disagreement is the first request on which gpukit decided otherwise.
type Disagreement struct {
	Index   int    // the event's index in the trace
	Event   Event  // PyTorch's event (alloc, oom; for an empty_cache, its first segment event)
	PyTorch string // what PyTorch did
	Gpukit  string // what gpukit did
	Rule    string // the rule of the allocator that decided it
}

func (d *Disagreement) String() string {
	return fmt.Sprintf("event %d (%s): PyTorch %s; gpukit %s. Rule: %s", d.Index, describeEvent(d.Event), d.PyTorch, d.Gpukit, d.Rule)
}

func describeEvent(e Event) string {
	switch e.Action {
	case alloc.ActionAlloc, alloc.ActionOOM:
		return fmt.Sprintf("%s of %s on stream %d", e.Action, alloc.FormatSize(e.Size), e.Stream)
	}
	return fmt.Sprintf("%s of %s at %#x", e.Action, alloc.FormatSize(e.Size), e.Addr)
}

// Check replays device d's trace on gpukit's allocator with the snapshot's
// own settings, starting from the state Reconstruct finds, and compares each
// decision with the one PyTorch recorded.
func (s *Snapshot) Check(opt CheckOptions) (*Agreement, error) {
	if opt.Device < 0 || opt.Device >= len(s.Traces) {
		return nil, fmt.Errorf("snapshot: no trace for device %d (the snapshot has traces for %d devices)", opt.Device, len(s.Traces))
	}
	return s.check(opt, buildPlan(s.Traces[opt.Device]))
}

// check is Check on a plan, whose emptyFirst it fills.
func (s *Snapshot) check(opt CheckOptions, p *plan) (*Agreement, error) {
	cfg := s.Settings.Config
	if opt.Config != nil {
		cfg = *opt.Config
	}
	r, err := newReplayer(s, opt.Device, cfg, opt.Capacity, opt.MemoryFraction)
	if err != nil {
		return nil, err
	}
	in, err := s.Reconstruct(opt.Device, cfg)
	if err != nil {
		return nil, err
	}
	g := &Agreement{Device: opt.Device, Events: len(r.tr), Problems: in.Problems}
	for _, ps := range in.Plain {
		g.AdoptedSegments++
		g.AdoptedBlocks += len(ps.Blocks)
	}
	for _, ps := range in.Expandable {
		g.AdoptedSegments += len(ps.Mapped)
		g.AdoptedBlocks += len(ps.Blocks)
	}
	if err := r.adopt(in); err != nil {
		return nil, err
	}
	r.p = p
	f := &follower{g: g, tr: r.tr, bases: in.expandableBases(), pySegs: map[uint64]int64{}}
	for _, ps := range in.Plain {
		f.pySegs[ps.Address] = ps.Size
	}
	r.mem.follow = f
	r.follow = f
	g.SegmentEvents = len(r.p.segs)
	r.run(len(r.p.steps))
	return g, nil
}

// call is one device call of gpukit's allocator.
type call struct {
	action string
	addr   uint64
	size   int64
	failed bool
}

// follower matches gpukit's device calls with PyTorch's segment events.
type follower struct {
	g      *Agreement
	tr     []Event
	bases  []uint64         // PyTorch's expandable segments, for descriptions
	pySegs map[uint64]int64 // PyTorch's plain segments now, for descriptions

	group   []int32
	pos     int
	refused bool
	calls   []call
	differs bool
}

func (f *follower) begin(p *plan, st step) {
	f.group = p.segs[st.g0:st.g1]
	f.pos = 0
	f.refused = st.kind == stepOOM
	f.calls = f.calls[:0]
	f.differs = false
}

// startsWithRelease reports whether the step's segment events start with a
// segment_free or segment_unmap.
func (f *follower) startsWithRelease() bool {
	if len(f.group) == 0 {
		return false
	}
	a := f.tr[f.group[0]].Action
	return a == alloc.ActionSegmentFree || a == alloc.ActionSegmentUnmap
}

// malloc matches a cudaMalloc (segment_alloc) or a page map (segment_map):
// it returns PyTorch's address when PyTorch made the same, and fail when
// PyTorch's call failed at this point.
func (f *follower) malloc(action string, addr uint64, size int64) (py uint64, ok, fail bool) {
	f.calls = append(f.calls, call{action: action, addr: addr, size: size})
	if f.pos < len(f.group) {
		e := f.tr[f.group[f.pos]]
		switch {
		case e.Action == alloc.ActionSegmentFree || e.Action == alloc.ActionSegmentUnmap:
			// PyTorch released cached memory first: its cudaMalloc had
			// failed (or its garbage collection ran, which gpukit's
			// would have done before calling).
			f.calls[len(f.calls)-1].failed = true
			return 0, false, true
		case e.Action == action:
			f.pos++
			if e.Size == size && (action == alloc.ActionSegmentAlloc || e.Addr == addr) {
				f.g.SegmentsAgreed++
				return e.Addr, true, false
			}
			f.differs = true
			return 0, false, false
		default:
			f.pos++
			f.differs = true
			return 0, false, false
		}
	}
	if f.refused {
		f.calls[len(f.calls)-1].failed = true
		return 0, false, true
	}
	f.differs = true
	return 0, false, false
}

// free matches a cudaFree (segment_free) or an unmap (segment_unmap).
func (f *follower) free(action string, addr uint64, size int64) {
	f.calls = append(f.calls, call{action: action, addr: addr, size: size})
	if f.pos < len(f.group) && f.tr[f.group[f.pos]].Action == action {
		e := f.tr[f.group[f.pos]]
		f.pos++
		if e.Addr == addr && e.Size == size {
			f.g.SegmentsAgreed++
			return
		}
	}
	f.differs = true
}

// reserveBase is where PyTorch's new expandable segment lies: a fresh
// range is mapped from its start (find_expandable_block, map_block), so
// the coming segment_map's address.
func (f *follower) reserveBase() (uint64, bool) {
	if f.pos >= len(f.group) {
		return 0, false
	}
	e := f.tr[f.group[f.pos]]
	return e.Addr, e.Action == alloc.ActionSegmentMap
}

// end closes a step: what PyTorch did that gpukit did not differs too.
func (f *follower) end() {
	if f.pos < len(f.group) {
		f.differs = true
	}
	for _, i := range f.group {
		e := f.tr[i]
		switch e.Action {
		case alloc.ActionSegmentAlloc:
			f.pySegs[e.Addr] = e.Size
		case alloc.ActionSegmentFree:
			delete(f.pySegs, e.Addr)
		}
	}
}

// request compares the outcome of an alloc or oom step.
func (f *follower) request(r *replayer, st step, b *alloc.Block, err error) {
	f.end()
	e := r.tr[st.index]
	var oom *alloc.OutOfMemoryError
	refused := err != nil && errors.As(err, &oom)
	agree := !f.differs
	if st.kind == stepAlloc {
		f.g.Allocs++
		if err == nil && b != nil && b.Addr() == e.Addr {
			f.g.AllocsAgreed++
		} else {
			agree = false
		}
	} else {
		f.g.OOMs++
		if refused {
			f.g.OOMsAgreed++
		} else {
			agree = false
		}
	}
	if agree {
		return
	}
	f.g.Disagreements++
	if f.g.First != nil {
		return
	}
	d := &Disagreement{Index: int(st.index), Event: e}
	d.PyTorch = f.pytorchDid(e, st.kind == stepOOM)
	switch {
	case err != nil:
		d.Gpukit = "refused it (" + firstLine(err) + ")" + f.gpukitCalls()
	case b == nil:
		d.Gpukit = "returned no block"
	default:
		d.Gpukit = fmt.Sprintf("put it at %#x, offset %d of its segment at %#x", b.Addr(), b.Offset(), b.Segment()) + f.gpukitCalls()
	}
	d.Rule = f.rule(st.kind, refused != (st.kind == stepOOM))
	f.g.First = d
}

// emptyCache compares what an empty_cache() released.
func (f *follower) emptyCache(r *replayer, st step) {
	f.end()
	f.g.EmptyCaches++
	if !f.differs {
		return
	}
	f.g.Disagreements++
	if f.g.First != nil {
		return
	}
	first := f.group[0]
	d := &Disagreement{Index: int(first), Event: f.tr[first]}
	d.PyTorch = "emptied its cache" + f.pytorchEvents()
	d.Gpukit = "emptied its cache" + f.gpukitCalls()
	d.Rule = "empty_cache releases every cached segment that is entirely free, and unmaps the free pages of expandable segments (release_cached_blocks, release_expandable_segment)"
	f.g.First = d
}

func (f *follower) pytorchDid(e Event, refused bool) string {
	if refused {
		return "refused it (out of memory)" + f.pytorchEvents()
	}
	where := fmt.Sprintf("put it at %#x", e.Addr)
	for addr, size := range f.pySegs {
		if e.Addr >= addr && e.Addr < addr+uint64(size) {
			where = fmt.Sprintf("put it at %#x, offset %d of its %s segment at %#x", e.Addr, e.Addr-addr, alloc.FormatSize(size), addr)
		}
	}
	var best uint64
	var found bool
	for _, base := range f.bases {
		if base <= e.Addr && (!found || base > best) {
			best, found = base, true
		}
	}
	if found && strings.HasPrefix(where, "put it at") && !strings.Contains(where, "offset") {
		where = fmt.Sprintf("put it at %#x, offset %d of its expandable segment at %#x", e.Addr, e.Addr-best, best)
	}
	return where + f.pytorchEvents()
}

func (f *follower) pytorchEvents() string {
	if len(f.group) == 0 {
		return ", from its cache"
	}
	var parts []string
	for _, i := range f.group {
		e := f.tr[i]
		parts = append(parts, fmt.Sprintf("%s of %s at %#x", e.Action, alloc.FormatSize(e.Size), e.Addr))
	}
	return ", after " + strings.Join(parts, ", ")
}

func (f *follower) gpukitCalls() string {
	if len(f.calls) == 0 {
		return ", from its cache"
	}
	var parts []string
	for _, c := range f.calls {
		s := fmt.Sprintf("%s of %s", c.action, alloc.FormatSize(c.size))
		if c.failed {
			s = "a failed " + s
		}
		parts = append(parts, s)
	}
	return ", after " + strings.Join(parts, ", ")
}

// rule names the part of PyTorch's policy on which the two differ.
func (f *follower) rule(kind stepKind, oomDiffers bool) string {
	var pyNew, pyRel, gkNew, gkRel bool
	var pySizes, gkSizes []int64
	for _, i := range f.group {
		switch f.tr[i].Action {
		case alloc.ActionSegmentAlloc, alloc.ActionSegmentMap:
			pyNew = true
			pySizes = append(pySizes, f.tr[i].Size)
		default:
			pyRel = true
		}
	}
	for _, c := range f.calls {
		switch {
		case c.failed:
		case c.action == alloc.ActionSegmentAlloc || c.action == alloc.ActionSegmentMap:
			gkNew = true
			gkSizes = append(gkSizes, c.size)
		default:
			gkRel = true
		}
	}
	switch {
	case oomDiffers:
		return "out of memory: whether the device, or the memory fraction's cap, holds one more segment after the cache is released (malloc, alloc_block, release_cached_blocks)"
	case pyRel != gkRel:
		return "release of cached segments: after a failed cudaMalloc (release_available_cached_blocks, release_cached_blocks) or by garbage collection (garbage_collect_cached_blocks)"
	case pyNew != gkNew:
		return "cache or new segment: whether a cached block of the request's pool and stream fits (get_free_block, with max_split_size's limits)"
	case pyNew && gkNew && fmt.Sprint(pySizes) != fmt.Sprint(gkSizes):
		return "segment size (get_allocation_size; with expandable segments, the pages map_block maps)"
	}
	return "best fit among cached blocks (get_free_block: the smallest that fits, the lowest address on ties), or where an earlier split left them (should_split)"
}

func firstLine(err error) string {
	s := err.Error()
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 120 {
		s = s[:120] + "..."
	}
	return s
}

// Count writes n with thousands separators: 5,803.
func Count(n int64) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}
