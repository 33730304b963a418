// Package sim is the simulated device backend of gpukit/device: device
// memory is host memory, so values are real, and time is virtual, so costs
// are deterministic.
//
// A Backend keeps a host clock and, for each stream, the time at which the
// work queued on it completes. Every operation charges the modelled cost from
// its Profile (see gpukit/device's documentation for the formulas). No
// function here reads the wall clock.
//
// In meta mode (NewMeta) the same accounting and clocks run without backing
// bytes: Bytes returns nil and copies move no data, so a lesson can
// "allocate" 80 GB in microseconds.
//
// A Backend is also a backend.Compute (compute.go): a sim device computes
// with the CPU kernels of gpukit/kernels on its memory
// (gpukit/device/cpucompute), a meta device computes nothing.
package sim

import (
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/gpumem/course/gpukit/alloc"
	"github.com/gpumem/course/gpukit/device/backend"
	"github.com/gpumem/course/gpukit/device/internal/pagemap"
	"github.com/gpumem/course/gpukit/device/profile"
	"github.com/gpumem/course/gpukit/internal/hostmem"
)

// Address layout. Each device owns a 16 TiB window of virtual addresses;
// segments are placed one above the other, never reused, aligned to 512 B.
const (
	BaseAddress uint64 = 0x7f0000000000 // first address of sim:0
	Window      uint64 = 1 << 44        // address window per device
	MaxIndex           = 15             // sim:0 .. sim:15, meta:0 .. meta:15 (device.Open)
	metaWindows        = MaxIndex + 1   // meta windows follow the sim windows
	// MaxMetaIndex is the highest index NewMeta accepts. device.Open names
	// meta:0 .. meta:15 only; gpukit/distributed builds process groups of
	// up to 4096 meta cards with device.New, outside the registry.
	MaxMetaIndex        = 4095
	Alignment    uint64 = 512
)

// Base returns the first device address of the device with this index; meta
// devices use windows above those of sim devices so that addresses of any two
// simulated devices never collide.
func Base(index int, meta bool) uint64 {
	w := uint64(index)
	if meta {
		w += metaWindows
	}
	return BaseAddress + w*Window
}

type segment struct {
	addr uint64
	size int64
	data []byte // nil in meta mode
}

func (s *segment) end() uint64 { return s.addr + uint64(s.size) }

// Backend is a simulated device. It is safe for concurrent use.
type Backend struct {
	computer // the kernels: CPU ones on sim, none on meta (compute.go)

	index int
	kind  backend.Kind
	prof  profile.Profile
	base  uint64

	mu         sync.Mutex
	next       uint64                      // address of the next segment
	segs       []segment                   // live segments, sorted by address
	resv       pagemap.Table[*reservation] // live reservations (pages.go)
	freedResv  map[int64][]uint64          // addresses of released reservations, by size
	used       int64                       // bytes in live segments
	host       time.Duration
	streams    map[alloc.Stream]time.Duration
	nextStream alloc.Stream
	pending    []pendingCopy // deferred copies, by start time (pending.go)
	seq        uint64        // queuing order of deferred copies
}

var _ backend.Backend = (*Backend)(nil)

// New returns a simulated device with real backing bytes. It panics if index
// is outside 0..MaxIndex or the profile is invalid.
func New(index int, p profile.Profile) *Backend { return newBackend(index, p, backend.Sim) }

// NewMeta returns a simulated device without backing bytes. It panics if
// index is outside 0..MaxMetaIndex or the profile is invalid.
func NewMeta(index int, p profile.Profile) *Backend { return newBackend(index, p, backend.Meta) }

func newBackend(index int, p profile.Profile, kind backend.Kind) *Backend {
	top := MaxIndex
	if kind == backend.Meta {
		top = MaxMetaIndex
	}
	if index < 0 || index > top {
		panic(fmt.Sprintf("sim: %s device index %d outside 0..%d", kind, index, top))
	}
	if err := p.Validate(); err != nil {
		panic("sim: " + err.Error())
	}
	base := Base(index, kind == backend.Meta)
	b := &Backend{
		index:      index,
		kind:       kind,
		prof:       p,
		base:       base,
		next:       base,
		streams:    map[alloc.Stream]time.Duration{0: 0},
		nextStream: 1,
	}
	b.computer = newCompute(b)
	return b
}

// Name returns "sim:N" or "meta:N".
func (b *Backend) Name() string { return fmt.Sprintf("%s:%d", b.kind, b.index) }

// Kind returns backend.Sim or backend.Meta.
func (b *Backend) Kind() backend.Kind { return b.kind }

// Index returns the device ordinal.
func (b *Backend) Index() int { return b.index }

// Profile returns the card's profile.
func (b *Backend) Profile() profile.Profile { return b.prof }

// Capacity returns the profile's capacity.
func (b *Backend) Capacity() int64 { return b.prof.Capacity }

// ---- raw memory -----------------------------------------------------------

