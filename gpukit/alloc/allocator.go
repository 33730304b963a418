package alloc

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
)

// node is the allocator's record of one block: a contiguous range of a
// segment, allocated, pending free (waiting for stream events) or cached.
type node struct {
	addr       uint64
	size       int64
	requested  int64
	stream     Stream
	seg        *segment
	prev, next *node // neighbours in the segment, by address
	allocated  bool
	eventCount int      // outstanding record-stream events
	streamUses []Stream // streams recorded with RecordStream while allocated
	gcBase     int64    // pool.getFreeBlocksCalls when cached
	handle     *Block
	frames     []Frame // stack of the allocation, when recorded
	// unmapped marks a block of an expandable segment whose addresses have
	// no physical pages (PyTorch's !mapped); it sits in its pool's unmapped
	// set, never in blocks.
	unmapped bool
	// segFrames is the stack of the map that created an expandable
	// segment's first mapped block (PyTorch's
	// context_when_segment_allocated); plain segments keep it in segment.
	segFrames []Frame
}

func (n *node) isSplit() bool { return n.prev != nil || n.next != nil }

// segment is one raw device allocation, or the reserved address range of an
// expandable segment (exp not nil).
type segment struct {
	addr   uint64
	size   int64
	stream Stream
	pool   *pool
	head   *node // lowest-address block
	frames []Frame
	exp    *expandable
}

type pool struct {
	small              bool
	blocks             freeSet
	unmapped           []*node // unmapped blocks of expandable segments, by stream and address
	getFreeBlocksCalls int64
}

// Block is an allocation handed out by Malloc. Its accessors may be called
// from any goroutine; after Free they still report the values the block had.
type Block struct {
	a         *Allocator
	n         *node // guarded by a.mu; nil after Free
	addr      uint64
	size      int64
	requested int64
	stream    Stream
	seg       uint64
	off       int64
}

// Addr is the device address of the block.
func (b *Block) Addr() uint64 { return b.addr }

// Size is the block's size after rounding (what the allocator counts).
func (b *Block) Size() int64 { return b.size }

// Requested is the size that was asked of Malloc.
func (b *Block) Requested() int64 { return b.requested }

// Stream is the stream the block was allocated on.
func (b *Block) Stream() Stream { return b.stream }

// Segment is the base address of the segment that holds the block: for an
// expandable segment, the start of its reserved address range.
func (b *Block) Segment() uint64 { return b.seg }

// Offset is the block's offset inside its segment.
func (b *Block) Offset() int64 { return b.off }

// Allocator is the allocator that handed the block out; its Memory is the
// device the block lives on.
func (b *Block) Allocator() *Allocator { return b.a }

// Freed reports whether the block has been given back with Free.
func (b *Block) Freed() bool {
	b.a.mu.Lock()
	defer b.a.mu.Unlock()
	return b.n == nil
}

type pendingEvent struct {
	ev Event
	n  *node
}

// Allocator is a caching allocator for one device, with PyTorch's policy.
// It is safe for concurrent use. It calls its Memory with its lock held, so a
// Memory must not call back into the allocator.
type Allocator struct {
	mu     sync.Mutex
	mem    Memory
	cfg    Config
	device int

	maxSplit int64 // math.MaxInt64 when unlimited

	small, large pool
	segments     map[uint64]*segment // plain segments, by address
	expSegs      []*segment          // expandable segments, in creation order
	pages        PageMemory          // mem's page mapping; nil when it has none
	pending      map[Stream][]pendingEvent
	nPending     int

	totalReserved int64 // PyTorch's total_allocated_memory
	fraction      float64
	// allowedMax is PyTorch's allowed_memory_maximum, a std::optional set
	// only while the memory fraction is below 1; limited says it is set.
	// It caps reserved memory and switches garbage collection on.
	allowedMax int64
	limited    bool

	stats deviceStats

	hist   history
	stacks atomic.Bool // capture Go stacks (history enabled with Stacks)
	spare  []*node     // recycled nodes
}

