package alloc

import (
	"fmt"
	"sort"
)

// checkInvariants verifies the allocator's internal structure and recounts
// every statistic from the block lists. It returns the first violation.
func checkInvariants(a *Allocator) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	var st deviceStats
	inPool := map[*node]bool{}
	for _, p := range []*pool{&a.small, &a.large} {
		if err := checkSet(&p.blocks); err != nil {
			return err
		}
		p.blocks.each(func(n *node) { inPool[n] = true })
	}
	var cachedCount int
	var reserved int64
	type span struct{ lo, hi uint64 }
	var spans []span
	for addr, seg := range a.segments {
		if addr != seg.addr {
			return fmt.Errorf("segment map key 0x%x != segment addr 0x%x", addr, seg.addr)
		}
		spans = append(spans, span{seg.addr, seg.addr + uint64(seg.size)})
		small := seg.pool.small
		if want := segmentSizeOK(seg.size, small); !want {
			return fmt.Errorf("segment 0x%x of %d bytes in the wrong pool (small=%v)", seg.addr, seg.size, small)
		}
		reserved += seg.size
		st.segment.inc(small, 1)
		st.reservedBytes.inc(small, seg.size)
		if seg.size >= a.maxSplit {
			st.oversizeSegments.inc(1)
		}
		if seg.head == nil || seg.head.prev != nil {
			return fmt.Errorf("segment 0x%x: bad head", seg.addr)
		}
		addrAt := seg.addr
		var total int64
		var prev *node
		for n := seg.head; n != nil; n = n.next {
			if n.prev != prev {
				return fmt.Errorf("segment 0x%x: broken prev link at 0x%x", seg.addr, n.addr)
			}
			if n.seg != seg {
				return fmt.Errorf("block 0x%x: wrong segment", n.addr)
			}
			if n.addr != addrAt || n.size <= 0 || n.size%MinBlockSize != 0 {
				return fmt.Errorf("segment 0x%x: block at 0x%x size %d, expected address 0x%x", seg.addr, n.addr, n.size, addrAt)
			}
			if n.stream != seg.stream {
				return fmt.Errorf("block 0x%x: stream %d in a segment of stream %d", n.addr, n.stream, seg.stream)
			}
			addrAt += uint64(n.size)
			total += n.size
			cached := !n.allocated && n.eventCount == 0 && len(n.streamUses) == 0
			if cached != inPool[n] {
				return fmt.Errorf("block 0x%x: cached=%v but inPool=%v", n.addr, cached, inPool[n])
			}
			if cached && prev != nil && !prev.allocated && prev.eventCount == 0 {
				return fmt.Errorf("blocks 0x%x and 0x%x are both cached but not merged", prev.addr, n.addr)
			}
			if n.allocated {
				if n.handle == nil || n.handle.n != n || n.handle.addr != n.addr || n.handle.size != n.size {
					return fmt.Errorf("block 0x%x: bad handle", n.addr)
				}
				st.allocation.inc(small, 1)
				st.allocatedBytes.inc(small, n.size)
				if n.size >= a.maxSplit {
					st.oversizeAllocations.inc(1)
				}
			} else if len(n.streamUses) > 0 {
				return fmt.Errorf("block 0x%x: free block with stream uses", n.addr)
			}
			if !cached && (n.requested <= 0 || n.requested > n.size) {
				return fmt.Errorf("block 0x%x of %d bytes was requested as %d bytes", n.addr, n.size, n.requested)
			}
			if !cached {
				st.active.inc(small, 1)
				st.activeBytes.inc(small, n.size)
				st.requestedBytes.inc(small, n.requested)
			} else {
				cachedCount++
				if n.isSplit() {
					st.inactiveSplit.inc(small, 1)
					st.inactiveSplitBytes.inc(small, n.size)
				}
			}
			prev = n
		}
		if total != seg.size {
			return fmt.Errorf("segment 0x%x: blocks add up to %d, segment is %d", seg.addr, total, seg.size)
		}
	}
	nUnmapped := 0
	for _, seg := range a.expSegs {
		spans = append(spans, span{seg.addr, seg.addr + uint64(seg.size)})
		r, n, err := checkExpandable(a, seg, inPool, &st)
		if err != nil {
			return err
		}
		reserved += r
		cachedCount += n
		nUnmapped += seg.pool.unmappedIn(seg)
	}
	if nUnmapped != len(a.small.unmapped)+len(a.large.unmapped) {
		return fmt.Errorf("%d unmapped blocks in segments, pools hold %d", nUnmapped, len(a.small.unmapped)+len(a.large.unmapped))
	}
	for _, p := range []*pool{&a.small, &a.large} {
		for i := 1; i < len(p.unmapped); i++ {
			if unmappedLess(p.unmapped[i-1], p.unmapped[i]) >= 0 {
				return fmt.Errorf("unmapped set out of order at 0x%x", p.unmapped[i].addr)
			}
		}
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i].lo < spans[j].lo })
	for i := 1; i < len(spans); i++ {
		if spans[i].lo < spans[i-1].hi {
			return fmt.Errorf("segments overlap at 0x%x", spans[i].lo)
		}
	}
	if cachedCount != a.small.blocks.len()+a.large.blocks.len() {
		return fmt.Errorf("%d cached blocks, pools hold %d", cachedCount, a.small.blocks.len()+a.large.blocks.len())
	}
	if a.totalReserved > a.mem.Capacity() {
		return fmt.Errorf("reserved %d bytes on a device of %d", a.totalReserved, a.mem.Capacity())
	}
	if reserved != a.totalReserved {
		return fmt.Errorf("reserved %d, totalReserved %d", reserved, a.totalReserved)
	}
	np := 0
	for _, q := range a.pending {
		np += len(q)
	}
	if np != a.nPending {
		return fmt.Errorf("nPending %d, queues hold %d", a.nPending, np)
	}
	// Compare current values; peaks must be at least the current values.
	got := a.stats.arrays()
	want := st.arrays()
	for i := range got {
		for j := 0; j < 3; j++ {
			g, w := got[i].arr[j], want[i].arr[j]
			if g.Current != w.Current {
				return fmt.Errorf("%s.%s.current = %d, recount %d", got[i].name, statPoolNames[j], g.Current, w.Current)
			}
			if g.Peak < g.Current {
				return fmt.Errorf("%s.%s: inconsistent %+v", got[i].name, statPoolNames[j], g)
			}
		}
		all := got[i].arr
		if all[0].Current != all[1].Current+all[2].Current {
			return fmt.Errorf("%s: all != small + large", got[i].name)
		}
	}
	if a.stats.oversizeAllocations.Current != st.oversizeAllocations.Current ||
		a.stats.oversizeSegments.Current != st.oversizeSegments.Current {
		return fmt.Errorf("oversize stats %+v %+v, recount %+v %+v", a.stats.oversizeAllocations,
			a.stats.oversizeSegments, st.oversizeAllocations, st.oversizeSegments)
	}
	fm, ok := a.mem.(*FakeMemory)
	if w, isW := a.mem.(*failingMemory); isW {
		fm, ok = w.FakeMemory, true
	}
	if ok {
		nseg, used := fm.Live()
		if nseg != len(a.segments) || used != a.totalReserved {
			return fmt.Errorf("fake memory holds %d segments / %d bytes, allocator %d / %d", nseg, used, len(a.segments), a.totalReserved)
		}
		if ranges, _ := fm.Reservations(); ranges != len(a.expSegs) {
			return fmt.Errorf("fake memory holds %d address ranges, allocator %d expandable segments", ranges, len(a.expSegs))
		}
	}
	return nil
}

