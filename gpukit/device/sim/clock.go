package sim

import (
	"fmt"
	"time"

	"github.com/gpumem/course/gpukit/alloc"
	"github.com/gpumem/course/gpukit/device/backend"
	"github.com/gpumem/course/gpukit/device/profile"
)

// enqueue queues an operation of the given cost on stream s. It starts when
// both the host has issued it and the stream's earlier work is done, at
// max(host, stream clock), and ends cost later. An asynchronous operation
// costs the host only the launch overhead; a synchronous one makes the host
// wait for its end. It returns the end time. b.mu must be held.
func (b *Backend) enqueue(s alloc.Stream, cost time.Duration, sync bool) time.Duration {
	start := max(b.host, b.streams[s])
	end := start + cost
	b.streams[s] = end
	if sync {
		b.host = end
	} else {
		b.host += b.prof.LaunchOverhead
	}
	b.settleLocked()
	return end
}

// moveLocked queues a copy of the given cost on s whose bytes move by
// calling move (nil when there are no bytes to move, in meta mode). An
// asynchronous copy on a stream other than 0 is deferred to its virtual
// start (see pending.go); any other copy moves its bytes now, after the
// pending copies that start before it. b.mu must be held.
func (b *Backend) moveLocked(s alloc.Stream, cost time.Duration, sync bool, move func()) {
	start := max(b.host, b.streams[s])
	if move != nil {
		if sync || s == 0 {
			b.applyUntilLocked(start)
			move()
		} else {
			b.deferLocked(start, move)
		}
	}
	b.enqueue(s, cost, sync)
}

// syncLocked makes the host clock catch up with every stream.
func (b *Backend) syncLocked() {
	for _, t := range b.streams {
		b.host = max(b.host, t)
	}
	b.settleLocked()
}

// Now returns the host clock.
func (b *Backend) Now() time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.host
}

// NowMicros returns the host clock in microseconds.
func (b *Backend) NowMicros() float64 { return float64(b.Now()) / float64(time.Microsecond) }

// StreamClock returns the time at which the work queued on s completes.
func (b *Backend) StreamClock(s alloc.Stream) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.streams[s]
}

// NewStream creates a stream. Stream 0, the default stream, always exists;
// it behaves like any other stream (as a per-thread or non-blocking default
// stream does), not like CUDA's legacy default stream that serializes with
// all others.
func (b *Backend) NewStream() alloc.Stream {
	b.mu.Lock()
	defer b.mu.Unlock()
	for {
		s := b.nextStream
		b.nextStream++
		if _, used := b.streams[s]; !used {
			b.streams[s] = 0
			return s
		}
	}
}

// Synchronize advances the host clock to the end of all queued work.
func (b *Backend) Synchronize() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.syncLocked()
}

// StreamSynchronize advances the host clock to the end of the work queued on s.
func (b *Backend) StreamSynchronize(s alloc.Stream) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.host = max(b.host, b.streams[s])
	b.settleLocked()
}

// Launch queues the modelled cost of k on s: Profile.KernelCost(k). The host
// pays the launch overhead.
func (b *Backend) Launch(s alloc.Stream, k profile.Kernel) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.enqueue(s, b.prof.KernelCost(k), false)
}

