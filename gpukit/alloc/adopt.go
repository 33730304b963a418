package alloc

import (
	"fmt"
	"slices"
)

// Adopting a segment: a PyTorch memory snapshot's trace is a ring buffer
// that usually starts mid-run, so segments and blocks made before its first
// event appear only in its final state. To replay such a trace, the
// allocator must start with those segments already in place, their blocks
// in use at their offsets, as if it had made them itself. Adopt does that,
// and nothing else: it records no history entry (the events happened
// before), and it counts what it adopts in the statistics as the allocator
// would have counted making it (segment, reserved_bytes, num_device_alloc,
// allocation, allocated_bytes, active, requested_bytes, inactive_split).

// PriorBlock is a block in use inside an adopted segment.
type PriorBlock struct {
	Offset    int64 // from the start of the segment (of its reserved range, if expandable)
	Size      int64 // the block's size, as the allocator counts it: a multiple of 512
	Requested int64 // the size that was asked of the allocator, at most Size
}

// PageRun is a run of mapped pages of an expandable segment: Offset and Size
// are multiples of the segment's page (2 MiB in the small pool, 20 MiB in
// the large one).
type PageRun struct {
	Offset, Size int64
}

// PriorSegment describes a segment that existed before the allocator took
// it over.
type PriorSegment struct {
	// Size of a plain segment, in bytes (what cudaMalloc was asked). For an
	// expandable segment it must be 0: the allocator reserves the range it
	// always reserves (1 1/8 of the device, see expandable.go).
	Size   int64
	Stream Stream
	Small  bool // the small pool's segment (blocks of at most 1 MiB)
	// Expandable marks a segment of expandable_segments:True; Mapped then
	// lists its runs of mapped pages, by offset, and needs a PageMemory.
	Expandable bool
	Mapped     []PageRun
	// Blocks in use, in increasing offset, not overlapping; the rest of the
	// segment (of its mapped pages, if expandable) is cached.
	Blocks []PriorBlock
}

// Adopt adds a segment that an earlier run of an allocator made, with its
// blocks in use, and returns those blocks, in the order of ps.Blocks. A
// plain segment is allocated with Memory.Malloc(ps.Size) and an expandable
// one with PageMemory.Reserve and one MapPages per run, so the Memory keeps
// count as for any segment; it places them where it likes (the blocks'
// addresses are the segment's plus their offsets). Adopt refuses, with an
// error, a layout the allocator could not have made: blocks outside the
// segment or its mapped pages, overlapping, or not multiples of 512 bytes;
// and it returns the error of a Memory that cannot hold the segment. The
// memory fraction is not checked: the segment already exists.
func (a *Allocator) Adopt(ps PriorSegment) ([]*Block, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	p := &a.large
	if ps.Small {
		p = &a.small
	}
	if ps.Expandable {
		return a.adoptExpandable(p, ps)
	}
	if ps.Size <= 0 || ps.Size%MinBlockSize != 0 {
		return nil, fmt.Errorf("alloc: Adopt: segment size %d is not a positive multiple of %d bytes", ps.Size, MinBlockSize)
	}
	if len(ps.Mapped) > 0 {
		return nil, fmt.Errorf("alloc: Adopt: a plain segment has no mapped pages (Mapped is for expandable segments)")
	}
	if err := checkPriorBlocks(ps.Blocks, []PageRun{{0, ps.Size}}); err != nil {
		return nil, err
	}
	addr, err := a.mem.Malloc(ps.Size)
	if err != nil {
		return nil, fmt.Errorf("alloc: Adopt: device malloc of %d bytes failed: %w", ps.Size, err)
	}
	a.totalReserved += ps.Size
	seg := &segment{addr: addr, size: ps.Size, stream: ps.Stream, pool: p}
	a.segments[addr] = seg
	a.stats.segment.inc(p.small, 1)
	a.stats.reservedBytes.inc(p.small, ps.Size)
	if ps.Size >= a.maxSplit {
		a.stats.oversizeSegments.inc(1)
	}
	a.stats.numDeviceAlloc++
	link := linker(seg)
	blocks := a.layRun(p, seg, 0, ps.Size, ps.Blocks, link)
	if seg.head.isSplit() {
		for n := seg.head; n != nil; n = n.next {
			if !n.allocated {
				a.stats.inactiveSplit.inc(p.small, 1)
				a.stats.inactiveSplitBytes.inc(p.small, n.size)
			}
		}
	}
	return blocks, nil
}

// linker returns a function that appends a node to seg's list of blocks,
// in address order.
func linker(seg *segment) func(*node) {
	var last *node
	return func(n *node) {
		n.prev = last
		if last == nil {
			seg.head = n
		} else {
			last.next = n
		}
		last = n
	}
}

