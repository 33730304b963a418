package snapshot

import (
	"fmt"

	"github.com/gpumem/course/gpukit/alloc"
)

// memory is the device under a replay: an alloc.Memory and alloc.PageMemory
// of a fixed capacity, whose events complete when the replay says so.
//
// When it follows a trace (Check), it is also the device PyTorch found:
// each device call of gpukit's allocator is matched, in order, against the
// segment events PyTorch recorded for the same request, and a cudaMalloc
// (or page map) fails exactly where PyTorch's failed, which the trace shows
// by a segment_free or segment_unmap (the release after a failed
// cudaMalloc), or an oom, where the call would come. A segment gpukit
// makes as PyTorch did gets PyTorch's address, so that blocks can be
// compared by address and best fit breaks ties by PyTorch's addresses.
type memory struct {
	capacity int64
	used     int64
	next     uint64
	live     map[uint64]int64 // segments and mapped pages, by address
	resv     map[uint64]int64 // reserved ranges of expandable segments

	// While adopting (alloc.Allocator.Adopt of a segment PyTorch made
	// before the trace), the next Malloc or Reserve is at place, and no
	// call is matched against the trace or the capacity: the segment
	// already existed.
	adopting bool
	place    uint64

	follow *follower // nil unless checking
	event  *event    // the event of the next RecordEvent

	// recorded holds, per segment size, the addresses PyTorch's segments
	// of that size got, in order, and bases the addresses of its
	// expandable segments: without follow, the k-th segment of a size
	// gets the address of PyTorch's k-th (when it is free), because
	// cudaMalloc's addresses break ties in best fit. Segments PyTorch did
	// not make get fresh addresses, above all of PyTorch's.
	recorded map[int64][]uint64
	bases    []uint64
}

// freshBase is where addresses that PyTorch never used start: above any
// user-space address of x86-64 and ARM64, so that they meet none of
// PyTorch's.
const freshBase uint64 = 1 << 56

func newMemory(capacity int64) *memory {
	return &memory{capacity: capacity, next: freshBase, live: map[uint64]int64{}, resv: map[uint64]int64{}}
}

func (m *memory) fresh(size int64) uint64 {
	addr := m.next
	m.next += (uint64(size) + 511) &^ 511
	return addr
}

// address picks the address of a new segment: the placed one, PyTorch's
// when following and it is free, or a fresh one.
func (m *memory) address(size int64, pytorch uint64, ok bool) uint64 {
	if m.adopting {
		return m.place
	}
	if ok && !m.overlaps(pytorch, size) {
		return pytorch
	}
	for q := m.recorded[size]; len(q) > 0; q = m.recorded[size] {
		addr := q[0]
		m.recorded[size] = q[1:]
		if !m.overlaps(addr, size) {
			return addr
		}
	}
	return m.fresh(size)
}

func (m *memory) overlaps(addr uint64, size int64) bool {
	for a, s := range m.live {
		if addr < a+uint64(s) && a < addr+uint64(size) {
			return true
		}
	}
	return false
}

var errFull = fmt.Errorf("snapshot: replay device full: %w", alloc.ErrDeviceFull)

func (m *memory) Malloc(size int64) (uint64, error) {
	if size <= 0 {
		return 0, fmt.Errorf("snapshot: replay device: malloc of %d bytes", size)
	}
	if m.adopting && (m.live[m.place] != 0 || m.resv[m.place] != 0) {
		return 0, fmt.Errorf("snapshot: two segments at %#x", m.place)
	}
	var py uint64
	var pyOK bool
	switch {
	case m.adopting:
	case m.follow != nil:
		var fail bool
		py, pyOK, fail = m.follow.malloc(alloc.ActionSegmentAlloc, 0, size)
		if fail {
			return 0, errFull
		}
	case size > m.capacity-m.used:
		return 0, errFull
	}
	addr := m.address(size, py, pyOK)
	m.used += size
	m.live[addr] = size
	return addr, nil
}

func (m *memory) Free(addr uint64) error {
	size, ok := m.live[addr]
	if !ok {
		return fmt.Errorf("snapshot: replay device: free of unknown segment %#x", addr)
	}
	if m.follow != nil {
		m.follow.free(alloc.ActionSegmentFree, addr, size)
	}
	delete(m.live, addr)
	m.used -= size
	return nil
}

func (m *memory) RecordEvent(alloc.Stream) alloc.Event {
	ev := m.event
	m.event = nil
	if ev == nil {
		ev = &event{done: true}
	}
	return ev
}

func (m *memory) Capacity() int64    { return m.capacity }
func (m *memory) NowMicros() float64 { return 0 }
func (m *memory) FreeBytes() int64   { return m.capacity - m.used }

func (m *memory) Reserve(size int64) (uint64, error) {
	if size <= 0 {
		return 0, fmt.Errorf("snapshot: replay device: reserve of %d bytes", size)
	}
	var addr uint64
	switch {
	case m.adopting:
		if m.live[m.place] != 0 || m.resv[m.place] != 0 {
			return 0, fmt.Errorf("snapshot: two segments at %#x", m.place)
		}
		addr = m.place
	case m.follow != nil:
		// PyTorch's ranges may lie closer together than gpukit's, which
		// are sized from Capacity: they may overlap, as blocks are placed
		// where PyTorch placed them.
		if base, ok := m.follow.reserveBase(); ok && m.resv[base] == 0 {
			addr = base
		} else {
			addr = m.fresh(size)
		}
	default:
		addr = m.fresh(size)
		for len(m.bases) > 0 {
			base := m.bases[0]
			m.bases = m.bases[1:]
			if m.resv[base] == 0 {
				addr = base
				break
			}
		}
	}
	m.resv[addr] = size
	return addr, nil
}

func (m *memory) MapPages(addr uint64, pageSize int64, n int) error {
	size := pageSize * int64(n)
	if pageSize <= 0 || n <= 0 {
		return fmt.Errorf("snapshot: replay device: map of %d pages of %d bytes", n, pageSize)
	}
	switch {
	case m.adopting:
	case m.follow != nil:
		if _, _, fail := m.follow.malloc(alloc.ActionSegmentMap, addr, size); fail {
			return errFull
		}
	case size > m.capacity-m.used:
		return errFull
	}
	m.used += size
	return nil
}

func (m *memory) UnmapPages(_ alloc.Stream, addr uint64, pageSize int64, n int) error {
	size := pageSize * int64(n)
	if m.follow != nil {
		m.follow.free(alloc.ActionSegmentUnmap, addr, size)
	}
	m.used -= size
	return nil
}

func (m *memory) Unreserve(addr uint64, size int64) error {
	if m.resv[addr] != size {
		return fmt.Errorf("snapshot: replay device: unreserve of unknown range %#x", addr)
	}
	delete(m.resv, addr)
	return nil
}

// event is a stream event whose completion the replay decides: when the
// trace shows the block's free_completed, or when the allocator waits for
// it (synchronize_and_free_events).
type event struct{ done bool }

func (e *event) Query() bool  { return e.done }
func (e *event) Synchronize() { e.done = true }
