// Package pagemap is the table of a device's reservations of addresses
// for pages (alloc.PageMemory), sorted by address, that sim and cuda
// both keep: it finds the reservation of an address and checks page
// ranges against it. What backs a page (host memory, a CUDA allocation
// handle) is the backend's, in the reservation type that embeds Range.
package pagemap

import (
	"fmt"
	"sort"
)

// Range is Size bytes of device addresses from Addr, in pages of Page
// bytes (0 until the first mapping fixes it).
type Range struct {
	Addr uint64
	Size int64
	Page int64
}

// End is the address just past the range.
func (r *Range) End() uint64 { return r.Addr + uint64(r.Size) }

// Reserved returns r itself: through it Table reaches the Range that a
// reservation embeds.
func (r *Range) Reserved() *Range { return r }

// Reservation is a backend's reservation type, which embeds Range and
// says which of its pages are mapped.
type Reservation interface {
	Reserved() *Range
	PageMapped(i int64) bool
}

// Op is what a call does with pages: Map wants them unmapped, Unmap
// mapped.
type Op string

const (
	Map   Op = "map"
	Unmap Op = "unmap"
)

// Table is the live reservations, sorted by address.
type Table[R Reservation] struct {
	rs []R
}

// All returns the reservations in address order.
func (t *Table[R]) All() []R { return t.rs }

// Insert adds r, which overlaps no other reservation.
func (t *Table[R]) Insert(r R) {
	addr := r.Reserved().Addr
	i := sort.Search(len(t.rs), func(i int) bool { return t.rs[i].Reserved().Addr > addr })
	t.rs = append(t.rs, r)
	copy(t.rs[i+1:], t.rs[i:])
	t.rs[i] = r
}

// Find returns the reservation that contains addr (false: none).
func (t *Table[R]) Find(addr uint64) (R, bool) {
	i := sort.Search(len(t.rs), func(i int) bool { return t.rs[i].Reserved().End() > addr })
	if i < len(t.rs) && t.rs[i].Reserved().Addr <= addr {
		return t.rs[i], true
	}
	var none R
	return none, false
}

// Pages returns the reservation of the n pages of pageSize bytes from
// addr and the index of the first, when they lie in it, aligned to its
// pages and of its page size once that is fixed, and none of them is
// mapped (op Map) or all are (Unmap); otherwise an error.
func (t *Table[R]) Pages(op Op, addr uint64, pageSize int64, n int) (R, int, error) {
	var none R
	r, ok := t.Find(addr)
	var g *Range
	if ok {
		g = r.Reserved()
	}
	if !ok || pageSize <= 0 || n <= 0 || addr+uint64(pageSize)*uint64(n) > g.End() ||
		int64(addr-g.Addr)%pageSize != 0 || g.Page != 0 && g.Page != pageSize {
		return none, 0, fmt.Errorf("%s of %d pages of %d bytes at 0x%x: not pages of a reservation", op, n, pageSize, addr)
	}
	first := int(int64(addr-g.Addr) / pageSize)
	for i := first; i < first+n; i++ {
		page := g.Addr + uint64(int64(i)*pageSize)
		if m := r.PageMapped(int64(i)); op == Map && m {
			return none, 0, fmt.Errorf("page 0x%x is already mapped", page)
		} else if op == Unmap && !m {
			return none, 0, fmt.Errorf("unmap of page 0x%x, which is not mapped", page)
		}
	}
	return r, first, nil
}

// Remove removes the reservation of exactly size bytes at addr once
// release (given it) succeeds, and reports whether there was one;
// release's error is returned as it is, the reservation kept.
func (t *Table[R]) Remove(addr uint64, size int64, release func(R) error) (bool, error) {
	i := sort.Search(len(t.rs), func(i int) bool { return t.rs[i].Reserved().Addr >= addr })
	if i == len(t.rs) || t.rs[i].Reserved().Addr != addr || t.rs[i].Reserved().Size != size {
		return false, nil
	}
	if err := release(t.rs[i]); err != nil {
		return true, err
	}
	t.rs = append(t.rs[:i], t.rs[i+1:]...)
	return true, nil
}

// Mapped returns the reservation whose mapped pages hold [addr, addr+n).
func (t *Table[R]) Mapped(addr uint64, n int64) (R, bool) {
	var none R
	r, ok := t.Find(addr)
	if !ok {
		return none, false
	}
	g := r.Reserved()
	if n < 0 || g.Page == 0 || addr+uint64(n) > g.End() || addr+uint64(n) < addr {
		return none, false
	}
	off := int64(addr - g.Addr)
	last := off + max(n, 1) - 1
	for i := off / g.Page; i <= last/g.Page; i++ {
		if !r.PageMapped(i) {
			return none, false
		}
	}
	return r, true
}
