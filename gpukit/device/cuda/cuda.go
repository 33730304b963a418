//go:build cuda

package cuda

import (
	"errors"
	"fmt"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"
	"unsafe"

	"gorgonia.org/cu"

	"github.com/gpumem/course/gpukit/alloc"
	"github.com/gpumem/course/gpukit/device/backend"
	"github.com/gpumem/course/gpukit/device/internal/pagemap"
	"github.com/gpumem/course/gpukit/device/profile"
	"github.com/gpumem/course/gpukit/internal/hostmem"
)

// Backend is one CUDA device, driven through its primary context. Every
// driver call runs on a locked OS thread with the context current, under a
// mutex, so a Backend is safe for concurrent use.
type Backend struct {
	index int
	dev   cu.Device
	ctx   cu.CUContext
	prof  profile.Profile
	start time.Time

	mu         sync.Mutex
	segs       []segment                   // live allocations, sorted by address
	resv       pagemap.Table[*reservation] // address ranges for expandable segments (vmm.go)
	streams    map[alloc.Stream]cu.Stream
	nextStream alloc.Stream

	comp computeState // kernels and cuBLAS, see compute.go
}

type segment struct {
	addr uint64
	size int64
}

var _ backend.Backend = (*Backend)(nil)

// Open retains the primary context of device index and reads its profile.
func Open(index int) (*Backend, error) {
	n, err := cu.NumDevices()
	if err != nil {
		return nil, fmt.Errorf("cuda: cuDeviceGetCount: %w", err)
	}
	if index < 0 || index >= n {
		return nil, fmt.Errorf("cuda: no device %d: %d CUDA device(s) present", index, n)
	}
	dev, err := cu.GetDevice(index)
	if err != nil {
		return nil, fmt.Errorf("cuda: cuDeviceGet(%d): %w", index, err)
	}
	ctx, err := dev.RetainPrimaryCtx()
	if err != nil {
		return nil, fmt.Errorf("cuda: cuDevicePrimaryCtxRetain(%d): %w", index, err)
	}
	b := &Backend{
		index:      index,
		dev:        dev,
		ctx:        ctx,
		streams:    map[alloc.Stream]cu.Stream{0: {}}, // the zero cu.Stream is the NULL stream
		nextStream: 1,
	}
	if b.prof, err = readProfile(dev); err != nil {
		return nil, err
	}
	b.start = time.Now()
	return b, nil
}

func readProfile(dev cu.Device) (profile.Profile, error) {
	name, err := dev.Name()
	if err != nil {
		return profile.Profile{}, fmt.Errorf("cuda: cuDeviceGetName: %w", err)
	}
	total, err := dev.TotalMem()
	if err != nil {
		return profile.Profile{}, fmt.Errorf("cuda: cuDeviceTotalMem: %w", err)
	}
	var p profile.Profile
	upper := strings.ToUpper(name)
	for key, card := range map[string]string{"T4": "t4", "A100": "a100-40gb", "H100": "h100-80gb"} {
		if strings.Contains(upper, key) {
			p, _ = profile.LookupProfile(card)
		}
	}
	p.Name = strings.ToLower(strings.ReplaceAll(name, " ", "-"))
	p.Description = name
	p.Capacity = total
	// Peak memory bandwidth: memory clock (kHz) * 2 (double data rate) *
	// bus width (bits) / 8.
	if attrs, err := dev.Attributes(cu.MemoryClockRate, cu.GlobalMemoryBusWidth); err == nil && attrs[0] > 0 {
		p.HBMBandwidth = float64(attrs[0]) * 1e3 * 2 * float64(attrs[1]) / 8
	}
	// The compute capability sizes PyTorch's default cuBLAS workspace
	// (device.CublasWorkspaceSize).
	if attrs, err := dev.Attributes(cu.ComputeCapabilityMajor); err == nil {
		p.ComputeMajor = attrs[0]
	}
	p.Source = "read from the device (cuDeviceGetName, cuDeviceTotalMem, memory clock rate and bus width, compute capability); other figures from the built-in profile of the same card, if any"
	return p, nil
}

// do runs f on a locked OS thread with the device's context current.
// b.mu must be held.
func (b *Backend) do(f func() error) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := cu.SetCurrentContext(b.ctx); err != nil {
		return fmt.Errorf("cuda: %s: cuCtxSetCurrent: %w", b.Name(), err)
	}
	return f()
}

// call is do under the mutex.
func (b *Backend) call(f func() error) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.do(f)
}

