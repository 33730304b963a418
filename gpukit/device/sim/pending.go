package sim

import (
	"slices"
	"time"
)

// Deferred work. A real GPU runs the work of a stream when the stream gets
// to it, not when the host queues it; a bug in stream ordering (a block
// handed out again while another stream still copies from or into it)
// shows as wrong values only if the simulator moves bytes at the virtual
// time the work runs. Compute in gpukit/tensor is eager and always on
// stream 0, so the simulator defers only what it moves itself: an
// asynchronous copy (pinned host<->device, or device<->device) queued on a
// stream other than 0. Such a copy is recorded with its virtual start time
// and applied later, in order of start time (then of queuing):
//
//   - as soon as its start is at or before T0 = max(host clock, clock of
//     stream 0), because any work queued from now on, by the host or on
//     stream 0, starts at or after T0 and must see it; the host clock moves
//     past it on Synchronize, StreamSynchronize, Event.Synchronize or a raw
//     free, stream 0's clock on WaitEvent(0, e) and on its own work;
//   - before a synchronous copy or a copy on stream 0 that starts at or
//     after it.
//
// A copy whose start lies after T0 stays pending while stream 0 and the
// host go on: if stream-0 work overwrites its memory meanwhile (the block
// was freed without RecordStream and handed out again), the copy lands
// later and reads or writes the new owner's bytes, as on a GPU.

// pendingCopy is a deferred byte move.
type pendingCopy struct {
	seq   uint64 // queuing order, which breaks ties of start
	start time.Duration
	apply func()
}

// deferLocked records apply to run at virtual time start. Copies on one
// stream start in queuing order, so sorting by (start, seq) keeps each
// stream's order. b.mu must be held.
func (b *Backend) deferLocked(start time.Duration, apply func()) {
	b.seq++
	op := pendingCopy{seq: b.seq, start: start, apply: apply}
	i, _ := slices.BinarySearchFunc(b.pending, op, comparePending)
	b.pending = slices.Insert(b.pending, i, op)
}

func comparePending(a, b pendingCopy) int {
	if a.start != b.start {
		if a.start < b.start {
			return -1
		}
		return 1
	}
	switch {
	case a.seq < b.seq:
		return -1
	case a.seq > b.seq:
		return 1
	}
	return 0
}

// applyUntilLocked runs, in order, every pending copy that starts at or
// before t. b.mu must be held.
func (b *Backend) applyUntilLocked(t time.Duration) {
	n := 0
	for n < len(b.pending) && b.pending[n].start <= t {
		b.pending[n].apply()
		n++
	}
	if n > 0 {
		clear(b.pending[:n])
		b.pending = b.pending[n:]
		if len(b.pending) == 0 {
			b.pending = nil
		}
	}
}

// settleLocked applies the pending copies that work queued from now on
// must see: those starting at or before max(host, clock of stream 0).
func (b *Backend) settleLocked() {
	if len(b.pending) > 0 {
		b.applyUntilLocked(max(b.host, b.streams[0]))
	}
}

// Pending returns the number of deferred copies not yet applied: copies
// whose bytes have not moved because, in virtual time, they have not
// started yet.
func (b *Backend) Pending() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.pending)
}