// segmentSizeOK reports whether a segment of size bytes belongs in the small
// pool exactly when small is true.
func segmentSizeOK(size int64, small bool) bool {
	if small {
		return size == SmallBuffer
	}
	return size == LargeBuffer || (size >= MinLargeAlloc && size%RoundLarge == 0)
}

func checkSet(s *freeSet) error {
	if len(s.last) != len(s.leaves) {
		return fmt.Errorf("freeSet: %d keys for %d leaves", len(s.last), len(s.leaves))
	}
	n := 0
	var prev *fkey
	for i, leaf := range s.leaves {
		if len(leaf) == 0 || len(leaf) > leafMax {
			return fmt.Errorf("freeSet: leaf %d has %d entries", i, len(leaf))
		}
		if s.last[i] != leaf[len(leaf)-1].k {
			return fmt.Errorf("freeSet: stale last key of leaf %d", i)
		}
		for j := range leaf {
			e := &leaf[j]
			if e.k != keyOf(e.n) {
				return fmt.Errorf("freeSet: key %+v of block with key %+v", e.k, keyOf(e.n))
			}
			if prev != nil && !prev.less(e.k) {
				return fmt.Errorf("freeSet: out of order at %+v", e.k)
			}
			prev = &e.k
			n++
		}
	}
	if n != s.n {
		return fmt.Errorf("freeSet: count %d, holds %d", s.n, n)
	}
	if s.spare != nil {
		if len(s.spare) != 0 || cap(s.spare) != leafMax+1 {
			return fmt.Errorf("freeSet: spare leaf of length %d, capacity %d", len(s.spare), cap(s.spare))
		}
		for _, e := range s.spare[:cap(s.spare)] {
			if e.n != nil {
				return fmt.Errorf("freeSet: the spare leaf still holds the block at %#x", e.n.addr)
			}
		}
		for i, leaf := range s.leaves {
			if &leaf[:1][0] == &s.spare[:1][0] {
				return fmt.Errorf("freeSet: leaf %d is the spare", i)
			}
		}
	}
	return nil
}