// must panics on a driver error from an operation whose signature cannot
// return one (synchronizations, launches): these mean a broken device.
func must(err error) {
	if err != nil {
		panic(err)
	}
}

// Name returns "cuda:N".
func (b *Backend) Name() string { return fmt.Sprintf("cuda:%d", b.index) }

// Kind returns backend.CUDA.
func (b *Backend) Kind() backend.Kind { return backend.CUDA }

// Index returns the device ordinal.
func (b *Backend) Index() int { return b.index }

// Profile returns the profile read from the device.
func (b *Backend) Profile() profile.Profile { return b.prof }

// Capacity returns the device's total memory.
func (b *Backend) Capacity() int64 { return b.prof.Capacity }

// ---- raw memory -----------------------------------------------------------

// Malloc is cuMemAlloc. Out of memory wraps alloc.ErrDeviceFull.
func (b *Backend) Malloc(size int64) (uint64, error) {
	if size <= 0 {
		return 0, fmt.Errorf("cuda: %s: malloc of %d bytes: size must be positive", b.Name(), size)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	var p cu.DevicePtr
	err := b.do(func() (err error) { p, err = cu.MemAlloc(size); return })
	if errors.Is(err, cu.OutOfMemory) {
		return 0, fmt.Errorf("cuda: %s: cuMemAlloc(%d): %v: %w", b.Name(), size, err, alloc.ErrDeviceFull)
	}
	if err != nil {
		return 0, fmt.Errorf("cuda: %s: cuMemAlloc(%d): %w", b.Name(), size, err)
	}
	addr := uint64(p)
	i := sort.Search(len(b.segs), func(i int) bool { return b.segs[i].addr > addr })
	b.segs = append(b.segs, segment{})
	copy(b.segs[i+1:], b.segs[i:])
	b.segs[i] = segment{addr: addr, size: size}
	return addr, nil
}

// Free synchronizes the device, as cudaFree does, then calls cuMemFree.
func (b *Backend) Free(addr uint64) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	i := b.find(addr)
	if i < 0 || b.segs[i].addr != addr {
		return fmt.Errorf("cuda: %s: free of 0x%x: not the start of a live allocation", b.Name(), addr)
	}
	err := b.do(func() error {
		if err := cu.Synchronize(); err != nil {
			return err
		}
		return cu.MemFree(cu.DevicePtr(addr))
	})
	if err != nil {
		return fmt.Errorf("cuda: %s: cuMemFree(0x%x): %w", b.Name(), addr, err)
	}
	b.segs = append(b.segs[:i], b.segs[i+1:]...)
	return nil
}

func (b *Backend) find(addr uint64) int {
	i := sort.Search(len(b.segs), func(i int) bool { return b.segs[i].addr+uint64(b.segs[i].size) > addr })
	if i < len(b.segs) && b.segs[i].addr <= addr {
		return i
	}
	return -1
}

func (b *Backend) ownsLocked(addr uint64, n int64) bool {
	i := b.find(addr)
	return i >= 0 && n >= 0 && addr+uint64(n) <= b.segs[i].addr+uint64(b.segs[i].size) || b.ownsPagesLocked(addr, n)
}

// Owns reports whether [addr, addr+n) lies inside one live allocation or in
// mapped pages of one reservation.
func (b *Backend) Owns(addr uint64, n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.ownsLocked(addr, n)
}

// Bytes returns nil: device memory is not host-visible. Use the copies.
func (b *Backend) Bytes(addr uint64, n int64) []byte { return nil }

// MemInfo is cuMemGetInfo.
func (b *Backend) MemInfo() (free, total int64) {
	must(b.call(func() (err error) { free, total, err = cu.MemInfo(); return }))
	return free, total
}

// FreeBytes is the free device memory, for alloc.FreeBytesReporter.
func (b *Backend) FreeBytes() int64 {
	free, _ := b.MemInfo()
	return free
}

// HostAlloc returns page-locked memory from cuMemHostAlloc when pinned, Go
// memory otherwise. Free the buffer to release pinned memory.
func (b *Backend) HostAlloc(size int64, pinned bool) (*backend.HostBuffer, error) {
	if err := hostmem.Check("cuda: "+b.Name(), size); err != nil {
		return nil, err
	}
	if !pinned || size == 0 {
		return backend.NewHostBuffer(make([]byte, size), pinned, nil), nil
	}
	var p unsafe.Pointer
	if err := b.call(func() (err error) { p, err = hostAlloc(size); return }); err != nil {
		return nil, fmt.Errorf("cuda: %s: %w", b.Name(), err)
	}
	free := func() { _ = b.call(func() error { return freeHost(p) }) }
	return backend.NewHostBuffer(unsafe.Slice((*byte)(p), size), true, free), nil
}

