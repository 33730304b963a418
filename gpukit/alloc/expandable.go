package alloc

import (
	"errors"
	"fmt"
	"log"
	"slices"
	"sync"
)

// Expandable segments, after PyTorch's Note [Expandable Segments] in
// c10/cuda/CUDACachingAllocator.cpp (see doc.go for the commit): instead of
// one device malloc per segment, each pool of each stream gets one range of
// addresses, reserved once and large enough for 1 1/8 of the device, into
// which physical pages (2 MiB for the small pool, 20 MiB for the large one)
// are mapped as blocks need them and unmapped when EmptyCache or the
// out-of-memory retry finds them entirely free. Blocks are carved from the
// mapped pages with the same best fit as elsewhere, so a batch one sample
// larger than the last tiles into the same segment instead of leaving a
// sliver at the end of each old one.
//
// The allocator's bookkeeping follows PyTorch's: the reserved range is a
// segment whose blocks are either mapped (free or in use, as in any segment)
// or unmapped (the pool's unmapped set, ordered by stream and address). Each
// map is a num_device_alloc and a segment_map trace entry, each unmap a
// num_device_free and a segment_unmap entry; reserved_bytes counts mapped
// pages; segment counts and inactive_split do not count expandable segments.

// expandable is the part of a segment that an expandable segment adds:
// PyTorch's ExpandableSegment.
type expandable struct {
	page  int64  // PyTorch's segment_size_: bytes per physical page
	pages []bool // PyTorch's handles_: which pages are mapped, trimmed at the end
	// unreserveFailed marks a segment whose address range the device
	// failed to free (releaseExpandableSegment): with no page mapped it
	// has no block in the pool's blocks, so releaseCached looks for it
	// here to retry.
	unreserveFailed bool
}

// expandableActive reports whether new allocations go to expandable
// segments: PyTorch's is_expandable_segments_active.
func (a *Allocator) expandableActive() bool {
	return a.cfg.ExpandableSegments && a.pages != nil
}

var (
	warnOnce sync.Once
	warnf    = log.Printf // prints allocator warnings; tests replace it
)

// warnUnsupported is PyTorch's TORCH_WARN_ONCE when expandable segments are
// asked of a build without the CUDA driver API (CUDAAllocatorConfig.h): once
// per process.
func warnUnsupported() {
	warnOnce.Do(func() { warnf("alloc: Warning: expandable_segments not supported on this platform") })
}

// SetExpandableSegments switches expandable segments on or off for the
// allocations that follow, as
// torch.cuda.memory._set_allocator_settings("expandable_segments:...")
// does. Blocks already carved from expandable segments stay where they are;
// while the setting is off, no new allocation is placed in them. On a Memory
// without PageMemory, switching on warns once and changes nothing.
func (a *Allocator) SetExpandableSegments(on bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.cfg.ExpandableSegments = on
	if on && a.pages == nil {
		warnUnsupported()
	}
}

// unmappedLess orders unmapped blocks like PyTorch's BlockComparatorAddress:
// by stream, then address.
func unmappedLess(x, y *node) int {
	switch {
	case x.stream != y.stream:
		if x.stream < y.stream {
			return -1
		}
		return 1
	case x.addr < y.addr:
		return -1
	case x.addr > y.addr:
		return 1
	}
	return 0
}

func (p *pool) insertUnmapped(n *node) {
	i, _ := slices.BinarySearchFunc(p.unmapped, n, unmappedLess)
	p.unmapped = slices.Insert(p.unmapped, i, n)
}

func (p *pool) removeUnmapped(n *node) {
	i, found := slices.BinarySearchFunc(p.unmapped, n, unmappedLess)
	if !found || p.unmapped[i] != n {
		panic("alloc: internal error: unmapped block missing from its pool")
	}
	p.unmapped = slices.Delete(p.unmapped, i, i+1)
}

// allocatable is PyTorch's lambda of find_expandable_block: a block that
// could become part of a new allocation.
func allocatable(n *node) bool {
	return n != nil && !n.allocated && n.eventCount == 0 && len(n.streamUses) == 0
}

// findExpandableBlock returns the lowest-addressed run of free and unmapped
// blocks of stream s that holds size bytes, starting at an unmapped block or
// at the free block just before one; failing that, a new expandable
// segment's single unmapped block. PyTorch's find_expandable_block.
func (a *Allocator) findExpandableBlock(p *pool, s Stream, size int64) (*node, error) {
	hasRoom := func(n *node) bool {
		var bytes int64
		for bytes < size && allocatable(n) {
			bytes += n.size
			n = n.next
		}
		return bytes >= size
	}
	i, _ := slices.BinarySearchFunc(p.unmapped, &node{stream: s}, unmappedLess)
	for ; i < len(p.unmapped) && p.unmapped[i].stream == s; i++ {
		c := p.unmapped[i]
		if allocatable(c.prev) {
			c = c.prev
		}
		if hasRoom(c) {
			return c, nil
		}
	}
	page, total := a.expandableRange(p)
	addr, err := a.pages.Reserve(total)
	if err != nil {
		return nil, fmt.Errorf("alloc: reserving %d bytes of addresses for an expandable segment: %w", total, err)
	}
	seg := &segment{addr: addr, size: total, stream: s, pool: p, exp: &expandable{page: page}}
	n := a.newNode()
	*n = node{addr: addr, size: seg.size, stream: s, seg: seg, unmapped: true}
	seg.head = n
	a.expSegs = append(a.expSegs, seg)
	p.insertUnmapped(n)
	return n, nil
}

