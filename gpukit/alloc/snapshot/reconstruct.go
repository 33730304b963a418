package snapshot

import (
	"cmp"
	"fmt"
	"slices"
	"sort"

	"github.com/gpumem/course/gpukit/alloc"
)

// Reconstruction. The trace is a ring buffer: it usually starts mid-run, and
// what was made before its first event appears only in the final segments.
// Walking the trace backwards from the final state undoes each event:
//
//	alloc            the block was not there before
//	free_requested   the block was allocated before (its requested size is
//	                 the event's size)
//	free_completed   the block was waiting for its streams before (when the
//	                 event does not follow its free_requested at once)
//	segment_alloc    the segment was not there before
//	segment_free     the segment was there before, with this size and stream
//	segment_map      these pages were unmapped before
//	segment_unmap    these pages were mapped before
//
// What is left is the state at the first event: the segments, the runs of
// mapped pages of expandable segments, and the blocks in use, at their
// addresses. A block whose allocation precedes the trace and whose free is
// in it has only its requested size; its size is the requested size rounded
// as the snapshot's settings round it, plus what follows it up to the next
// block when that is too small to be a block of its own (PyTorch's
// should_split would not have cut it off).

// Initial is the allocator's state at the first event of a device's trace.
type Initial struct {
	Plain      []PriorSegment // by address
	Expandable []PriorSegment // one per stream and pool, by address
	// Problems lists what did not add up (an alloc of a block the later
	// events never free and the final state does not hold, a block outside
	// every segment...): a snapshot PyTorch wrote has none.
	Problems []string

	epochs []uint64 // addresses of the maps that start a new expandable segment, in order
}

// PriorSegment is a segment at the first event, with its blocks in use.
type PriorSegment struct {
	Address uint64 // for an expandable segment: the lowest address seen in it
	Size    int64  // for an expandable segment: 0
	Stream  int64
	Small   bool
	// Mapped lists the runs of mapped pages of an expandable segment, as
	// absolute addresses.
	Mapped []Run
	Blocks []PriorBlock // by address
}

// Run is a range of addresses.
type Run struct {
	Addr uint64
	Size int64
}

// PriorBlock is a block in use (or waiting for its streams) at the first
// event.
type PriorBlock struct {
	Address   uint64
	Size      int64
	Requested int64
	Pending   bool // freed, waiting for stream events (active_pending_free)
}

type liveBlock struct {
	size, requested int64 // size 0: not known
	pending         bool
}

type clusterKey struct {
	stream int64
	small  bool
}

