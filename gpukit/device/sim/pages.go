package sim

import (
	"fmt"

	"github.com/gpumem/course/gpukit/alloc"
	"github.com/gpumem/course/gpukit/device/backend"
	"github.com/gpumem/course/gpukit/device/internal/pagemap"
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
	pagemap.Range        // Page is fixed by the first MapPages
	mapped        []bool // by page index
	data          []byte // host memory of the whole range; nil on meta
}

// PageMapped reports whether page i is mapped.
func (r *reservation) PageMapped(i int64) bool { return i < int64(len(r.mapped)) && r.mapped[i] }

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
	b.resv.Insert(&reservation{Range: pagemap.Range{Addr: addr, Size: size}, data: data})
	return addr, nil
}

// MapPages backs n pages from addr with device memory, all or none: when
// the context, the live segments, the mapped pages and these do not fit
// the capacity, the error wraps alloc.ErrDeviceFull.
func (b *Backend) MapPages(addr uint64, pageSize int64, n int) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	r, first, err := b.resv.Pages(pagemap.Map, addr, pageSize, n)
	if err != nil {
		return fmt.Errorf("sim: %s: %w", b.Name(), err)
	}
	size := pageSize * int64(n)
	if size > b.prof.Capacity-b.prof.ContextSize-b.used {
		b.host += b.prof.MallocLatency
		return fmt.Errorf("sim: %s: cannot map %d bytes: %d of %d bytes in use (context %d): %w",
			b.Name(), size, b.prof.ContextSize+b.used, b.prof.Capacity, b.prof.ContextSize, alloc.ErrDeviceFull)
	}
	r.Page = pageSize
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
	r, first, err := b.resv.Pages(pagemap.Unmap, addr, pageSize, n)
	if err != nil {
		return fmt.Errorf("sim: %s: %w", b.Name(), err)
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
	found, err := b.resv.Remove(addr, size, func(r *reservation) error {
		for j, m := range r.mapped {
			if m {
				return fmt.Errorf("sim: %s: unreserve of 0x%x with page %d still mapped", b.Name(), addr, j)
			}
		}
		hostRelease(r.data)
		return nil
	})
	if !found {
		return fmt.Errorf("sim: %s: unreserve of %d bytes at 0x%x: not a reservation", b.Name(), size, addr)
	}
	if err != nil {
		return err
	}
	if b.freedResv == nil {
		b.freedResv = map[int64][]uint64{}
	}
	b.freedResv[size] = append(b.freedResv[size], addr)
	return nil
}

// lookupPages returns the reservation whose mapped pages hold
// [addr, addr+n), or nil.
func (b *Backend) lookupPages(addr uint64, n int64) *reservation {
	r, _ := b.resv.Mapped(addr, n)
	return r
}

// Reservations returns the number of live reservations and their mapped
// bytes.
func (b *Backend) Reservations() (n int, mapped int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, r := range b.resv.All() {
		for _, m := range r.mapped {
			if m {
				mapped += r.Page
			}
		}
	}
	return len(b.resv.All()), mapped
}