// Malloc reserves a segment of exactly size bytes at a fresh address. It
// succeeds exactly when the context, the live segments and size fit the
// capacity;
// otherwise the error wraps alloc.ErrDeviceFull. The host clock advances by
// the profile's MallocCost (MallocLatency only when the malloc fails).
func (b *Backend) Malloc(size int64) (uint64, error) {
	if size <= 0 {
		return 0, fmt.Errorf("sim: %s: malloc of %d bytes: size must be positive", b.Name(), size)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if size > b.prof.Capacity-b.prof.ContextSize-b.used {
		b.host += b.prof.MallocLatency
		return 0, fmt.Errorf("sim: %s: cannot allocate %d bytes: %d of %d bytes in use (context %d): %w",
			b.Name(), size, b.prof.ContextSize+b.used, b.prof.Capacity, b.prof.ContextSize, alloc.ErrDeviceFull)
	}
	addr := b.next
	end := alignUp(addr+uint64(size), Alignment)
	if end > b.base+Window || end < addr {
		b.host += b.prof.MallocLatency
		return 0, fmt.Errorf("sim: %s: virtual address window of %d bytes exhausted: %w",
			b.Name(), Window, alloc.ErrDeviceFull)
	}
	seg := segment{addr: addr, size: size}
	if b.kind == backend.Sim {
		seg.data = make([]byte, size)
	}
	b.segs = append(b.segs, seg) // addresses only grow: stays sorted
	b.next = end
	b.used += size
	b.host += b.prof.MallocCost(size)
	b.settleLocked()
	return addr, nil
}

// Free releases the segment that starts at addr. Like cudaFree it first
// synchronizes the device (the host clock catches up with every stream),
// then pays the profile's FreeLatency.
func (b *Backend) Free(addr uint64) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	i := b.find(addr)
	if i < 0 || b.segs[i].addr != addr {
		return fmt.Errorf("sim: %s: free of 0x%x: not the start of a live segment", b.Name(), addr)
	}
	b.syncLocked() // also applies every pending copy, some may touch the segment
	b.used -= b.segs[i].size
	b.segs = append(b.segs[:i], b.segs[i+1:]...)
	b.host += b.prof.FreeLatency
	return nil
}

// find returns the index of the live segment containing addr, or -1.
func (b *Backend) find(addr uint64) int {
	i := sort.Search(len(b.segs), func(i int) bool { return b.segs[i].end() > addr })
	if i < len(b.segs) && b.segs[i].addr <= addr {
		return i
	}
	return -1
}

// lookup returns the segment holding [addr, addr+n), or nil.
func (b *Backend) lookup(addr uint64, n int64) *segment {
	if n < 0 {
		return nil
	}
	i := b.find(addr)
	if i < 0 {
		return nil
	}
	s := &b.segs[i]
	if addr+uint64(n) > s.end() || addr+uint64(n) < addr {
		return nil
	}
	return s
}

// Owns reports whether [addr, addr+n) lies inside one live segment or in
// mapped pages of one reservation.
func (b *Backend) Owns(addr uint64, n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	_, ok := b.memLocked(addr, n)
	return ok
}

// memLocked reports whether [addr, addr+n) is device memory (inside one live
// segment or in mapped pages of one reservation) and returns its backing
// bytes, nil in meta mode.
func (b *Backend) memLocked(addr uint64, n int64) ([]byte, bool) {
	var data []byte
	var base uint64
	if s := b.lookup(addr, n); s != nil {
		data, base = s.data, s.addr
	} else if r := b.lookupPages(addr, n); r != nil {
		data, base = r.data, r.Addr
	} else {
		return nil, false
	}
	if data == nil {
		return nil, true
	}
	off := int64(addr - base)
	return data[off : off+n : off+n], true
}

// Bytes returns the backing bytes of [addr, addr+n) (length and capacity n),
// or nil in meta mode or when the range is not inside a live segment or in
// mapped pages of a reservation.
func (b *Backend) Bytes(addr uint64, n int64) []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	data, _ := b.memLocked(addr, n)
	return data
}

// MemInfo returns what cudaMemGetInfo would: the capacity minus the
// process's context and its live segments, and the capacity.
func (b *Backend) MemInfo() (free, total int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.prof.Capacity - b.prof.ContextSize - b.used, b.prof.Capacity
}

// ProcessUsedBytes is the device memory this process holds, context and
// live segments, for alloc.ProcessMemoryReporter (what NVML reports).
func (b *Backend) ProcessUsedBytes() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.prof.ContextSize + b.used
}

// Segments returns the number of live segments and their total size.
func (b *Backend) Segments() (n int, bytes int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.segs), b.used
}

// HostAlloc returns size bytes of host memory. Pinned-ness only selects the
// bandwidth the copies are charged at.
func (b *Backend) HostAlloc(size int64, pinned bool) (*backend.HostBuffer, error) {
	if err := hostmem.Check("sim: "+b.Name(), size); err != nil {
		return nil, err
	}
	return backend.NewHostBuffer(make([]byte, size), pinned, nil), nil
}

func alignUp(x, a uint64) uint64 { return (x + a - 1) &^ (a - 1) }

// FreeBytes is the free device memory, for alloc.FreeBytesReporter.
func (b *Backend) FreeBytes() int64 {
	free, _ := b.MemInfo()
	return free
}

var (
	_ alloc.FreeBytesReporter     = (*Backend)(nil)
	_ alloc.ProcessMemoryReporter = (*Backend)(nil)
)
