package alloctest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gpumem/course/gpukit/alloc"
)

// model is a small, independent model of the policy of PyTorch's
// DeviceCachingAllocator (c10/cuda/CUDACachingAllocator.cpp, PyTorch 2.9
// and later) for alloc, free, empty_cache and set_fraction, written for
// clarity rather than speed: cached blocks live in plain slices searched
// linearly. It leaves out record-stream events, and takes the size
// arithmetic (alloc.Config.RoundSize, alloc.SegmentSize, tested on their
// own) from package alloc: what it checks is the policy of best fit,
// splitting, merging, garbage collection, releases and the memory fraction.
// Addresses are modelled as
// (segment number, offset): the backends under test hand out increasing
// addresses, so a later segment has a higher address.
type model struct {
	capacity int64 // what the device accepts
	total    int64 // what it reports as its capacity (for the fraction)
	maxSplit int64 // math.MaxInt64 when unlimited
	gcThresh float64
	cfg      alloc.Config

	nextSeg  int
	segs     []*mseg
	reserved int64
	limit    *int64 // allowed_memory_maximum: set only for a fraction below 1

	calls                     [2]int64 // get_free_blocks_call_count of the small (0) and large (1) pools
	deviceAllocs, deviceFrees int64
	retries, ooms             int64
	allocated                 int64
}

type mseg struct {
	seq    int
	size   int64
	stream alloc.Stream
	small  bool
	blocks []*mblock // by offset
}

type mblock struct {
	seg       *mseg
	off, size int64
	allocated bool
	gcBase    int64
}

func (b *mblock) split() bool { return len(b.seg.blocks) > 1 }

func pool(small bool) int {
	if small {
		return 0
	}
	return 1
}

func newModel(capacity, total int64, cfg alloc.Config) *model {
	m := &model{capacity: capacity, total: total, maxSplit: math.MaxInt64, gcThresh: cfg.GarbageCollectionThreshold, cfg: cfg}
	if cfg.MaxSplitSize > 0 {
		m.maxSplit = cfg.MaxSplitSize
	}
	return m
}

func (m *model) gcOn() bool { return m.limit != nil && m.gcThresh > 0 }

// less orders cached blocks as PyTorch's BlockComparatorSize does:
// stream, size, address.
func less(a, b *mblock) bool {
	if a.seg.stream != b.seg.stream {
		return a.seg.stream < b.seg.stream
	}
	if a.size != b.size {
		return a.size < b.size
	}
	if a.seg.seq != b.seg.seq {
		return a.seg.seq < b.seg.seq
	}
	return a.off < b.off
}

// cached returns the cached blocks of a pool in comparator order.
func (m *model) cached(small bool) []*mblock {
	var out []*mblock
	for _, s := range m.segs {
		if s.small != small {
			continue
		}
		for _, b := range s.blocks {
			if !b.allocated {
				out = append(out, b)
			}
		}
	}
	slices.SortFunc(out, func(a, b *mblock) int {
		if less(a, b) {
			return -1
		}
		return 1
	})
	return out
}

// lowerBound is the index of the first cached block not below
// (stream, size, lowest address).
func lowerBound(list []*mblock, s alloc.Stream, size int64) int {
	for i, b := range list {
		if b.seg.stream > s || b.seg.stream == s && b.size >= size {
			return i
		}
	}
	return len(list)
}

func (m *model) setFraction(f float64) {
	m.limit = nil
	if f < 1 {
		v := int64(f * float64(m.total))
		m.limit = &v
	}
}

// malloc returns the block or nil for out of memory.
func (m *model) malloc(size int64, s alloc.Stream) *mblock {
	rounded := m.cfg.RoundSize(size)
	small := rounded <= alloc.SmallSize
	allocSize := alloc.SegmentSize(rounded)
	b := m.freeBlock(small, s, rounded)
	if b == nil {
		if m.gcOn() {
			m.garbageCollect()
		}
		b = m.allocBlock(small, s, allocSize, false)
		if b == nil && m.releaseAvailable(small, s, rounded) {
			b = m.allocBlock(small, s, allocSize, false)
		}
		if b == nil {
			m.releaseCached()
			b = m.allocBlock(small, s, allocSize, true)
		}
		if b == nil {
			m.ooms++
			return nil
		}
	}
	remaining := b.size - rounded
	split := remaining >= alloc.MinBlockSize
	if !small {
		split = rounded < m.maxSplit && remaining > alloc.SmallSize
	}
	if split {
		rest := &mblock{seg: b.seg, off: b.off + rounded, size: remaining, gcBase: m.calls[pool(small)]}
		b.size = rounded
		i := slices.Index(b.seg.blocks, b)
		b.seg.blocks = slices.Insert(b.seg.blocks, i+1, rest)
	}
	b.allocated = true
	m.allocated += b.size
	return b
}