// Reconstruct returns the state at the first event of device d's trace,
// with cfg rounding the sizes it must infer.
func (s *Snapshot) Reconstruct(d int, cfg alloc.Config) (*Initial, error) {
	if d < 0 || d >= max(len(s.Traces), 1) {
		return nil, fmt.Errorf("snapshot: no trace for device %d (the snapshot has %d)", d, len(s.Traces))
	}
	var tr []Event
	if d < len(s.Traces) {
		tr = s.Traces[d]
	}
	in := &Initial{}
	problem := func(format string, a ...any) {
		if len(in.Problems) < maxProblems {
			in.Problems = append(in.Problems, fmt.Sprintf(format, a...))
		}
	}
	type plainSeg struct {
		size   int64
		stream int64
		small  bool
	}
	plain := map[uint64]plainSeg{}
	mapped := map[clusterKey]*runSet{}
	live := map[uint64]liveBlock{}
	for _, seg := range s.Segments {
		if seg.Device != d {
			continue
		}
		if seg.Expandable {
			k := clusterKey{seg.Stream, seg.Small}
			if mapped[k] == nil {
				mapped[k] = &runSet{}
			}
			mapped[k].add(seg.Address, seg.TotalSize)
		} else {
			plain[seg.Address] = plainSeg{seg.TotalSize, seg.Stream, seg.Small}
		}
		for _, b := range seg.Blocks {
			if b.Live() {
				live[b.Address] = liveBlock{size: b.Size, requested: b.Requested, pending: b.State == alloc.StateActivePendingFree}
			}
		}
	}
	// Expandable segments: one per stream and pool. A map event's pool is
	// small when it maps one 2 MiB page (a small-pool block of at most
	// 1 MiB never needs more; large-pool pages are 20 MiB); an unmap's is
	// that of the nearest address known on its stream, as the ranges of
	// two segments lie far apart (each reserves 1 1/8 of the device).
	type label struct {
		addr  uint64
		small bool
	}
	labels := map[int64][]label{}
	for _, seg := range s.Segments {
		if seg.Device == d && seg.Expandable {
			labels[seg.Stream] = append(labels[seg.Stream], label{seg.Address, seg.Small})
		}
	}
	for _, e := range tr {
		if e.Action == alloc.ActionSegmentMap {
			labels[e.Stream] = append(labels[e.Stream], label{e.Addr, e.Size == alloc.SmallBuffer})
		}
	}
	for _, ls := range labels {
		slices.SortFunc(ls, func(x, y label) int { return cmp.Compare(x.addr, y.addr) })
	}
	clusterOf := func(e Event) clusterKey {
		if e.Action == alloc.ActionSegmentMap {
			return clusterKey{e.Stream, e.Size == alloc.SmallBuffer}
		}
		ls := labels[e.Stream]
		i := sort.Search(len(ls), func(i int) bool { return ls[i].addr >= e.Addr })
		small := false
		switch {
		case i < len(ls) && (i == 0 || ls[i].addr-e.Addr < e.Addr-ls[i-1].addr):
			small = ls[i].small
		case i > 0:
			small = ls[i-1].small
		}
		return clusterKey{e.Stream, small}
	}
	for i := len(tr) - 1; i >= 0; i-- {
		e := tr[i]
		switch e.Action {
		case alloc.ActionAlloc:
			if _, ok := live[e.Addr]; ok {
				delete(live, e.Addr)
			} else {
				problem("event %d: alloc at %#x of a block that is neither freed later nor in the final segments", i, e.Addr)
			}
		case alloc.ActionFreeRequested:
			b := live[e.Addr]
			b.requested, b.pending = e.Size, false
			live[e.Addr] = b
		case alloc.ActionFreeCompleted:
			if i > 0 && tr[i-1].Action == alloc.ActionFreeRequested && tr[i-1].Addr == e.Addr {
				continue
			}
			live[e.Addr] = liveBlock{requested: e.Size, pending: true}
		case alloc.ActionSegmentAlloc:
			if _, ok := plain[e.Addr]; !ok {
				problem("event %d: segment_alloc at %#x of a segment that is neither freed later nor in the final segments", i, e.Addr)
			}
			delete(plain, e.Addr)
		case alloc.ActionSegmentFree:
			plain[e.Addr] = plainSeg{e.Size, e.Stream, e.Size == alloc.SmallBuffer}
		case alloc.ActionSegmentMap, alloc.ActionSegmentUnmap:
			k := clusterOf(e)
			if mapped[k] == nil {
				mapped[k] = &runSet{}
			}
			if e.Action == alloc.ActionSegmentMap {
				mapped[k].remove(e.Addr, e.Size)
			} else {
				mapped[k].add(e.Addr, e.Size)
			}
		}
	}

	// Place the blocks in use in their segments.
	addrs := make([]uint64, 0, len(live))
	for a := range live {
		addrs = append(addrs, a)
	}
	slices.Sort(addrs)
	type home struct {
		ps       *PriorSegment
		lo, hi   uint64 // the segment, or the mapped run, that holds the block
		oversize bool
	}
	for addr, ps := range plain {
		in.Plain = append(in.Plain, PriorSegment{Address: addr, Size: ps.size, Stream: ps.stream, Small: ps.small})
	}
	sort.Slice(in.Plain, func(i, j int) bool { return in.Plain[i].Address < in.Plain[j].Address })
	// The base of a segment mapped at the first event is the lowest
	// address seen in it until all of it is unmapped (and its range
	// released); a map into a segment with nothing mapped starts a new
	// range, at its first page.
	bases := map[clusterKey]uint64{}
	ended := map[clusterKey]bool{} // all of the segment unmapped once: its range is gone
	fwd := map[clusterKey]*runSet{}
	for k, rs := range mapped {
		fwd[k] = &runSet{runs: slices.Clone(rs.runs)}
		if len(rs.runs) > 0 {
			bases[k] = rs.runs[0].Addr
		}
	}
	for _, e := range tr {
		if e.Action != alloc.ActionSegmentMap && e.Action != alloc.ActionSegmentUnmap {
			continue
		}
		k := clusterOf(e)
		rs := fwd[k]
		if rs == nil {
			rs = &runSet{}
			fwd[k] = rs
		}
		if e.Action == alloc.ActionSegmentMap {
			if len(rs.runs) == 0 {
				in.epochs = append(in.epochs, e.Addr)
			}
			rs.add(e.Addr, e.Size)
		} else {
			rs.remove(e.Addr, e.Size)
		}
		if b, ok := bases[k]; ok && e.Addr < b && !ended[k] {
			bases[k] = e.Addr
		}
		if len(rs.runs) == 0 {
			ended[k] = true
		}
	}
	for k, rs := range mapped {
		if len(rs.runs) == 0 {
			continue
		}
		in.Expandable = append(in.Expandable, PriorSegment{Address: bases[k], Stream: k.stream, Small: k.small,
			Mapped: slices.Clone(rs.runs)})
	}
	sort.Slice(in.Expandable, func(i, j int) bool { return in.Expandable[i].Address < in.Expandable[j].Address })
	// PyTorch's segments never overlap: a snapshot in which they do is
	// refused.
	var spans []Run
	for _, ps := range in.Plain {
		spans = append(spans, Run{ps.Address, ps.Size})
	}
	for _, ps := range in.Expandable {
		spans = append(spans, ps.Mapped...)
	}
	slices.SortFunc(spans, func(x, y Run) int { return cmp.Compare(x.Addr, y.Addr) })
	for i := 1; i < len(spans); i++ {
		if prev := spans[i-1]; prev.Addr+uint64(prev.Size) > spans[i].Addr || prev.Addr+uint64(prev.Size) < prev.Addr {
			return nil, fmt.Errorf("snapshot: device %d: segments at %#x (%d bytes) and %#x overlap at the first event", d, prev.Addr, prev.Size, spans[i].Addr)
		}
	}
	find := func(addr uint64) (home, bool) {
		i := sort.Search(len(in.Plain), func(i int) bool { return in.Plain[i].Address > addr }) - 1
		if i >= 0 && addr < in.Plain[i].Address+uint64(in.Plain[i].Size) {
			ps := &in.Plain[i]
			return home{ps, ps.Address, ps.Address + uint64(ps.Size), false}, true
		}
		for j := range in.Expandable {
			ps := &in.Expandable[j]
			for _, r := range ps.Mapped {
				if addr >= r.Addr && addr < r.Addr+uint64(r.Size) {
					return home{ps, r.Addr, r.Addr + uint64(r.Size), false}, true
				}
			}
		}
		return home{}, false
	}
	allocs := newAllocIndex(tr)
	firstFree := func(addr uint64) int {
		if i, ok := allocs.freed[addr]; ok {
			return i
		}
		return len(tr)
	}
	maxSplit := cfg.MaxSplitSize
	if maxSplit == 0 {
		maxSplit = 1<<63 - 1
	}
	for i, addr := range addrs {
		b := live[addr]
		h, ok := find(addr)
		if !ok {
			problem("block at %#x (%d bytes asked) lies in no segment at the first event", addr, b.requested)
			continue
		}
		end := h.hi
		if i+1 < len(addrs) && addrs[i+1] < end {
			end = addrs[i+1]
		}
		room := int64(end - addr)
		size := b.size
		if size == 0 {
			size = cfg.RoundSize(max(b.requested, 1))
			// What should_split would not have cut off: less than 512
			// bytes in the small pool and in expandable segments, at
			// most 1 MiB in the large pool, less than 20 MiB after an
			// oversize block.
			var keep int64
			switch {
			case h.ps.Small || h.ps.Size == 0:
				keep = alloc.MinBlockSize - 1
			case size >= maxSplit:
				keep = alloc.LargeBuffer - 1
			default:
				keep = alloc.SmallSize
			}
			// The cached block after this one starts where the trace
			// first allocates after it, before this block is freed:
			// a split takes the front of a cached block.
			if next, ok := allocs.firstAfter(addr+uint64(size), min(end, addr+uint64(size+keep)+1), firstFree(addr)); ok {
				size = int64(next - addr)
			} else if gap := room - size; gap < 0 || gap <= keep {
				size = room
			}
		}
		if size > room || size <= 0 {
			problem("block at %#x of %d bytes overlaps what follows it (%d bytes of room)", addr, size, room)
			continue
		}
		h.ps.Blocks = append(h.ps.Blocks, PriorBlock{Address: addr, Size: size, Requested: min(b.requested, size), Pending: b.pending})
	}
	return in, nil
}