// Occupy queues d of work on stream s that the caller has costed itself,
// such as a collective library's kernel (NCCL's ring, modelled by
// gpukit/distributed), and moves no bytes. Like Launch, it starts at
// max(host clock, clock of s) and costs the host the launch overhead.
func (b *Backend) Occupy(s alloc.Stream, d time.Duration) {
	if d < 0 {
		panic(fmt.Sprintf("sim: %s: Occupy: negative duration %v", b.Name(), d))
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.enqueue(s, d, false)
}

// Event is a recorded point of a simulated stream: the virtual time at
// which the work queued before it completes.
type Event struct {
	b *Backend
	t time.Duration
}

var _ backend.Event = (*Event)(nil)

// RecordEvent records an event on s at max(host clock, stream clock).
func (b *Backend) RecordEvent(s alloc.Stream) alloc.Event {
	b.mu.Lock()
	defer b.mu.Unlock()
	t := max(b.host, b.streams[s])
	b.streams[s] = t
	return &Event{b: b, t: t}
}

// Time returns the event's timestamp.
func (e *Event) Time() time.Duration { return e.t }

// Done reports whether the host clock has reached the event.
func (e *Event) Query() bool {
	e.b.mu.Lock()
	defer e.b.mu.Unlock()
	return e.b.host >= e.t
}

// Synchronize advances the host clock to the event.
func (e *Event) Synchronize() {
	e.b.mu.Lock()
	defer e.b.mu.Unlock()
	e.b.host = max(e.b.host, e.t)
	e.b.settleLocked()
}

// ElapsedSince returns e's timestamp minus start's. It panics if start is
// not a simulated event.
func (e *Event) ElapsedSince(start backend.Event) time.Duration {
	s, ok := start.(*Event)
	if !ok {
		panic(fmt.Sprintf("sim: ElapsedSince: start event is a %T, not a simulated event", start))
	}
	return e.t - s.t
}

// WaitEvent makes work queued on s from now on start no earlier than e.
func (b *Backend) WaitEvent(s alloc.Stream, e backend.Event) {
	ev, ok := e.(*Event)
	if !ok {
		panic(fmt.Sprintf("sim: WaitEvent: event is a %T, not a simulated event", e))
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.streams[s] = max(b.streams[s], ev.t)
	b.settleLocked()
}

// ---- copies ---------------------------------------------------------------

// CopyHtoD copies src to dst and charges Profile.CopyCost on s. Only a pinned
// asynchronous copy returns to the host before the copy ends; a pageable
// copy is synchronous even when async is requested, as in CUDA. A pinned
// asynchronous copy on a stream other than 0 reads src when it runs in
// virtual time (see pending.go), so src must not change until then.
func (b *Backend) CopyHtoD(dst uint64, src []byte, pinned bool, s alloc.Stream, async bool) error {
	return b.copyHost("host-to-device copy", dst, int64(len(src)), pinned, s, async, func(to []byte) { copy(to, src) })
}

// CopyDtoH copies len(dst) bytes from src to dst, charged like CopyHtoD. In
// meta mode dst is left unchanged.
func (b *Backend) CopyDtoH(dst []byte, src uint64, pinned bool, s alloc.Stream, async bool) error {
	return b.copyHost("device-to-host copy", src, int64(len(dst)), pinned, s, async, func(from []byte) { copy(dst, from) })
}

// copyHost is a copy of n bytes between the host and addr on s, charged
// Profile.CopyCost: move gets the device's bytes, when it has any.
func (b *Backend) copyHost(what string, addr uint64, n int64, pinned bool, s alloc.Stream, async bool, move func(dev []byte)) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	dev, ok := b.memLocked(addr, n)
	if !ok {
		return b.rangeError(what, addr, n)
	}
	var mv func()
	if dev != nil {
		mv = func() { move(dev) }
	}
	b.moveLocked(s, b.prof.CopyCost(n, pinned), !(async && pinned), mv)
	return nil
}

// CopyDtoD copies n bytes within the device (overlapping ranges are fine),
// asynchronously on s, charged Profile.DeviceCopyCost.
func (b *Backend) CopyDtoD(dst, src uint64, n int64, s alloc.Stream) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	to, ok := b.memLocked(dst, n)
	if !ok {
		return b.rangeError("device-to-device copy destination", dst, n)
	}
	from, ok := b.memLocked(src, n)
	if !ok {
		return b.rangeError("device-to-device copy source", src, n)
	}
	var move func()
	if to != nil && from != nil {
		move = func() { copy(to, from) }
	}
	b.moveLocked(s, b.prof.DeviceCopyCost(n), false, move)
	return nil
}

// CopyPeer copies n bytes from src on srcB to dst on dstB, asynchronously on
// stream s of b, charged Profile.PeerCopyTime: over NVLink when both
// profiles have it, PCIe otherwise (DeviceCopyCost when both ends are b).
// Both ends must be simulated devices; bytes move only when both have
// backing bytes.
func (b *Backend) CopyPeer(dst uint64, dstB backend.Backend, src uint64, srcB backend.Backend, n int64, s alloc.Stream) error {
	d, ok1 := dstB.(*Backend)
	sr, ok2 := srcB.(*Backend)
	if !ok1 || !ok2 {
		return fmt.Errorf("sim: %s: peer copy between %s and %s: both devices must be simulated", b.Name(), srcB.Name(), dstB.Name())
	}
	if d == b && sr == b {
		return b.CopyDtoD(dst, src, n, s)
	}
	if !sr.Owns(src, n) {
		return sr.rangeError("peer copy source", src, n)
	}
	if !d.Owns(dst, n) {
		return d.rangeError("peer copy destination", dst, n)
	}
	if from, to := sr.Bytes(src, n), d.Bytes(dst, n); from != nil && to != nil {
		copy(to, from)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.enqueue(s, b.prof.PeerCopyTime(sr.prof, d.prof, n), false)
	return nil
}

func (b *Backend) rangeError(op string, addr uint64, n int64) error {
	return fmt.Errorf("sim: %s: %s of %d bytes at 0x%x: range is not inside a live segment", b.Name(), op, n, addr)
}
