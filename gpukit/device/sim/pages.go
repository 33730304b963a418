package sim

import (
	"fmt"
	"sort"

	"github.com/gpumem/course/gpukit/alloc"
	"github.com/gpumem/course/gpukit/device/backend"
)

// Virtual memory management, what expandable segments of the caching
// allocator need (alloc.PageMemory): a reservation is a range of device
// addresses taken from the device's window like a segment's, backed by
// nothing until pages are mapped into it. Mapped pages count against the
// capacity exactly as segments do and cost what a malloc of their size
// costs; unmapping waits for the stream's work (as PyTorch waits with
// cudaStreamSynchronize before cuMemUnmap) and costs what a free costs.
//
// Unlike segments' addresses, a released reservation's addresses are
// reused by the next reservation of the same size: a reservation is 1 1/8
// of the card, so a program that empties the cache of an expandable segment
// again and again would otherwise run out of the device's address window.
//
// On sim the range's host memory is one anonymous mapping reserved without
// commitment (hostmap_linux.go): a mapped page is committed when first
// touched, an unmapped page's memory goes back to the host and reads as
// zeros when mapped again. Meta reservations have no host memory.

type reservation struct {
	addr   uint64
	size   int64
	page   int64  // page size, fixed by the first MapPages
	mapped []bool // by page index
	data   []byte // host memory of the whole range; nil on meta
}

func (r *reservation) end() uint64 { return r.addr + uint64(r.size) }

var _ alloc.PageMemory = (*Backend)(nil)

// Reserve takes size bytes of device addresses for pages to be mapped into.
// On sim it also reserves (without committing) as much host address space;
// where the host cannot, the error wraps alloc.ErrPagesUnsupported.
func (b *Backend) Reserve(size int64) (uint64, error) {
	if size <= 0 {
		return 0, fmt.Errorf("sim: %s: reserve of %d bytes: size must be positive", b.Name(), size)
	}
	var data []byte
	if b.kind == backend.Sim {
		var err error
		if data, err = hostReserve(size); err != nil {
			return 0, fmt.Errorf("sim: %s: reserving %d bytes of host memory: %w", b.Name(), size, err)
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	var addr uint64
	if l := b.freedResv[size]; len(l) > 0 {
		addr = l[len(l)-1]
		b.freedResv[size] = l[:len(l)-1]
	} else {
		addr = b.next
		end := alignUp(addr+uint64(size), Alignment)
		if end > b.base+Window || end < addr {
			hostRelease(data)
			return 0, fmt.Errorf("sim: %s: virtual address window of %d bytes exhausted: %w", b.Name(), Window, alloc.ErrDeviceFull)
		}
		b.next = end
	}
	r := &reservation{addr: addr, size: size, data: data}
	i := sort.Search(len(b.resv), func(i int) bool { return b.resv[i].addr > addr })
	b.resv = append(b.resv, nil)
	copy(b.resv[i+1:], b.resv[i:])
	b.resv[i] = r
	return addr, nil
}

// findResv returns the reservation that contains addr, or nil.
func (b *Backend) findResv(addr uint64) *reservation {
	i := sort.Search(len(b.resv), func(i int) bool { return b.resv[i].end() > addr })
	if i < len(b.resv) && b.resv[i].addr <= addr {
		return b.resv[i]
	}
	return nil
}

// pagesOf checks that n pages of pageSize from addr lie in a reservation,
// page-aligned, and returns it with the first page's index.
func (b *Backend) pagesOf(op string, addr uint64, pageSize int64, n int) (*reservation, int, error) {
	r := b.findResv(addr)
	if r == nil || pageSize <= 0 || n <= 0 || addr+uint64(pageSize)*uint64(n) > r.end() ||
		int64(addr-r.addr)%pageSize != 0 || r.page != 0 && r.page != pageSize {
		return nil, 0, fmt.Errorf("sim: %s: %s of %d pages of %d bytes at 0x%x: not pages of a reservation", b.Name(), op, n, pageSize, addr)
	}
	return r, int(int64(addr-r.addr) / pageSize), nil
}

// MapPages backs n pages from addr with device memory, all or none: when
// the context, the live segments, the mapped pages and these do not fit
// the capacity, the error wraps alloc.ErrDeviceFull.
func (b *Backend) MapPages(addr uint64, pageSize int64, n int) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	r, first, err := b.pagesOf("map", addr, pageSize, n)
	if err != nil {
		return err
	}
	for i := first; i < first+n && i < len(r.mapped); i++ {
		if r.mapped[i] {
			return fmt.Errorf("sim: %s: page 0x%x is already mapped", b.Name(), r.addr+uint64(int64(i)*pageSize))
		}
	}
	size := pageSize * int64(n)
	if size > b.prof.Capacity-b.prof.ContextSize-b.used {
		b.host += b.prof.MallocLatency
		return fmt.Errorf("sim: %s: cannot map %d bytes: %d of %d bytes in use (context %d): %w",
			b.Name(), size, b.prof.ContextSize+b.used, b.prof.Capacity, b.prof.ContextSize, alloc.ErrDeviceFull)
	}
	r.page = pageSize
	for len(r.mapped) < first+n {
		r.mapped = append(r.mapped, false)
	}
	for i := first; i < first+n; i++ {
		r.mapped[i] = true
	}
	b.used += size
	b.host += b.prof.MallocCost(size)
	b.settleLocked()
	return nil
}

// UnmapPages waits for the work queued on s, unmaps n pages from addr and
// gives their memory back, at the profile's FreeLatency.
func (b *Backend) UnmapPages(s alloc.Stream, addr uint64, pageSize int64, n int) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	r, first, err := b.pagesOf("unmap", addr, pageSize, n)
	if err != nil {
		return err
	}
	for i := first; i < first+n; i++ {
		if i >= len(r.mapped) || !r.mapped[i] {
			return fmt.Errorf("sim: %s: unmap of page 0x%x, which is not mapped", b.Name(), r.addr+uint64(int64(i)*pageSize))
		}
	}
	b.host = max(b.host, b.streams[s])
	b.settleLocked()
	for i := first; i < first+n; i++ {
		r.mapped[i] = false
	}
	if r.data != nil {
		off := int64(first) * pageSize
		hostDiscard(r.data[off : off+pageSize*int64(n)])
	}
	b.used -= pageSize * int64(n)
	b.host += b.prof.FreeLatency
	return nil
}