// layRun makes the nodes of [off, off+size) of seg: the blocks in use that
// lie in it and cached blocks between them, passing each to link in
// address order, and returns the handles of the blocks in use.
func (a *Allocator) layRun(p *pool, seg *segment, off, size int64, prior []PriorBlock, link func(*node)) []*Block {
	var out []*Block
	free := func(from, to int64) {
		if to <= from {
			return
		}
		n := a.newNode()
		*n = node{addr: seg.addr + uint64(from), size: to - from, stream: seg.stream, seg: seg, gcBase: p.getFreeBlocksCalls}
		link(n)
		p.blocks.insert(n)
	}
	at := off
	for _, pb := range prior {
		if pb.Offset < off || pb.Offset >= off+size {
			continue
		}
		free(at, pb.Offset)
		n := a.newNode()
		*n = node{addr: seg.addr + uint64(pb.Offset), size: pb.Size, requested: pb.Requested, stream: seg.stream,
			seg: seg, allocated: true}
		link(n)
		b := &Block{a: a, n: n, addr: n.addr, size: n.size, requested: n.requested, stream: n.stream,
			seg: seg.addr, off: pb.Offset}
		n.handle = b
		out = append(out, b)
		a.stats.allocation.inc(p.small, 1)
		a.stats.allocatedBytes.inc(p.small, pb.Size)
		a.stats.active.inc(p.small, 1)
		a.stats.activeBytes.inc(p.small, pb.Size)
		a.stats.requestedBytes.inc(p.small, pb.Requested)
		if pb.Size >= a.maxSplit {
			a.stats.oversizeAllocations.inc(1)
		}
		at = pb.Offset + pb.Size
	}
	free(at, off+size)
	return out
}

// checkPriorBlocks reports whether blocks, in increasing offset, lie each
// inside one of runs without overlapping.
func checkPriorBlocks(blocks []PriorBlock, runs []PageRun) error {
	end := int64(-1)
	for i, b := range blocks {
		switch {
		case b.Size <= 0 || b.Size%MinBlockSize != 0 || b.Offset < 0 || b.Offset%MinBlockSize != 0:
			return fmt.Errorf("alloc: Adopt: block %d (offset %d, %d bytes) is not a positive multiple of %d bytes at a multiple of %d", i, b.Offset, b.Size, MinBlockSize, MinBlockSize)
		case b.Requested < 0 || b.Requested > b.Size:
			return fmt.Errorf("alloc: Adopt: block %d asked %d bytes, more than its %d bytes (or fewer than 0)", i, b.Requested, b.Size)
		case b.Offset < end:
			return fmt.Errorf("alloc: Adopt: block %d (offset %d) overlaps the block before it, or comes before it", i, b.Offset)
		}
		end = b.Offset + b.Size
		if !slices.ContainsFunc(runs, func(r PageRun) bool { return b.Offset >= r.Offset && end <= r.Offset+r.Size }) {
			return fmt.Errorf("alloc: Adopt: block %d (offset %d, %d bytes) lies outside the segment or its mapped pages", i, b.Offset, b.Size)
		}
	}
	return nil
}

// adoptExpandable reserves an expandable segment's range, maps its runs and
// lays its blocks out.
func (a *Allocator) adoptExpandable(p *pool, ps PriorSegment) ([]*Block, error) {
	if a.pages == nil {
		return nil, fmt.Errorf("alloc: Adopt: an expandable segment needs a Memory with pages (PageMemory)")
	}
	if ps.Size != 0 {
		return nil, fmt.Errorf("alloc: Adopt: an expandable segment's Size must be 0 (the allocator sizes its range), not %d", ps.Size)
	}
	page, total := a.expandableRange(p)
	end := int64(0)
	for i, r := range ps.Mapped {
		if r.Size <= 0 || r.Offset%page != 0 || r.Size%page != 0 || r.Offset < end || r.Offset+r.Size > total {
			return nil, fmt.Errorf("alloc: Adopt: mapped run %d (offset %d, %d bytes) is not whole %d-byte pages in increasing order inside the %d-byte range", i, r.Offset, r.Size, page, total)
		}
		end = r.Offset + r.Size
	}
	if err := checkPriorBlocks(ps.Blocks, ps.Mapped); err != nil {
		return nil, err
	}
	addr, err := a.pages.Reserve(total)
	if err != nil {
		return nil, fmt.Errorf("alloc: Adopt: reserving %d bytes of addresses: %w", total, err)
	}
	for i, r := range ps.Mapped {
		if err := a.pages.MapPages(addr+uint64(r.Offset), page, int(r.Size/page)); err != nil {
			for _, done := range ps.Mapped[:i] {
				_ = a.pages.UnmapPages(ps.Stream, addr+uint64(done.Offset), page, int(done.Size/page))
			}
			_ = a.pages.Unreserve(addr, total)
			return nil, fmt.Errorf("alloc: Adopt: mapping %d bytes at offset %d: %w", r.Size, r.Offset, err)
		}
	}
	seg := &segment{addr: addr, size: total, stream: ps.Stream, pool: p, exp: &expandable{page: page}}
	link := linker(seg)
	unmapped := func(from, to int64) {
		if to <= from {
			return
		}
		n := a.newNode()
		*n = node{addr: addr + uint64(from), size: to - from, stream: ps.Stream, seg: seg, unmapped: true}
		link(n)
		p.insertUnmapped(n)
	}
	var blocks []*Block
	at := int64(0)
	for _, r := range ps.Mapped {
		unmapped(at, r.Offset)
		blocks = append(blocks, a.layRun(p, seg, r.Offset, r.Size, ps.Blocks, link)...)
		for int64(len(seg.exp.pages)) < (r.Offset+r.Size)/page {
			seg.exp.pages = append(seg.exp.pages, false)
		}
		for i := r.Offset / page; i < (r.Offset+r.Size)/page; i++ {
			seg.exp.pages[i] = true
		}
		at = r.Offset + r.Size
		a.totalReserved += r.Size
		a.stats.reservedBytes.inc(p.small, r.Size)
		a.stats.numDeviceAlloc++
	}
	unmapped(at, total)
	a.expSegs = append(a.expSegs, seg)
	return blocks, nil
}
