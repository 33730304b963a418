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
}

// FakeEvent is an event of a FakeMemory.
type FakeEvent struct {
	mu     sync.Mutex
	Stream Stream
	done   bool
	synced bool
}

func (e *FakeEvent) Done() bool {
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
	return &FakeMemory{capacity: capacity, next: 1 << 32, live: make(map[uint64]int64)}
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