// ---- streams and events ---------------------------------------------------

func (b *Backend) stream(s alloc.Stream) (cu.Stream, error) {
	cs, ok := b.streams[s]
	if !ok {
		return cu.Stream{}, fmt.Errorf("cuda: %s: unknown stream %d (create streams with NewStream)", b.Name(), s)
	}
	return cs, nil
}

// NewStream creates a non-blocking stream (cuStreamCreate).
func (b *Backend) NewStream() alloc.Stream {
	b.mu.Lock()
	defer b.mu.Unlock()
	var cs cu.Stream
	must(b.do(func() (err error) { cs, err = cu.MakeStream(cu.NonBlocking); return }))
	s := b.nextStream
	b.nextStream++
	b.streams[s] = cs
	return s
}

// Synchronize is cuCtxSynchronize.
func (b *Backend) Synchronize() { must(b.call(cu.Synchronize)) }

// StreamSynchronize is cuStreamSynchronize.
func (b *Backend) StreamSynchronize(s alloc.Stream) {
	b.mu.Lock()
	defer b.mu.Unlock()
	cs, err := b.stream(s)
	must(err)
	must(b.do(cs.Synchronize))
}

// Launch does nothing: a modelled kernel has nothing to run on a real GPU.
func (b *Backend) Launch(s alloc.Stream, k profile.Kernel) {}

// Now is the wall time since the device was opened.
func (b *Backend) Now() time.Duration { return time.Since(b.start) }

// NowMicros is Now in microseconds.
func (b *Backend) NowMicros() float64 { return float64(b.Now()) / float64(time.Microsecond) }

// StreamClock waits for the work queued on s and returns Now: a real device
// cannot tell in advance when its queued work completes.
func (b *Backend) StreamClock(s alloc.Stream) time.Duration {
	b.StreamSynchronize(s)
	return b.Now()
}

// Event is a timed CUDA event.
type Event struct {
	b  *Backend
	ev cu.Event
}

var _ backend.Event = (*Event)(nil)

// RecordEvent creates an event and records it on s (cuEventRecord).
func (b *Backend) RecordEvent(s alloc.Stream) alloc.Event {
	b.mu.Lock()
	defer b.mu.Unlock()
	cs, err := b.stream(s)
	must(err)
	var ev cu.Event
	must(b.do(func() error {
		var err error
		if ev, err = cu.MakeEvent(cu.DefaultEvent); err != nil {
			return err
		}
		return ev.Record(cs)
	}))
	e := &Event{b: b, ev: ev}
	runtime.AddCleanup(e, func(ev cu.Event) {
		_ = b.call(func() error { return cu.DestroyEvent(&ev) })
	}, ev)
	return e
}

// Done is cuEventQuery.
func (e *Event) Query() bool {
	var err error
	_ = e.b.call(func() error { err = e.ev.Query(); return nil })
	if errors.Is(err, cu.NotReady) {
		return false
	}
	must(err)
	return true
}

// Synchronize is cuEventSynchronize.
func (e *Event) Synchronize() { must(e.b.call(e.ev.Synchronize)) }

// ElapsedSince is cuEventElapsedTime(start, e), at the driver's resolution
// of about half a microsecond.
func (e *Event) ElapsedSince(start backend.Event) time.Duration {
	s, ok := start.(*Event)
	if !ok {
		panic(fmt.Sprintf("cuda: ElapsedSince: start event is a %T, not a CUDA event", start))
	}
	var ms float64
	must(e.b.call(func() (err error) { ms, err = s.ev.Elapsed(e.ev); return }))
	return profile.Seconds(ms / 1e3)
}

