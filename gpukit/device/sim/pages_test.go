package sim_test

import (
	"errors"
	"testing"

	"github.com/gpumem/course/gpukit/alloc"
	"github.com/gpumem/course/gpukit/device/sim"
)

const pg = 2 << 20

// TestPages maps pages into a reservation, writes across a page boundary,
// unmaps and maps again: the bytes are real on sim and zero after a remap,
// capacity counts mapped pages only, and misuse is refused with sim's
// errors.
func TestPages(t *testing.T) {
	b := sim.New(0, withCapacity(16<<20))
	addr, err := b.Reserve(64 << 20)
	if err != nil {
		t.Fatal(err)
	}
	if b.Owns(addr, 1) || b.Bytes(addr, 1) != nil {
		t.Error("unmapped addresses are device memory")
	}
	if err := b.MapPages(addr, pg, 2); err != nil {
		t.Fatal(err)
	}
	across := b.Bytes(addr+pg-4, 8)
	if len(across) != 8 || !b.Owns(addr, 2*pg) || b.Owns(addr, 2*pg+1) {
		t.Fatalf("mapped range: bytes %d, owns %v", len(across), b.Owns(addr, 2*pg))
	}
	copy(across, "abcdefgh")
	out := make([]byte, 8)
	if err := b.CopyDtoH(out, addr+pg-4, false, 0, false); err != nil || string(out) != "abcdefgh" {
		t.Fatalf("copy across the page boundary: %q %v", out, err)
	}
	if free, _ := b.MemInfo(); free != 16<<20-b.Profile().ContextSize-2*pg {
		t.Errorf("free %d after mapping two pages", free)
	}
	// The device holds 16 MiB: 8 more pages do not fit, and none is mapped.
	if err := b.MapPages(addr+2*pg, pg, 8); !errors.Is(err, alloc.ErrDeviceFull) {
		t.Errorf("MapPages beyond capacity: %v", err)
	}
	if b.Owns(addr+2*pg, 1) {
		t.Error("a failed map left pages mapped")
	}
	if err := b.UnmapPages(0, addr+pg, pg, 1); err != nil {
		t.Fatal(err)
	}
	if b.Owns(addr+pg, 1) || !b.Owns(addr, pg) {
		t.Error("unmap of the second page")
	}
	if err := b.MapPages(addr+pg, pg, 1); err != nil {
		t.Fatal(err)
	}
	if got := b.Bytes(addr+pg, 4); string(got) != "\x00\x00\x00\x00" {
		t.Errorf("remapped page reads %q, want zeros", got)
	}
	for _, bad := range []error{
		b.MapPages(addr, pg, 1),           // mapped twice
		b.MapPages(addr+512, pg, 1),       // not page-aligned
		b.MapPages(addr+4*pg, 4<<20, 1),   // another page size
		b.MapPages(addr+64<<20-pg, pg, 2), // past the reservation
		b.UnmapPages(0, addr+4*pg, pg, 1), // not mapped
		b.Unreserve(addr, 64<<20),         // pages still mapped
		b.Unreserve(addr+pg, 64<<20),      // not a reservation
	} {
		if bad == nil {
			t.Error("misuse accepted")
		}
	}
	if err := b.UnmapPages(0, addr, pg, 2); err != nil {
		t.Fatal(err)
	}
	if err := b.Unreserve(addr, 64<<20); err != nil {
		t.Fatal(err)
	}
	if n, mapped := b.Reservations(); n != 0 || mapped != 0 {
		t.Errorf("%d reservations, %d bytes mapped after Unreserve", n, mapped)
	}
	// The addresses of a released reservation serve the next of its size.
	again, err := b.Reserve(64 << 20)
	if err != nil || again != addr {
		t.Errorf("Reserve after Unreserve: 0x%x, %v; want the released 0x%x", again, err, addr)
	}
	if other, err := b.Reserve(32 << 20); err != nil || other == addr {
		t.Errorf("Reserve of another size: 0x%x, %v", other, err)
	}
	if free, _ := b.MemInfo(); free != 16<<20-b.Profile().ContextSize {
		t.Errorf("free %d after unmapping everything", free)
	}
}

// TestPagesMeta: meta devices account for pages without bytes.
func TestPagesMeta(t *testing.T) {
	b := sim.NewMeta(0, withCapacity(16<<20))
	addr, err := b.Reserve(8 * pg)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.MapPages(addr, pg, 3); err != nil {
		t.Fatal(err)
	}
	if !b.Owns(addr, 3*pg) || b.Bytes(addr, 16) != nil {
		t.Error("meta pages: owned without bytes")
	}
	if _, mapped := b.Reservations(); mapped != 3*pg {
		t.Errorf("mapped %d", mapped)
	}
}