// maxProblems bounds the problems Reconstruct lists.
const maxProblems = 20

// runSet is a set of address ranges, kept sorted and merged.
type runSet struct{ runs []Run }

func (r *runSet) add(addr uint64, size int64)    { r.edit(addr, size, true) }
func (r *runSet) remove(addr uint64, size int64) { r.edit(addr, size, false) }

// edit adds [addr, addr+size) to the set, merged with the runs it meets
// or touches, or removes it, cutting the runs it meets.
func (r *runSet) edit(addr uint64, size int64, add bool) {
	if size <= 0 {
		return
	}
	lo, hi := addr, addr+uint64(size)
	var out []Run
	for _, x := range r.runs {
		xlo, xhi := x.Addr, x.Addr+uint64(x.Size)
		switch {
		case xhi < lo || xlo > hi || !add && (xhi == lo || xlo == hi): // apart
			out = append(out, x)
		case add:
			lo, hi = min(lo, xlo), max(hi, xhi)
		default:
			if xlo < lo {
				out = append(out, Run{xlo, int64(lo - xlo)})
			}
			if xhi > hi {
				out = append(out, Run{hi, int64(xhi - hi)})
			}
		}
	}
	if add {
		out = append(out, Run{lo, int64(hi - lo)})
		sort.Slice(out, func(i, j int) bool { return out[i].Addr < out[j].Addr })
	}
	r.runs = out
}