// unmappedIn counts the blocks of p's unmapped set that belong to seg.
func (p *pool) unmappedIn(seg *segment) int {
	n := 0
	for _, b := range p.unmapped {
		if b.seg == seg {
			n++
		}
	}
	return n
}

// checkExpandable verifies one expandable segment: its blocks tile the
// reserved range, unmapped blocks cover exactly the unmapped pages and sit in
// the unmapped set, neighbours of the same kind are merged, and the blocks'
// statistics go into st (inactive_split excepted, as in PyTorch). It returns
// the mapped bytes and the number of cached mapped blocks.
func checkExpandable(a *Allocator, seg *segment, inPool map[*node]bool, st *deviceStats) (mapped int64, cached int, err error) {
	e := seg.exp
	small := seg.pool.small
	if want := int64(LargeBuffer); small && e.page != SmallBuffer || !small && e.page != want {
		return 0, 0, fmt.Errorf("expandable segment 0x%x: page of %d bytes in the wrong pool", seg.addr, e.page)
	}
	if seg.size%e.page != 0 || int64(len(e.pages))*e.page > seg.size {
		return 0, 0, fmt.Errorf("expandable segment 0x%x: %d bytes, %d pages of %d", seg.addr, seg.size, len(e.pages), e.page)
	}
	if len(e.pages) > 0 && !e.pages[len(e.pages)-1] {
		return 0, 0, fmt.Errorf("expandable segment 0x%x: page list not trimmed", seg.addr)
	}
	if seg.head == nil || seg.head.prev != nil || seg.head.addr != seg.addr {
		return 0, 0, fmt.Errorf("expandable segment 0x%x: bad head", seg.addr)
	}
	pageMapped := func(i int64) bool { return i < int64(len(e.pages)) && e.pages[i] }
	at := seg.addr
	var prev *node
	for n := seg.head; n != nil; n = n.next {
		if n.prev != prev || n.seg != seg || n.addr != at || n.size <= 0 || n.size%MinBlockSize != 0 || n.stream != seg.stream {
			return 0, 0, fmt.Errorf("expandable segment 0x%x: bad block at 0x%x (%d bytes)", seg.addr, n.addr, n.size)
		}
		off := int64(n.addr - seg.addr)
		if n.unmapped {
			if off%e.page != 0 || n.size%e.page != 0 || n.allocated || n.eventCount > 0 || inPool[n] {
				return 0, 0, fmt.Errorf("expandable segment 0x%x: unmapped block 0x%x misplaced", seg.addr, n.addr)
			}
			if prev != nil && prev.unmapped {
				return 0, 0, fmt.Errorf("expandable segment 0x%x: unmapped blocks 0x%x and 0x%x not merged", seg.addr, prev.addr, n.addr)
			}
			for i := off / e.page; i < (off+n.size)/e.page; i++ {
				if pageMapped(i) {
					return 0, 0, fmt.Errorf("expandable segment 0x%x: unmapped block 0x%x over mapped page %d", seg.addr, n.addr, i)
				}
			}
		} else {
			for i := off / e.page; i < (off+n.size+e.page-1)/e.page; i++ {
				if !pageMapped(i) {
					return 0, 0, fmt.Errorf("expandable segment 0x%x: block 0x%x over unmapped page %d", seg.addr, n.addr, i)
				}
			}
			free := !n.allocated && n.eventCount == 0 && len(n.streamUses) == 0
			if free != inPool[n] {
				return 0, 0, fmt.Errorf("block 0x%x: free=%v but inPool=%v", n.addr, free, inPool[n])
			}
			if free && prev != nil && !prev.unmapped && !prev.allocated && prev.eventCount == 0 {
				return 0, 0, fmt.Errorf("blocks 0x%x and 0x%x are both free but not merged", prev.addr, n.addr)
			}
			if n.allocated {
				if n.handle == nil || n.handle.n != n || n.handle.addr != n.addr || n.handle.size != n.size {
					return 0, 0, fmt.Errorf("block 0x%x: bad handle", n.addr)
				}
				st.allocation.inc(small, 1)
				st.allocatedBytes.inc(small, n.size)
				if n.size >= a.maxSplit {
					st.oversizeAllocations.inc(1)
				}
			}
			if free {
				cached++
			} else {
				st.active.inc(small, 1)
				st.activeBytes.inc(small, n.size)
				st.requestedBytes.inc(small, n.requested)
			}
		}
		at += uint64(n.size)
		prev = n
	}
	if at != seg.addr+uint64(seg.size) {
		return 0, 0, fmt.Errorf("expandable segment 0x%x: blocks end at 0x%x", seg.addr, at)
	}
	for _, m := range e.pages {
		if m {
			mapped += e.page
		}
	}
	st.reservedBytes.inc(small, mapped)
	return mapped, cached, nil
}
