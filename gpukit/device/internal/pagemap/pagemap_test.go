package pagemap

import (
	"errors"
	"testing"
)

type resv struct {
	Range
	mapped []bool
}

func (r *resv) PageMapped(i int64) bool { return i < int64(len(r.mapped)) && r.mapped[i] }

func TestTable(t *testing.T) {
	var tb Table[*resv]
	a := &resv{Range: Range{Addr: 0x3000, Size: 0x1000}}
	b := &resv{Range: Range{Addr: 0x1000, Size: 0x1000, Page: 0x400}, mapped: []bool{true, true, false, false}}
	tb.Insert(a)
	tb.Insert(b)
	if got := tb.All(); len(got) != 2 || got[0] != b || got[1] != a {
		t.Fatalf("All() = %v, want sorted by address", got)
	}
	for _, c := range []struct {
		addr uint64
		want *resv
	}{{0x1000, b}, {0x1fff, b}, {0x2000, nil}, {0x3800, a}, {0x4000, nil}, {0, nil}} {
		if r, ok := tb.Find(c.addr); r != c.want || ok != (c.want != nil) {
			t.Errorf("Find(%#x) = %v, %v; want %v", c.addr, r, ok, c.want)
		}
	}
	if r, first, err := tb.Pages(Map, 0x1800, 0x400, 2); err != nil || r != b || first != 2 {
		t.Errorf("Pages = %v, %d, %v; want b from page 2", r, first, err)
	}
	if r, first, err := tb.Pages(Unmap, 0x1000, 0x400, 2); err != nil || r != b || first != 0 {
		t.Errorf("Pages = %v, %d, %v; want b from page 0", r, first, err)
	}
	for _, c := range []struct {
		op   Op
		addr uint64
		want string
	}{{Map, 0x1400, "page 0x1400 is already mapped"}, {Unmap, 0x1400, "unmap of page 0x1800, which is not mapped"}} {
		if _, _, err := tb.Pages(c.op, c.addr, 0x400, 2); err == nil || err.Error() != c.want {
			t.Errorf("Pages(%s, %#x): %v, want %q", c.op, c.addr, err, c.want)
		}
	}
	for _, c := range []struct {
		addr     uint64
		pageSize int64
		n        int
	}{{0x1800, 0x400, 3}, {0x1900, 0x400, 1}, {0x1000, 0x800, 1}, {0x2000, 0x400, 1}, {0x3000, 0, 1}, {0x3000, 0x400, 0}} {
		if _, _, err := tb.Pages(Map, c.addr, c.pageSize, c.n); err == nil {
			t.Errorf("Pages(%#x, %#x, %d): no error", c.addr, c.pageSize, c.n)
		}
	}
	if _, _, err := tb.Pages(Unmap, 0x2000, 0x400, 1); err == nil || err.Error() != "unmap of 1 pages of 1024 bytes at 0x2000: not pages of a reservation" {
		t.Errorf("Pages error: %v", err)
	}
	if r, ok := tb.Mapped(0x1100, 0x500); !ok || r != b {
		t.Errorf("Mapped over pages 0 and 1: %v, %v", r, ok)
	}
	for _, c := range [][2]uint64{{0x1700, 0x200}, {0x3000, 1}, {0x1000, 0x2000}} {
		if r, ok := tb.Mapped(c[0], int64(c[1])); ok || r != nil {
			t.Errorf("Mapped(%#x, %#x) = %v, %v; want none", c[0], c[1], r, ok)
		}
	}
	keep := errors.New("still mapped")
	if found, err := tb.Remove(0x1000, 0x1000, func(*resv) error { return keep }); !found || err != keep || len(tb.All()) != 2 {
		t.Errorf("Remove refused by release: %v, %v, %d left", found, err, len(tb.All()))
	}
	if found, _ := tb.Remove(0x1000, 0x800, func(*resv) error { return nil }); found {
		t.Errorf("Remove of the wrong size found a reservation")
	}
	if found, err := tb.Remove(0x1000, 0x1000, func(*resv) error { return nil }); !found || err != nil || len(tb.All()) != 1 || tb.All()[0] != a {
		t.Errorf("Remove: %v, %v, left %v", found, err, tb.All())
	}
}