// allocIndex finds, for an address range, the lowest address the trace
// allocates in it before a given event.
type allocIndex struct {
	addrs []uint64       // addresses of alloc events, sorted, unique
	first map[uint64]int // each one's first alloc event
	freed map[uint64]int // each address's first free_requested event
}

func newAllocIndex(tr []Event) *allocIndex {
	ix := &allocIndex{first: map[uint64]int{}, freed: map[uint64]int{}}
	for i, e := range tr {
		switch e.Action {
		case alloc.ActionAlloc:
			if _, ok := ix.first[e.Addr]; !ok {
				ix.first[e.Addr] = i
				ix.addrs = append(ix.addrs, e.Addr)
			}
		case alloc.ActionFreeRequested:
			if _, ok := ix.freed[e.Addr]; !ok {
				ix.freed[e.Addr] = i
			}
		}
	}
	slices.Sort(ix.addrs)
	return ix
}

// maxScan bounds the addresses firstAfter looks at.
const maxScan = 1 << 16

// firstAfter returns the lowest address in [lo, hi) allocated before event
// before.
func (ix *allocIndex) firstAfter(lo, hi uint64, before int) (uint64, bool) {
	i, _ := slices.BinarySearch(ix.addrs, lo)
	for n := 0; i < len(ix.addrs) && ix.addrs[i] < hi && n < maxScan; i, n = i+1, n+1 {
		if ix.first[ix.addrs[i]] < before {
			return ix.addrs[i], true
		}
	}
	return 0, false
}

// expandableBases are the bases of PyTorch's expandable segments: those of
// the first event, then those the trace starts, in order.
func (in *Initial) expandableBases() []uint64 {
	var out []uint64
	for _, ps := range in.Expandable {
		out = append(out, ps.Address)
	}
	return append(out, in.epochs...)
}