// New returns an allocator on mem for the given device index. It panics if
// cfg is invalid (see Config.Validate): configuration from users should go
// through ParseConfig or ConfigFromEnv, which return errors.
func New(mem Memory, cfg Config, device int) *Allocator {
	if err := cfg.Validate(); err != nil {
		panic(err)
	}
	if mem == nil {
		panic("alloc: New with a nil Memory")
	}
	a := &Allocator{
		mem:      mem,
		cfg:      cfg,
		device:   device,
		maxSplit: math.MaxInt64,
		segments: make(map[uint64]*segment),
		pending:  make(map[Stream][]pendingEvent),
		fraction: 1,
	}
	if cfg.MaxSplitSize > 0 {
		a.maxSplit = cfg.MaxSplitSize
	}
	a.small.small = true
	if pm, ok := mem.(PageMemory); ok {
		a.pages = pm
	}
	if cfg.ExpandableSegments && a.pages == nil {
		warnUnsupported()
	}
	return a
}

// Memory is the device memory the allocator sits on.
func (a *Allocator) Memory() Memory { return a.mem }

// Config returns the allocator's configuration.
func (a *Allocator) Config() Config { return a.cfg }

// Device returns the device index given to New.
func (a *Allocator) Device() int { return a.device }

func (a *Allocator) newNode() *node {
	if k := len(a.spare); k > 0 {
		n := a.spare[k-1]
		a.spare = a.spare[:k-1]
		return n
	}
	return new(node)
}

func (a *Allocator) recycle(n *node) {
	*n = node{}
	if len(a.spare) < 1024 {
		a.spare = append(a.spare, n)
	}
}

func (a *Allocator) poolFor(size int64) *pool {
	if size <= SmallSize {
		return &a.small
	}
	return &a.large
}

// gcEnabled reports whether garbage collection and the age counting behind
// it are on: only with a threshold and a memory fraction below 1.
func (a *Allocator) gcEnabled() bool {
	return a.limited && a.cfg.GarbageCollectionThreshold > 0
}

// Malloc returns a block of at least size bytes usable on stream s. A size of
// 0 returns (nil, nil), as PyTorch returns a null pointer for empty
// allocations, and Free(nil) does nothing. A negative size is an error. When
// the device cannot hold the block even after the cache is released, the
// error is an *OutOfMemoryError; so it is, at once, for a size above
// MaxRequest. Other errors of Memory.Malloc are returned wrapped, and so
// are those of the releases that make room (Memory.Free, and UnmapPages and
// Unreserve for expandable segments): what failed to be released stays
// cached, reserved and counted (see TryEmptyCache).
func (a *Allocator) Malloc(size int64, s Stream) (*Block, error) {
	if size < 0 {
		return nil, fmt.Errorf("alloc: Malloc of a negative size (%d bytes)", size)
	}
	if size == 0 {
		return nil, nil
	}
	var frames []Frame
	if a.stacks.Load() {
		frames = captureFrames()
	}
	a.mu.Lock()
	defer a.mu.Unlock()

	if size > MaxRequest {
		// No block size represents the request; no device holds it.
		return nil, a.outOfMemory(size, size, size, s, frames)
	}
	a.processEvents(frames)
	rounded := a.cfg.RoundSize(size)
	p := a.poolFor(rounded)
	allocSize := SegmentSize(rounded)

	n := a.getFreeBlock(p, s, rounded)
	if n == nil {
		// A release that the device fails ends the request with its
		// error, as C10_CUDA_CHECK(cudaFree(...)) throws out of PyTorch's
		// malloc; nothing after it runs.
		if a.gcEnabled() {
			if err := a.garbageCollect(frames); err != nil {
				return nil, err
			}
		}
		var err error
		// A new segment (or, with expandable segments, new pages); then
		// free enough oversize cached blocks and retry; then free every
		// cached whole segment (and unmap every free page) and retry.
		n, err = a.allocBlock(p, s, rounded, allocSize, false, frames)
		if n == nil && err == nil {
			var released bool
			if released, err = a.releaseAvailable(p, s, rounded, frames); released {
				n, err = a.allocBlock(p, s, rounded, allocSize, false, frames)
			}
		}
		if n == nil && err == nil {
			if err = a.releaseCached(frames); err == nil {
				n, err = a.allocBlock(p, s, rounded, allocSize, true, frames)
			}
		}
		if err != nil {
			return nil, err
		}
		if n == nil {
			return nil, a.outOfMemory(size, rounded, allocSize, s, frames)
		}
	}
	return a.allocFound(n, p, rounded, size, a.shouldSplit(n, p, rounded), frames), nil
}