// WaitEvent is cuStreamWaitEvent.
func (b *Backend) WaitEvent(s alloc.Stream, e backend.Event) {
	ev, ok := e.(*Event)
	if !ok {
		panic(fmt.Sprintf("cuda: WaitEvent: event is a %T, not a CUDA event", e))
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	cs, err := b.stream(s)
	must(err)
	must(b.do(func() error { return cs.Wait(ev.ev, 0) }))
}

// ---- copies ---------------------------------------------------------------

// CopyHtoD is cuMemcpyHtoDAsync for a pinned asynchronous copy and
// cuMemcpyHtoD after synchronizing s otherwise (what the driver does for
// pageable memory anyway; it also keeps Go memory from being used by the
// device after the call returns).
func (b *Backend) CopyHtoD(dst uint64, src []byte, pinned bool, s alloc.Stream, async bool) error {
	return b.copyHost("host-to-device copy", dst, src, s, async && pinned,
		func(p unsafe.Pointer, n int64, cs cu.Stream) error {
			return cu.MemcpyHtoDAsync(cu.DevicePtr(dst), p, n, cs)
		},
		func(p unsafe.Pointer, n int64) error { return cu.MemcpyHtoD(cu.DevicePtr(dst), p, n) })
}

// CopyDtoH is cuMemcpyDtoHAsync for a pinned asynchronous copy and
// cuMemcpyDtoH after synchronizing s otherwise.
func (b *Backend) CopyDtoH(dst []byte, src uint64, pinned bool, s alloc.Stream, async bool) error {
	return b.copyHost("device-to-host copy", src, dst, s, async && pinned,
		func(p unsafe.Pointer, n int64, cs cu.Stream) error {
			return cu.MemcpyDtoHAsync(p, cu.DevicePtr(src), n, cs)
		},
		func(p unsafe.Pointer, n int64) error { return cu.MemcpyDtoH(p, cu.DevicePtr(src), n) })
}

// copyHost is the shared part of the two host copies: host is the host side
// and addr the device side. It checks the device range, then runs
// asyncCopy on s, or synchronizes s and runs syncCopy.
func (b *Backend) copyHost(op string, addr uint64, host []byte, s alloc.Stream, async bool,
	asyncCopy func(p unsafe.Pointer, n int64, cs cu.Stream) error, syncCopy func(p unsafe.Pointer, n int64) error) error {
	n := int64(len(host))
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.ownsLocked(addr, n) {
		return b.rangeError(op, addr, n)
	}
	if n == 0 {
		return nil
	}
	cs, err := b.stream(s)
	if err != nil {
		return err
	}
	err = b.do(func() error {
		p := unsafe.Pointer(&host[0])
		if async {
			return asyncCopy(p, n, cs)
		}
		if err := cs.Synchronize(); err != nil {
			return err
		}
		return syncCopy(p, n)
	})
	if err != nil {
		return fmt.Errorf("cuda: %s: %s of %d bytes: %w", b.Name(), op, n, err)
	}
	return nil
}

// CopyDtoD is cuMemcpyDtoDAsync on s.
func (b *Backend) CopyDtoD(dst, src uint64, n int64, s alloc.Stream) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.ownsLocked(dst, n) {
		return b.rangeError("device-to-device copy destination", dst, n)
	}
	if !b.ownsLocked(src, n) {
		return b.rangeError("device-to-device copy source", src, n)
	}
	if n == 0 {
		return nil
	}
	cs, err := b.stream(s)
	if err != nil {
		return err
	}
	if err := b.do(func() error { return cu.MemcpyDtoDAsync(cu.DevicePtr(dst), cu.DevicePtr(src), n, cs) }); err != nil {
		return fmt.Errorf("cuda: %s: device-to-device copy of %d bytes: %w", b.Name(), n, err)
	}
	return nil
}

// CopyPeer is cuMemcpyPeerAsync on stream s of b.
func (b *Backend) CopyPeer(dst uint64, dstB backend.Backend, src uint64, srcB backend.Backend, n int64, s alloc.Stream) error {
	d, ok1 := dstB.(*Backend)
	sr, ok2 := srcB.(*Backend)
	if !ok1 || !ok2 {
		return fmt.Errorf("cuda: %s: peer copy between %s and %s: both devices must be CUDA devices", b.Name(), srcB.Name(), dstB.Name())
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
	if n == 0 {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	cs, err := b.stream(s)
	if err != nil {
		return err
	}
	err = b.do(func() error {
		return cu.MemcpyPeerAsync(cu.DevicePtr(dst), d.ctx, cu.DevicePtr(src), sr.ctx, n, cs)
	})
	if err != nil {
		return fmt.Errorf("cuda: %s: peer copy of %d bytes from %s to %s: %w", b.Name(), n, sr.Name(), d.Name(), err)
	}
	return nil
}

func (b *Backend) rangeError(op string, addr uint64, n int64) error {
	return fmt.Errorf("cuda: %s: %s of %d bytes at 0x%x: range is not inside a live allocation", b.Name(), op, n, addr)
}
