package main

import (
	"fmt"

	"github.com/gpumem/course/gpukit/alloc"
)

// memory is the raw device memory of a replay: a device of an exact
// capacity, like gpukit/device's sim backend in meta mode but without its
// cost model, so that a replay depends on nothing but the trace. Segments
// get increasing, never reused, 512-byte aligned addresses from the sim
// backend's base address; a malloc succeeds exactly when the live segments
// plus the request fit the capacity; all stream work is always complete;
// the clock is the index of the trace line being replayed, so the
// snapshot's time_us reads as a line number.
type memory struct {
	capacity int64
	used     int64
	next     uint64
	live     map[uint64]int64
	resv     map[uint64]int64 // address ranges of expandable segments
	clock    float64
}

// baseAddress is where device 0's segments start, as in gpukit/device/sim.
const baseAddress uint64 = 0x7f0000000000

func newMemory(capacity int64) *memory {
	return &memory{capacity: capacity, next: baseAddress, live: make(map[uint64]int64), resv: make(map[uint64]int64)}
}

func (m *memory) Malloc(size int64) (uint64, error) {
	if size <= 0 || size > m.capacity-m.used {
		return 0, fmt.Errorf("memtrace: cannot reserve %d bytes, %d of %d free: %w",
			size, m.capacity-m.used, m.capacity, alloc.ErrDeviceFull)
	}
	addr := m.next
	m.next += (uint64(size) + 511) &^ 511
	m.used += size
	m.live[addr] = size
	return addr, nil
}

func (m *memory) Free(addr uint64) error {
	size, ok := m.live[addr]
	if !ok {
		return fmt.Errorf("memtrace: free of unknown segment %#x", addr)
	}
	delete(m.live, addr)
	m.used -= size
	return nil
}

type doneEvent struct{}

func (doneEvent) Query() bool { return true }

func (m *memory) RecordEvent(alloc.Stream) alloc.Event { return doneEvent{} }
func (m *memory) Capacity() int64                      { return m.capacity }
func (m *memory) NowMicros() float64                   { return m.clock }

// FreeBytes is what cudaMemGetInfo would report as free.
func (m *memory) FreeBytes() int64 { return m.capacity - m.used }

// Page mapping for expandable_segments:True (alloc.PageMemory): a
// reservation takes addresses like a segment and no capacity; mapped pages
// count against the capacity like segments, all or none per call.

// Reserve takes size bytes of addresses.
func (m *memory) Reserve(size int64) (uint64, error) {
	if size <= 0 {
		return 0, fmt.Errorf("memtrace: cannot reserve %d bytes of addresses", size)
	}
	addr := m.next
	m.next += (uint64(size) + 511) &^ 511
	m.resv[addr] = size
	return addr, nil
}

func (m *memory) MapPages(addr uint64, pageSize int64, n int) error {
	size := pageSize * int64(n)
	if pageSize <= 0 || n <= 0 || size > m.capacity-m.used {
		return fmt.Errorf("memtrace: cannot map %d pages of %d bytes, %d of %d free: %w",
			n, pageSize, m.capacity-m.used, m.capacity, alloc.ErrDeviceFull)
	}
	m.used += size
	return nil
}

func (m *memory) UnmapPages(_ alloc.Stream, addr uint64, pageSize int64, n int) error {
	m.used -= pageSize * int64(n)
	return nil
}

func (m *memory) Unreserve(addr uint64, size int64) error {
	if m.resv[addr] != size {
		return fmt.Errorf("memtrace: unreserve of unknown range %#x", addr)
	}
	delete(m.resv, addr)
	return nil
}