func (m *model) freeBlock(small bool, s alloc.Stream, size int64) *mblock {
	if m.gcOn() {
		m.calls[pool(small)]++
	}
	list := m.cached(small)
	i := lowerBound(list, s, size)
	if i == len(list) || list[i].seg.stream != s {
		return nil
	}
	b := list[i]
	if size < m.maxSplit && b.size >= m.maxSplit || size >= m.maxSplit && b.size >= size+alloc.LargeBuffer {
		return nil
	}
	return b
}

func (m *model) allocBlock(small bool, s alloc.Stream, size int64, retry bool) *mblock {
	if retry {
		m.retries++
	}
	if m.limit != nil && m.reserved+size > *m.limit || m.reserved+size > m.capacity {
		return nil
	}
	seg := &mseg{seq: m.nextSeg, size: size, stream: s, small: small}
	m.nextSeg++
	b := &mblock{seg: seg, size: size}
	seg.blocks = []*mblock{b}
	m.segs = append(m.segs, seg)
	m.reserved += size
	m.deviceAllocs++
	return b
}

func (m *model) release(b *mblock) {
	if b.split() || b.allocated {
		panic("alloctest: model releases a segment in use")
	}
	m.segs = slices.DeleteFunc(m.segs, func(s *mseg) bool { return s == b.seg })
	m.reserved -= b.size
	m.deviceFrees++
}

func (m *model) releaseAvailable(small bool, s alloc.Stream, size int64) bool {
	if m.maxSplit == math.MaxInt64 {
		return false
	}
	key := max(size, m.maxSplit)
	list := m.cached(small)
	i := lowerBound(list, s, key)
	if i < len(list) && list[i].seg.stream == s {
		m.release(list[i])
		return true
	}
	if i == 0 {
		return false
	}
	var released int64
	for i--; released < key && list[i].size >= m.maxSplit && list[i].seg.stream == s; i-- {
		released += list[i].size
		m.release(list[i])
		if i == 0 {
			break
		}
	}
	return released >= key
}

func (m *model) releaseCached() {
	for _, small := range []bool{false, true} {
		for _, b := range m.cached(small) {
			if !b.split() {
				m.release(b)
			}
		}
	}
}

func (m *model) garbageCollect() {
	threshold := int64(m.gcThresh * float64(*m.limit))
	if m.reserved <= threshold {
		return
	}
	target := m.reserved - threshold
	calls := m.calls[pool(false)]
	var totalAge, count int64
	for _, b := range m.cached(false) {
		if !b.split() {
			totalAge += calls - b.gcBase
			count++
		}
	}
	var reclaimed int64
	for freed := true; reclaimed < target && freed && count > 0; {
		ageThreshold := float64(totalAge) / float64(count)
		freed = false
		for _, b := range m.cached(false) {
			if age := calls - b.gcBase; !b.split() && float64(age) >= ageThreshold {
				freed = true
				reclaimed += b.size
				totalAge -= age
				count--
				m.release(b)
			}
		}
	}
}

func (m *model) free(b *mblock) {
	b.allocated = false
	m.allocated -= b.size
	seg := b.seg
	i := slices.Index(seg.blocks, b)
	if i+1 < len(seg.blocks) && !seg.blocks[i+1].allocated {
		b.size += seg.blocks[i+1].size
		seg.blocks = slices.Delete(seg.blocks, i+1, i+2)
	}
	if i > 0 && !seg.blocks[i-1].allocated {
		prev := seg.blocks[i-1]
		b.off, b.size = prev.off, b.size+prev.size
		seg.blocks = slices.Delete(seg.blocks, i-1, i)
	}
	b.gcBase = m.calls[pool(seg.small)]
}

// DifferentialSettings are the allocator settings of Differential's random
// traces: garbage collection with and without max_split_size_mb, mixed with
// memory fractions of 1 that must switch the collector off again.
var DifferentialSettings = []string{
	"garbage_collection_threshold:0.5,max_split_size_mb:64",
	"garbage_collection_threshold:0.5",
	"garbage_collection_threshold:0.8,max_split_size_mb:20",
	"max_split_size_mb:32",
	"",
}