// expandableRange is the page size of pool p's expandable segments (2 MiB
// in the small pool, 20 MiB in the large one) and the bytes of address
// space each reserves: 1 1/8 of the device in whole pages, "for some cases
// where we have to unmap pages earlier in the segment to put them at the
// end".
func (a *Allocator) expandableRange(p *pool) (page, total int64) {
	page = LargeBuffer
	if p.small {
		page = SmallBuffer
	}
	capacity := a.mem.Capacity()
	return page, (capacity + capacity/8 + page - 1) / page * page
}

// mapBlock maps the pages under the first size bytes of the unmapped block
// n, which becomes a free mapped block (merged with free neighbours) and
// leaves the rest unmapped. It returns false when the device is full.
// PyTorch's map_block and ExpandableSegment::map.
func (a *Allocator) mapBlock(n *node, size int64, frames []Frame) (bool, error) {
	if !n.unmapped || size > n.size {
		panic("alloc: internal error: mapping a mapped block")
	}
	seg := n.seg
	e := seg.exp
	begin := int64(n.addr-seg.addr) / e.page
	end := (int64(n.addr-seg.addr) + size + e.page - 1) / e.page
	if begin == end {
		return false, nil
	}
	if int64(n.addr-seg.addr) != begin*e.page {
		panic("alloc: internal error: unmapped block not aligned to its pages")
	}
	if err := a.pages.MapPages(seg.addr+uint64(begin*e.page), e.page, int(end-begin)); err != nil {
		if errors.Is(err, ErrDeviceFull) {
			return false, nil
		}
		return false, fmt.Errorf("alloc: mapping %d pages of %d bytes at 0x%x failed: %w",
			end-begin, e.page, seg.addr+uint64(begin*e.page), err)
	}
	for int64(len(e.pages)) < end {
		e.pages = append(e.pages, false)
	}
	for i := begin; i < end; i++ {
		e.pages[i] = true
	}
	mapped := (end - begin) * e.page
	p := seg.pool
	p.removeUnmapped(n)
	n.unmapped = false
	if mapped < n.size {
		rest := a.newNode()
		*rest = node{addr: n.addr + uint64(mapped), size: n.size - mapped, stream: n.stream, seg: seg,
			unmapped: true, prev: n, next: n.next}
		if n.next != nil {
			n.next.prev = rest
		}
		n.next = rest
		p.insertUnmapped(rest)
		n.size = mapped
	}
	a.tryMerge(n, n.prev, p)
	a.tryMerge(n, n.next, p)
	n.gcBase = p.getFreeBlocksCalls
	p.blocks.insert(n)

	a.totalReserved += mapped
	a.stats.reservedBytes.inc(p.small, mapped)
	a.stats.numDeviceAlloc++
	a.trace(ActionSegmentMap, seg.addr+uint64(begin*e.page), mapped, n.stream, frames)
	if n.prev == nil && n.segFrames == nil {
		n.segFrames = frames
	}
	return true, nil
}

// tryAllocateExpandable maps what a block of size bytes needs and returns
// that free block, taken out of the pool, or nil when the device is full.
// PyTorch's try_allocate_expandable_block.
func (a *Allocator) tryAllocateExpandable(p *pool, s Stream, size int64, frames []Frame) (*node, error) {
	c, err := a.findExpandableBlock(p, s, size)
	if err != nil {
		return nil, err
	}
	// c heads a run with room for size: unmapped, unmapped then free, or
	// free then unmapped.
	if c.unmapped {
		if ok, err := a.mapBlock(c, min(c.size, size), frames); !ok {
			return nil, err
		}
	}
	for c.size < size {
		// c is free and followed by an unmapped block: map what is missing,
		// which merges with c.
		next := c.next
		if next == nil || !next.unmapped {
			// The request is larger than the whole range (1 1/8 of the
			// device): only a device that maps beyond its capacity gets
			// here, and the block cannot be placed.
			return nil, nil
		}
		if ok, err := a.mapBlock(next, min(size-c.size, next.size), frames); !ok {
			return nil, err
		}
		c = next
	}
	p.blocks.remove(c)
	return c, nil
}