// Unreserve frees the addresses of a reservation that has no mapped page.
func (b *Backend) Unreserve(addr uint64, size int64) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	i := sort.Search(len(b.resv), func(i int) bool { return b.resv[i].addr >= addr })
	if i == len(b.resv) || b.resv[i].addr != addr || b.resv[i].size != size {
		return fmt.Errorf("sim: %s: unreserve of %d bytes at 0x%x: not a reservation", b.Name(), size, addr)
	}
	r := b.resv[i]
	for j, m := range r.mapped {
		if m {
			return fmt.Errorf("sim: %s: unreserve of 0x%x with page %d still mapped", b.Name(), addr, j)
		}
	}
	hostRelease(r.data)
	b.resv = append(b.resv[:i], b.resv[i+1:]...)
	if b.freedResv == nil {
		b.freedResv = map[int64][]uint64{}
	}
	b.freedResv[size] = append(b.freedResv[size], addr)
	return nil
}

// lookupPages returns the reservation whose mapped pages hold
// [addr, addr+n), or nil.
func (b *Backend) lookupPages(addr uint64, n int64) *reservation {
	r := b.findResv(addr)
	if r == nil || n < 0 || r.page == 0 || addr+uint64(n) > r.end() || addr+uint64(n) < addr {
		return nil
	}
	off := int64(addr - r.addr)
	last := off + max(n, 1) - 1
	for i := off / r.page; i <= last/r.page; i++ {
		if i >= int64(len(r.mapped)) || !r.mapped[i] {
			return nil
		}
	}
	return r
}

// Reservations returns the number of live reservations and their mapped
// bytes.
func (b *Backend) Reservations() (n int, mapped int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, r := range b.resv {
		for _, m := range r.mapped {
			if m {
				mapped += r.page
			}
		}
	}
	return len(b.resv), mapped
}