// Differential replays random traces of alloc, free, empty_cache and
// set_fraction on the allocator and on the model and compares, after each
// operation, whether it succeeded, the block's size and offset, and the
// statistics. newMemory must return memory that holds exactly capacity
// bytes and hands out increasing addresses (the sim backend and the fake
// do); on other memory the test is skipped.
func Differential(t *testing.T, newMemory func(t *testing.T, capacity int64) alloc.Memory, traces int) {
	for i := range traces {
		conf := DifferentialSettings[i%len(DifferentialSettings)]
		cfg, err := alloc.ParseConfig(conf)
		if err != nil {
			t.Fatal(err)
		}
		if msg := differentialTrace(t, newMemory, cfg, uint64(i)); msg != "" {
			t.Fatalf("trace %d with %q: %s", i, conf, msg)
		}
	}
}

func differentialTrace(t *testing.T, newMemory func(t *testing.T, capacity int64) alloc.Memory, cfg alloc.Config, seed uint64) string {
	const capacity = 64 * mib
	mem := newMemory(t, capacity)
	a := alloc.New(mem, cfg, 0)
	m := newModel(capacity, mem.Capacity(), cfg)
	r := rand.New(rand.NewPCG(seed, 8))
	type live struct {
		b *alloc.Block
		m *mblock
	}
	var lives []live
	seen := map[uint64]bool{}
	var newest uint64
	var log []string
	for step := range 80 {
		var what string
		switch x := r.IntN(20); {
		case x < 10:
			var size int64
			switch r.IntN(4) {
			case 0:
				size = r.Int64N(mib) + 1
			case 1:
				size = r.Int64N(9*mib) + mib
			default:
				size = r.Int64N(30*mib) + 1
			}
			s := alloc.Stream(r.IntN(3))
			what = fmt.Sprintf("alloc %d on stream %d", size, s)
			b, err := a.Malloc(size, s)
			mb := m.malloc(size, s)
			if (err == nil) != (mb != nil) {
				return fmt.Sprintf("%s\nstep %d %s: allocator err=%v, model ok=%v", joinLog(log), step, what, err, mb != nil)
			}
			if b != nil {
				if !seen[b.Segment()] {
					if b.Segment() < newest {
						t.Skip("alloctest: this memory does not hand out increasing addresses; differential traces skipped")
					}
					seen[b.Segment()], newest = true, b.Segment()
				}
				if b.Size() != mb.size || b.Offset() != mb.off {
					return fmt.Sprintf("%s\nstep %d %s: allocator block of %d at offset %d, model %d at %d",
						joinLog(log), step, what, b.Size(), b.Offset(), mb.size, mb.off)
				}
				lives = append(lives, live{b, mb})
			}
		case x < 16 && len(lives) > 0:
			i := r.IntN(len(lives))
			what = fmt.Sprintf("free the block at offset %d of %d bytes", lives[i].b.Offset(), lives[i].b.Size())
			a.Free(lives[i].b)
			m.free(lives[i].m)
			lives = slices.Delete(lives, i, i+1)
		case x < 18:
			f := []float64{0.25, 0.5, 0.8, 1, 1}[r.IntN(5)]
			what = fmt.Sprintf("set_fraction %v", f)
			if err := a.SetMemoryFraction(f); err != nil {
				return err.Error()
			}
			m.setFraction(f)
		default:
			what = "empty_cache"
			a.EmptyCache()
			m.releaseCached()
		}
		log = append(log, what)
		st := a.Stats()
		for k, v := range map[string]int64{
			"allocated_bytes.all.current": m.allocated,
			"reserved_bytes.all.current":  m.reserved,
			"segment.all.current":         int64(len(m.segs)),
			"num_device_alloc":            m.deviceAllocs,
			"num_device_free":             m.deviceFrees,
			"num_alloc_retries":           m.retries,
			"num_ooms":                    m.ooms,
		} {
			if st[k] != v {
				return fmt.Sprintf("%s\nafter step %d: %s = %d, model %d", joinLog(log), step, k, st[k], v)
			}
		}
	}
	for _, l := range lives {
		a.Free(l.b)
	}
	a.EmptyCache()
	return ""
}

func joinLog(log []string) string {
	out := "trace:"
	for i, l := range log {
		out += fmt.Sprintf("\n  %d: %s", i, l)
	}
	return out
}