// unmapBlock unmaps the pages that lie entirely inside the free block n;
// what is left of n on either side stays mapped and free. PyTorch's
// unmap_block and ExpandableSegment::unmap. When UnmapPages fails, nothing
// changes: the pages stay mapped, reserved and counted, n stays free, and
// the error is returned for the caller to pass on. PyTorch's unmapHandles
// throws from C10_CUDA_DRIVER_CHECK(cuMemUnmap_(...)) after it has
// forgotten the page's handle, before unmap_block updates its pool or its
// statistics.
func (a *Allocator) unmapBlock(n *node, frames []Frame) error {
	seg := n.seg
	e := seg.exp
	off := int64(n.addr - seg.addr)
	begin := (off + e.page - 1) / e.page
	end := (off + n.size) / e.page
	if begin >= end {
		return nil
	}
	start := seg.addr + uint64(begin*e.page)
	if err := a.pages.UnmapPages(n.stream, start, e.page, int(end-begin)); err != nil {
		return fmt.Errorf("alloc: unmapping %d pages at 0x%x failed: %w", end-begin, start, err)
	}
	for i := begin; i < end; i++ {
		e.pages[i] = false
	}
	for len(e.pages) > 0 && !e.pages[len(e.pages)-1] {
		e.pages = e.pages[:len(e.pages)-1]
	}
	size := (end - begin) * e.page
	p := seg.pool
	p.blocks.remove(n)
	if before := int64(start - n.addr); before > 0 {
		b := a.newNode()
		*b = node{addr: n.addr, size: before, stream: n.stream, seg: seg, prev: n.prev, next: n,
			gcBase: p.getFreeBlocksCalls}
		if n.prev != nil {
			n.prev.next = b
		} else {
			seg.head = b
		}
		n.prev = b
		p.blocks.insert(b)
	}
	if after := n.size - int64(start-n.addr) - size; after > 0 {
		b := a.newNode()
		*b = node{addr: start + uint64(size), size: after, stream: n.stream, seg: seg, prev: n, next: n.next,
			gcBase: p.getFreeBlocksCalls}
		if n.next != nil {
			n.next.prev = b
		}
		n.next = b
		p.blocks.insert(b)
	}
	n.addr = start
	n.size = size
	n.unmapped = true
	a.tryMerge(n, n.prev, p)
	a.tryMerge(n, n.next, p)
	p.insertUnmapped(n)

	a.totalReserved -= size
	a.stats.reservedBytes.dec(p.small, size)
	a.stats.numDeviceFree++
	ctx := frames
	if ctx == nil {
		ctx = n.segFrames
	}
	a.trace(ActionSegmentUnmap, start, size, n.stream, ctx)
	return nil
}

// releaseExpandableSegment frees the addresses of a segment that has no
// page mapped: n is its single, unmapped block. PyTorch's
// release_expandable_segment, whose delete of the ExpandableSegment runs
// C10_CUDA_DRIVER_CHECK(cuMemAddressFree_(...)) in a destructor. When
// Unreserve fails, the segment stays, unmapped (reserved_bytes counts none
// of it), for the stream's next allocation to map or for releaseCached to
// retry (retryUnreserve), and the error is returned.
func (a *Allocator) releaseExpandableSegment(n *node) error {
	seg := n.seg
	if !n.unmapped || n.isSplit() || n.size != seg.size {
		panic("alloc: internal error: releasing an expandable segment that is in use")
	}
	if err := a.pages.Unreserve(seg.addr, seg.size); err != nil {
		seg.exp.unreserveFailed = true
		return fmt.Errorf("alloc: freeing the %d-byte address range at 0x%x failed: %w", seg.size, seg.addr, err)
	}
	seg.pool.removeUnmapped(n)
	i := slices.Index(a.expSegs, seg)
	a.expSegs = slices.Delete(a.expSegs, i, i+1)
	a.recycle(n)
	return nil
}

// retryUnreserve frees the address ranges of pool p's expandable segments
// that a failed Unreserve left behind and that still have no page mapped.
// A range whose first map found the device full is not one of them: it
// stays reserved for the stream's next allocation, as in PyTorch, where no
// cached block leads release_blocks to it.
func (a *Allocator) retryUnreserve(p *pool) error {
	for i := 0; i < len(a.expSegs); {
		seg := a.expSegs[i]
		if n := seg.head; seg.pool == p && seg.exp.unreserveFailed && n.unmapped && !n.isSplit() {
			if err := a.releaseExpandableSegment(n); err != nil {
				return err
			}
			continue // a.expSegs[i] is the next segment now
		}
		i++
	}
	return nil
}

// expandableSize is the size a free block could grow to by mapping the
// unmapped block after it, which best fit uses for blocks of expandable
// segments.
func expandableSize(n *node) int64 {
	if n.next != nil && n.next.unmapped {
		return n.size + n.next.size
	}
	return n.size
}