// getFreeBlock is PyTorch's get_free_block: the best-fitting cached block
// of pool p and stream s for a block of size bytes, taken out of the pool,
// or nil.
func (a *Allocator) getFreeBlock(p *pool, s Stream, size int64) *node {
	if a.gcEnabled() {
		// Ages count calls, for garbage collection (garbage_collect_cached_blocks).
		p.getFreeBlocksCalls++
	}
	pos, ok := a.findFreeBlock(p, s, size)
	if !ok {
		return nil
	}
	n := p.blocks.at(pos)
	p.blocks.removeAt(pos)
	return n
}

// findFreeBlock is getFreeBlock without its effects: where the block is.
func (a *Allocator) findFreeBlock(p *pool, s Stream, size int64) (fpos, bool) {
	pos := p.blocks.lowerBound(fkey{s, size, 0})
	if !p.blocks.valid(pos) {
		return pos, false
	}
	n := p.blocks.at(pos)
	if n.stream != s {
		return pos, false
	}
	if n.seg.exp != nil {
		if a.expandableActive() {
			// Best fit counts a block of an expandable segment at the size
			// it can grow to, so a larger block may be the better fit.
			for next := p.blocks.next(pos); n.seg.exp != nil && p.blocks.valid(next) &&
				p.blocks.at(next).stream == s && expandableSize(p.blocks.at(next)) < expandableSize(n); next = p.blocks.next(next) {
				pos, n = next, p.blocks.at(next)
			}
		} else {
			// Expandable segments were switched off after some were made:
			// only plain segments serve new allocations.
			for {
				pos = p.blocks.next(pos)
				if !p.blocks.valid(pos) || p.blocks.at(pos).seg.exp == nil || p.blocks.at(pos).stream != s {
					break
				}
			}
			if !p.blocks.valid(pos) || p.blocks.at(pos).stream != s {
				return pos, false
			}
			n = p.blocks.at(pos)
		}
	}
	// A request below max_split_size never takes an oversize block, and an
	// oversize request only takes a block less than 20 MiB larger.
	if size < a.maxSplit && n.size >= a.maxSplit {
		return pos, false
	}
	if size >= a.maxSplit && n.size >= size+LargeBuffer {
		return pos, false
	}
	return pos, true
}

