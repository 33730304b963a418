package alloc

import (
	"fmt"
	"sync"
)

// FakeMemory is a Memory for tests: capacity-limited, with addresses that
// increase and are never reused (a 1 MiB gap separates segments), and events
// that complete only when the test says so (or at once with AutoComplete).
type FakeMemory struct {
	mu           sync.Mutex
	capacity     int64
	used         int64
	next         uint64
	live         map[uint64]int64
	events       []*FakeEvent
	clock        float64
	AutoComplete bool // events are Done as soon as they are recorded
	Mallocs      int
	Frees        int
	reserved     map[uint64]int64 // address ranges from Reserve
	pages        map[uint64]int64 // mapped pages, by address
	Maps, Unmaps int              // pages mapped and unmapped
	NoPages      bool             // Reserve fails with ErrPagesUnsupported
}

// FakeEvent is an event of a FakeMemory.
type FakeEvent struct {
	mu     sync.Mutex
	Stream Stream
	done   bool
	synced bool
}

func (e *FakeEvent) Query() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.done
}

// Synchronize waits for the event: the fake completes it.
func (e *FakeEvent) Synchronize() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.done = true
	e.synced = true
}

func NewFakeMemory(capacity int64) *FakeMemory {
	return &FakeMemory{capacity: capacity, next: 1 << 32, live: make(map[uint64]int64),
		reserved: make(map[uint64]int64), pages: make(map[uint64]int64)}
}

func (m *FakeMemory) Malloc(size int64) (uint64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if size <= 0 {
		return 0, fmt.Errorf("fake: bad size %d", size)
	}
	if m.used+size > m.capacity {
		return 0, fmt.Errorf("fake: %d bytes requested, %d free: %w", size, m.capacity-m.used, ErrDeviceFull)
	}
	addr := m.next
	m.next += uint64(size) + 1<<20
	m.used += size
	m.live[addr] = size
	m.Mallocs++
	return addr, nil
}

func (m *FakeMemory) Free(addr uint64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	size, ok := m.live[addr]
	if !ok {
		return fmt.Errorf("fake: free of unknown segment 0x%x", addr)
	}
	delete(m.live, addr)
	m.used -= size
	m.Frees++
	return nil
}

func (m *FakeMemory) RecordEvent(s Stream) Event {
	m.mu.Lock()
	defer m.mu.Unlock()
	e := &FakeEvent{Stream: s, done: m.AutoComplete}
	m.events = append(m.events, e)
	return e
}

func (m *FakeMemory) Capacity() int64 { return m.capacity }

func (m *FakeMemory) NowMicros() float64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.clock++
	return m.clock
}

func (m *FakeMemory) FreeBytes() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.capacity - m.used
}

// Complete marks every event recorded on s so far as done.
func (m *FakeMemory) Complete(s Stream) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, e := range m.events {
		if e.Stream == s {
			e.mu.Lock()
			e.done = true
			e.mu.Unlock()
		}
	}
}

// Events returns the events recorded so far.
func (m *FakeMemory) Events() []*FakeEvent {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]*FakeEvent(nil), m.events...)
}

// Live returns the number of segments and bytes the fake has handed out.
func (m *FakeMemory) Live() (int, int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.live), m.used
}

// Reserve hands out an address range above every earlier one.
func (m *FakeMemory) Reserve(size int64) (uint64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.NoPages {
		return 0, fmt.Errorf("fake: %w", ErrPagesUnsupported)
	}
	if size <= 0 {
		return 0, fmt.Errorf("fake: bad reservation %d", size)
	}
	addr := m.next
	m.next += uint64(size) + 1<<20
	m.reserved[addr] = size
	return addr, nil
}

func (m *FakeMemory) inReservation(addr uint64, size int64) bool {
	for base, n := range m.reserved {
		if addr >= base && addr+uint64(size) <= base+uint64(n) {
			return true
		}
	}
	return false
}

// MapPages counts n pages against the capacity, all or none.
func (m *FakeMemory) MapPages(addr uint64, page int64, n int) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if page <= 0 || n <= 0 || !m.inReservation(addr, page*int64(n)) {
		return fmt.Errorf("fake: map of %d pages of %d at 0x%x outside a reservation", n, page, addr)
	}
	for i := range n {
		if _, ok := m.pages[addr+uint64(i)*uint64(page)]; ok {
			return fmt.Errorf("fake: page 0x%x mapped twice", addr+uint64(i)*uint64(page))
		}
	}
	if m.used+page*int64(n) > m.capacity {
		return fmt.Errorf("fake: %d pages requested, %d bytes free: %w", n, m.capacity-m.used, ErrDeviceFull)
	}
	for i := range n {
		m.pages[addr+uint64(i)*uint64(page)] = page
	}
	m.used += page * int64(n)
	m.Maps += n
	return nil
}

// UnmapPages releases pages mapped by MapPages.
func (m *FakeMemory) UnmapPages(s Stream, addr uint64, page int64, n int) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := range n {
		if m.pages[addr+uint64(i)*uint64(page)] != page {
			return fmt.Errorf("fake: unmap of page 0x%x that is not mapped", addr+uint64(i)*uint64(page))
		}
	}
	for i := range n {
		delete(m.pages, addr+uint64(i)*uint64(page))
	}
	m.used -= page * int64(n)
	m.Unmaps += n
	return nil
}

// Unreserve frees a range that has no mapped page.
func (m *FakeMemory) Unreserve(addr uint64, size int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.reserved[addr] != size {
		return fmt.Errorf("fake: unreserve of unknown range 0x%x", addr)
	}
	for p := range m.pages {
		if p >= addr && p < addr+uint64(size) {
			return fmt.Errorf("fake: unreserve of 0x%x with page 0x%x mapped", addr, p)
		}
	}
	delete(m.reserved, addr)
	return nil
}

// Reservations returns the number of live address ranges and mapped pages.
func (m *FakeMemory) Reservations() (ranges, pages int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.reserved), len(m.pages)
}