// CachedFit reports whether Malloc(size, s) would be served now by a block
// of the cache, without asking the device: PyTorch's get_free_block, asked
// without taking the block (and without counting the call for garbage
// collection). Blocks waiting for stream events are not in the cache.
// It answers false for sizes Malloc refuses or serves without a block.
func (a *Allocator) CachedFit(size int64, s Stream) bool {
	if size <= 0 || size > MaxRequest {
		return false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	rounded := a.cfg.RoundSize(size)
	_, ok := a.findFreeBlock(a.poolFor(rounded), s, rounded)
	return ok
}

// shouldSplit is PyTorch's should_split: with expandable segments on, every
// pool splits as the small pool does, whatever segment the block is in.
func (a *Allocator) shouldSplit(n *node, p *pool, size int64) bool {
	remaining := n.size - size
	if p.small || a.expandableActive() {
		return remaining >= MinBlockSize
	}
	return size < a.maxSplit && remaining > SmallSize
}

// allocBlock asks Memory for a new segment of size bytes or, with
// expandable segments, maps the pages a block of rounded bytes needs. It
// returns (nil, nil) when the device (or the memory fraction) has no room.
// PyTorch's alloc_block: the memory fraction is checked against the segment
// size even when pages are mapped instead.
func (a *Allocator) allocBlock(p *pool, s Stream, rounded, size int64, retry bool, frames []Frame) (*node, error) {
	if retry {
		a.stats.numAllocRetries++
	}
	if a.limited && a.totalReserved+size > a.allowedMax {
		return nil, nil
	}
	if a.expandableActive() {
		n, err := a.tryAllocateExpandable(p, s, rounded, frames)
		if !errors.Is(err, ErrPagesUnsupported) {
			return n, err
		}
		// The device has no virtual memory management after all (a
		// driver without it): warn, and use plain segments from now on.
		a.pages = nil
		warnUnsupported()
	}
	addr, err := a.mem.Malloc(size)
	if err != nil {
		if errors.Is(err, ErrDeviceFull) {
			return nil, nil
		}
		return nil, fmt.Errorf("alloc: device malloc of %d bytes failed: %w", size, err)
	}
	a.totalReserved += size
	seg := &segment{addr: addr, size: size, stream: s, pool: p, frames: frames}
	n := a.newNode()
	*n = node{addr: addr, size: size, stream: s, seg: seg}
	seg.head = n
	a.segments[addr] = seg
	a.stats.segment.inc(p.small, 1)
	a.stats.reservedBytes.inc(p.small, size)
	if size >= a.maxSplit {
		a.stats.oversizeSegments.inc(1)
	}
	a.stats.numDeviceAlloc++
	a.trace(ActionSegmentAlloc, addr, size, s, frames)
	return n, nil
}

func (a *Allocator) allocFound(n *node, p *pool, size, orig int64, split bool, frames []Frame) *Block {
	alreadySplit := n.isSplit()
	if split {
		rest := n
		n = a.newNode()
		*n = node{addr: rest.addr, size: size, stream: rest.stream, seg: rest.seg, prev: rest.prev, next: rest}
		if n.prev != nil {
			n.prev.next = n
		} else {
			n.seg.head = n
		}
		rest.prev = n
		rest.addr += uint64(size)
		rest.size -= size
		rest.gcBase = p.getFreeBlocksCalls
		p.blocks.insert(rest)
		// inactive_split leaves expandable segments out: their free pages
		// can always be unmapped.
		switch {
		case n.seg.exp != nil:
		case alreadySplit:
			a.stats.inactiveSplitBytes.dec(p.small, size)
		default:
			a.stats.inactiveSplitBytes.inc(p.small, rest.size)
			a.stats.inactiveSplit.inc(p.small, 1)
		}
	} else if alreadySplit && n.seg.exp == nil {
		a.stats.inactiveSplitBytes.dec(p.small, n.size)
		a.stats.inactiveSplit.dec(p.small, 1)
	}
	n.allocated = true
	n.requested = orig
	n.frames = frames
	a.trace(ActionAlloc, n.addr, orig, n.stream, frames)

	a.stats.allocation.inc(p.small, 1)
	a.stats.allocatedBytes.inc(p.small, n.size)
	a.stats.active.inc(p.small, 1)
	a.stats.activeBytes.inc(p.small, n.size)
	a.stats.requestedBytes.inc(p.small, orig)
	if n.size >= a.maxSplit {
		a.stats.oversizeAllocations.inc(1)
	}
	b := &Block{a: a, n: n, addr: n.addr, size: n.size, requested: orig, stream: n.stream,
		seg: n.seg.addr, off: int64(n.addr - n.seg.addr)}
	n.handle = b
	return b
}

// Free returns b to the cache. If b was used on other streams (RecordStream),
// it stays pending until the work queued on those streams so far is done.
// Free(nil) does nothing; freeing a block twice, or a block of another
// allocator, panics.
func (a *Allocator) Free(b *Block) {
	if b == nil {
		return
	}
	if b.a != a {
		panic(fmt.Sprintf("alloc: Free of block 0x%x that belongs to another allocator", b.addr))
	}
	var frames []Frame
	if a.stacks.Load() {
		frames = captureFrames()
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	n := b.n
	if n == nil {
		panic(fmt.Sprintf("alloc: double free of block 0x%x (%d bytes)", b.addr, b.size))
	}
	b.n = nil
	n.handle = nil
	p := n.seg.pool
	n.allocated = false
	a.stats.allocation.dec(p.small, 1)
	a.stats.allocatedBytes.dec(p.small, n.size)
	ctx := frames
	if ctx == nil {
		ctx = n.frames
	}
	a.trace(ActionFreeRequested, n.addr, n.requested, n.stream, ctx)
	if n.size >= a.maxSplit {
		a.stats.oversizeAllocations.dec(1)
	}
	if len(n.streamUses) > 0 {
		a.insertEvents(n)
	} else {
		a.freeBlock(n, frames)
	}
}

// RecordStream marks b as used on stream s: when b is freed, it is not
// reused until the work queued on s up to that moment is done. Recording the
// block's own stream does nothing. It panics if b was freed.
func (a *Allocator) RecordStream(b *Block, s Stream) {
	if b == nil {
		return
	}
	if b.a != a {
		panic(fmt.Sprintf("alloc: RecordStream of block 0x%x that belongs to another allocator", b.addr))
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	n := b.n
	if n == nil {
		panic(fmt.Sprintf("alloc: RecordStream of freed block 0x%x", b.addr))
	}
	if s == n.stream || slices.Contains(n.streamUses, s) {
		return
	}
	n.streamUses = append(n.streamUses, s)
}

func (a *Allocator) insertEvents(n *node) {
	uses := n.streamUses
	n.streamUses = nil
	for _, s := range uses {
		ev := a.mem.RecordEvent(s)
		n.eventCount++
		a.pending[s] = append(a.pending[s], pendingEvent{ev, n})
		a.nPending++
	}
}

func (a *Allocator) sortedPendingStreams() []Stream {
	ss := make([]Stream, 0, len(a.pending))
	for s := range a.pending {
		ss = append(ss, s)
	}
	slices.Sort(ss)
	return ss
}

// processEvents frees pending blocks whose events are all done. Each stream's
// events are checked in order, stopping at the first one not done.
func (a *Allocator) processEvents(frames []Frame) {
	if a.nPending == 0 {
		return
	}
	for _, s := range a.sortedPendingStreams() {
		q := a.pending[s]
		i := 0
		for ; i < len(q) && q[i].ev.Query(); i++ {
			a.nPending--
			n := q[i].n
			n.eventCount--
			if n.eventCount == 0 {
				a.freeBlock(n, frames)
			}
		}
		if i == len(q) {
			delete(a.pending, s)
		} else {
			clear(q[:i])
			a.pending[s] = q[i:]
		}
	}
}

// synchronizeAndFreeEvents waits for every pending event and frees the
// blocks; PyTorch's synchronize_and_free_events.
func (a *Allocator) synchronizeAndFreeEvents(frames []Frame) {
	a.stats.numSyncAllStreams++
	for _, s := range a.sortedPendingStreams() {
		for _, pe := range a.pending[s] {
			if sy, ok := pe.ev.(EventSynchronizer); ok {
				sy.Synchronize()
			}
			pe.n.eventCount--
			if pe.n.eventCount == 0 {
				a.freeBlock(pe.n, frames)
			}
		}
	}
	clear(a.pending)
	a.nPending = 0
}

// freeBlock caches n, merging it with free neighbours.
func (a *Allocator) freeBlock(n *node, frames []Frame) {
	ctx := frames
	if ctx == nil {
		ctx = n.frames
	}
	a.trace(ActionFreeCompleted, n.addr, n.requested, n.stream, ctx)
	n.frames = nil
	p := n.seg.pool
	origSize, req := n.size, n.requested
	var dBlocks, dBytes int64
	if sub := a.tryMerge(n, n.prev, p); sub > 0 {
		dBlocks--
		dBytes -= sub
	}
	if sub := a.tryMerge(n, n.next, p); sub > 0 {
		dBlocks--
		dBytes -= sub
	}
	n.gcBase = p.getFreeBlocksCalls
	p.blocks.insert(n)
	if n.isSplit() {
		dBlocks++
		dBytes += n.size
	}
	if n.seg.exp != nil { // see allocFound
		dBlocks, dBytes = 0, 0
	}
	switch {
	case dBlocks > 0:
		a.stats.inactiveSplit.inc(p.small, dBlocks)
	case dBlocks < 0:
		a.stats.inactiveSplit.dec(p.small, -dBlocks)
	}
	switch {
	case dBytes > 0:
		a.stats.inactiveSplitBytes.inc(p.small, dBytes)
	case dBytes < 0:
		a.stats.inactiveSplitBytes.dec(p.small, -dBytes)
	}
	a.stats.active.dec(p.small, 1)
	a.stats.activeBytes.dec(p.small, origSize)
	a.stats.requestedBytes.dec(p.small, req)
}

// tryMerge absorbs src into dst when src is cached, and returns the number of
// bytes absorbed.
func (a *Allocator) tryMerge(dst, src *node, p *pool) int64 {
	if src == nil || src.allocated || src.eventCount > 0 || len(src.streamUses) > 0 || src.unmapped != dst.unmapped {
		return 0
	}
	if src.unmapped {
		p.removeUnmapped(src)
	} else {
		p.blocks.remove(src)
	}
	if dst.prev == src {
		dst.segFrames = src.segFrames
		dst.addr = src.addr
		dst.prev = src.prev
		if dst.prev != nil {
			dst.prev.next = dst
		} else {
			dst.seg.head = dst
		}
	} else {
		dst.next = src.next
		if dst.next != nil {
			dst.next.prev = dst
		}
	}
	sub := src.size
	dst.size += sub
	a.recycle(src)
	return sub
}

// releaseBlock returns the segment of n, a cached unsplit block, to Memory;
// PyTorch's release_block. When Memory.Free fails, nothing changes: the
// segment stays cached, reserved and counted, and a later release retries
// it. PyTorch's release_block counts num_device_free and records
// segment_free, then C10_CUDA_CHECK(cudaFree((void*)block->ptr)) throws,
// leaving the block in its pool (c10/cuda/CUDACachingAllocator.cpp); here
// the count and the entry wait for the free to succeed, the entry stamped,
// as there, before it.
func (a *Allocator) releaseBlock(n *node, frames []Frame) error {
	if n.isSplit() || n.allocated {
		panic("alloc: internal error: releasing a segment that is in use")
	}
	seg := n.seg
	p := seg.pool
	ctx := frames
	if ctx == nil {
		ctx = seg.frames
	}
	at := a.traceClock()
	if err := a.mem.Free(n.addr); err != nil {
		return fmt.Errorf("alloc: device free of segment 0x%x (%d bytes) failed: %w", n.addr, n.size, err)
	}
	a.stats.numDeviceFree++
	a.traceAt(at, ActionSegmentFree, n.addr, n.size, n.stream, ctx)
	p.blocks.remove(n)
	a.totalReserved -= n.size
	a.stats.segment.dec(p.small, 1)
	a.stats.reservedBytes.dec(p.small, n.size)
	if n.size >= a.maxSplit {
		a.stats.oversizeSegments.dec(1)
	}
	delete(a.segments, seg.addr)
	a.recycle(n)
	return nil
}

// releaseAvailable frees oversize cached blocks of stream s, just enough to
// satisfy size; PyTorch's release_available_cached_blocks. It stops at the
// first segment Memory fails to free and returns that error.
//
// It passes over blocks that are not a whole segment (releasable), where
// PyTorch checks only that a block is not in an expandable segment. An
// oversize cached block is normally a whole segment (should_split never
// splits one), but while expandable segments are on, should_split splits
// blocks of plain segments too; switched off again, such a segment's
// oversize head, freed while the rest is in use, is a cached oversize
// block, and PyTorch's release_block would cudaFree the segment's base
// under the blocks still allocated in it.
func (a *Allocator) releaseAvailable(p *pool, s Stream, size int64, frames []Frame) (bool, error) {
	if a.maxSplit == math.MaxInt64 {
		return false, nil
	}
	key := max(size, a.maxSplit)
	pos := p.blocks.lowerBound(fkey{s, key, 0})
	if p.blocks.valid(pos) && p.blocks.at(pos).stream == s && releasable(p.blocks.at(pos)) {
		if err := a.releaseBlock(p.blocks.at(pos), frames); err != nil {
			return false, err
		}
		return true, nil
	}
	if p.blocks.isBegin(pos) {
		return false, nil
	}
	// No single block is large enough: release oversize blocks from the
	// largest down until enough is freed. Blocks of expandable segments
	// are passed over (PyTorch PR 134338), and those of split segments
	// (above).
	var released int64
	pos = p.blocks.prev(pos)
	for {
		cur := p.blocks.at(pos)
		if released >= key || cur.size < a.maxSplit || cur.stream != s {
			break
		}
		if p.blocks.isBegin(pos) {
			if releasable(cur) {
				released += cur.size
				if err := a.releaseBlock(cur, frames); err != nil {
					return false, err
				}
			}
			break
		}
		pos = p.blocks.prev(pos)
		if releasable(cur) {
			released += cur.size
			prevNode := p.blocks.at(pos)
			if err := a.releaseBlock(cur, frames); err != nil {
				return false, err
			}
			pos = p.blocks.lowerBound(keyOf(prevNode)) // removal moved entries
		}
	}
	return released >= key, nil
}

// releasable reports whether the cached block n is a whole plain segment,
// one releaseBlock can give back.
func releasable(n *node) bool { return n.seg.exp == nil && !n.isSplit() }

// releaseCached waits for pending frees, then releases every cached block
// that is a whole segment, and unmaps the whole free pages of expandable
// segments, releasing those left with none mapped; PyTorch's
// release_cached_blocks and release_blocks. It stops at the first release
// Memory fails and returns that error, as C10_CUDA_CHECK throws out of
// release_blocks: what was released before stays released, the rest stays
// cached for the next call.
func (a *Allocator) releaseCached(frames []Frame) error {
	a.synchronizeAndFreeEvents(frames)
	for _, p := range []*pool{&a.large, &a.small} {
		var unmap []*node
		for _, n := range p.blocks.nodes() {
			switch {
			case n.seg.exp != nil:
				unmap = append(unmap, n) // unmapping changes the pool: after the loop
			case !n.isSplit():
				if err := a.releaseBlock(n, frames); err != nil {
					return err
				}
			}
		}
		for _, n := range unmap {
			if err := a.unmapBlock(n, frames); err != nil {
				return err
			}
			if !n.isSplit() {
				if err := a.releaseExpandableSegment(n); err != nil {
					return err
				}
			}
		}
		if err := a.retryUnreserve(p); err != nil {
			return err
		}
	}
	return nil
}

// garbageCollect frees old cached whole segments of the large pool until
// reserved memory drops below the threshold fraction of the allowed memory.
// It stops at the first segment Memory fails to free and returns that error.
func (a *Allocator) garbageCollect(frames []Frame) error {
	threshold := int64(a.cfg.GarbageCollectionThreshold * float64(a.allowedMax))
	if a.totalReserved <= threshold {
		return nil
	}
	target := a.totalReserved - threshold
	p := &a.large
	var totalAge, count int64
	p.blocks.each(func(n *node) {
		if !n.isSplit() {
			totalAge += p.getFreeBlocksCalls - n.gcBase
			count++
		}
	})
	if count == 0 {
		return nil
	}
	var reclaimed int64
	freed := true
	for reclaimed < target && freed && count > 0 {
		ageThreshold := float64(totalAge) / float64(count)
		freed = false
		for _, n := range p.blocks.nodes() {
			age := p.getFreeBlocksCalls - n.gcBase
			if releasable(n) && float64(age) >= ageThreshold {
				freed = true
				reclaimed += n.size
				totalAge -= age
				count--
				if err := a.releaseBlock(n, frames); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// EmptyCache waits for pending frees and returns every cached segment that
// is entirely free to Memory. Segments with any block in use stay. It
// panics only if the device fails to release memory (Memory.Free, or
// PageMemory's UnmapPages or Unreserve), with TryEmptyCache's error; code
// that can handle a failing device calls TryEmptyCache.
func (a *Allocator) EmptyCache() {
	if err := a.TryEmptyCache(); err != nil {
		panic(err)
	}
}

// TryEmptyCache is EmptyCache returning the device's failure instead of
// panicking. It stops at the first segment that the device fails to free or
// unmap, as PyTorch's empty_cache raises when C10_CUDA_CHECK throws out of
// release_blocks: segments released before it stay released; it and the
// rest stay cached, reserved and counted, with no num_device_free or
// history entry for the failure, and the next call retries them. The error
// wraps Memory's.
func (a *Allocator) TryEmptyCache() error {
	var frames []Frame
	if a.stacks.Load() {
		frames = captureFrames()
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.releaseCached(frames)
}

// SetMemoryFraction caps the memory this allocator may reserve at f times the
// device capacity, as torch.cuda.set_per_process_memory_fraction does. f must
// be in [0, 1]. A fraction below 1 sets the cap (the product, truncated to
// whole bytes) and lets garbage_collection_threshold act; a fraction of 1
// removes the cap and switches garbage collection off again, as in PyTorch
// since 2.9.
func (a *Allocator) SetMemoryFraction(f float64) error {
	if !(f >= 0 && f <= 1) {
		return fmt.Errorf("alloc: memory fraction %v out of range, must be in [0, 1]", f)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.fraction = f
	a.limited = f < 1
	a.allowedMax = 0
	if a.limited {
		a.allowedMax = allowedMaximum(f, a.mem.Capacity())
	}
	return nil
}

// allowedMaximum is PyTorch's static_cast<size_t>(fraction * totalGlobalMem):
// the product in float64, truncated toward zero.
func allowedMaximum(f float64, capacity int64) int64 {
	return int64(f * float64(capacity))
}

// MemoryFraction returns the fraction set by SetMemoryFraction, or 1.
func (a *Allocator) MemoryFraction() float64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.fraction
}
