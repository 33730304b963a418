package tensor

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/gpumem/course/gpukit/device"
)

// An Observer sees every storage allocated and freed and every kernel an
// op launches, in program order: gpukit/profiler is one. It is called on
// the goroutine that did the work (frees may come from the collector's
// cleanup goroutine) and must not call back into ops.
//
// While no observer is installed, a launch pays one atomic load and an
// allocation or free a shared lock (see memorySeam).
type Observer interface {
	// Allocated is called after s got its memory (device or host).
	Allocated(s *Storage)
	// Freed is called after the memory of s went back.
	Freed(s *Storage)
	// Launched is called after an op charged its kernel to the device.
	Launched(k Launch)
}

// Launch is one kernel an op launched: its name (the op's, as in
// out.charge("Matmul", ...)), the tensor it wrote, the tensors it read and
// its modelled cost. On a device, Start and End are the kernel's start and
// end on the default stream's clock (virtual time on sim and meta
// devices); on the host both are zero.
type Launch struct {
	Name         string
	Out          *Tensor
	Inputs       []*Tensor
	Flops, Bytes int64
	Device       *device.Device
	Start, End   time.Duration
}

type observerBox struct{ o Observer }

var observer atomic.Pointer[observerBox]

// SetObserver installs o (nil removes the observer) and returns the one it
// replaced. One observer at a time: gpukit/profiler refuses nested
// profiles before it gets here.
func SetObserver(o Observer) (previous Observer) {
	// Exclusive: an allocation or free that found no observer finishes
	// before one is installed (see memorySeam).
	memorySeam.Lock()
	defer memorySeam.Unlock()
	var old *observerBox
	if o == nil {
		old = observer.Swap(nil)
	} else {
		old = observer.Swap(&observerBox{o})
	}
	if old == nil {
		return nil
	}
	return old.o
}

// memorySeam orders each storage's allocation or free against the
// observer, so that an observer sees them in the order the allocator
// applied them: an observer that reads the allocator's totals at each
// event (gpukit/profiler's timeline) must find them equal to its own
// running sum.
//
//   - With no observer, allocations and frees share it (RLock): they run
//     in parallel, and SetObserver (which takes it exclusively) waits for
//     those under way. Otherwise one that found no observer could land
//     after the new observer's first event, unreported.
//   - With an observer, each holds it exclusively together with the
//     observer's call about it. Otherwise a free on the collector's
//     cleanup goroutine could land between another goroutine's
//     allocation and its report.
var memorySeam sync.RWMutex

// OrderedWithMemory calls fn while no storage is being allocated or freed,
// so that what fn notes for an observer (gpukit/profiler's range
// boundaries) falls between the memory events the observer has seen, in
// the allocator's order. fn must not allocate, free or launch.
func OrderedWithMemory(fn func()) {
	if fn == nil {
		panicf("OrderedWithMemory: nil function")
	}
	memorySeam.Lock()
	defer memorySeam.Unlock()
	fn()
}

// lockMemory takes memorySeam for one allocation or free and returns the
// observer to report it to (nil: none). unlockMemory(b) releases it.
func lockMemory() *observerBox {
	for {
		memorySeam.RLock()
		if observer.Load() == nil {
			return nil
		}
		memorySeam.RUnlock()
		memorySeam.Lock()
		if b := observer.Load(); b != nil {
			return b
		}
		memorySeam.Unlock() // removed while we waited: back to the shared side
	}
}

func unlockMemory(b *observerBox) {
	if b == nil {
		memorySeam.RUnlock()
	} else {
		memorySeam.Unlock()
	}
}

// freeObserved frees the memory of s and reports it to the observer.
func freeObserved(s *Storage) {
	b := lockMemory()
	defer unlockMemory(b)
	s.core.free()
	if b != nil {
		b.o.Freed(s)
	}
}

// launchObserved launches k for the op that wrote t and reports it, with
// the kernel's place on the stream clock, to the observer.
func launchObserved(b *observerBox, t *Tensor, k kernelCost, inputs []*Tensor) {
	l := Launch{Name: k.name, Out: t, Inputs: inputs, Flops: k.flops, Bytes: k.bytes, Device: t.st.Device()}
	if d := l.Device; d != nil {
		l.Start = max(d.Now(), d.StreamClock(d.DefaultStream()))
		t.st.core.mem.launch(k)
		l.End = d.StreamClock(d.DefaultStream())
	} else {
		t.st.core.mem.launch(k)
	}
	// Exclusive, as for memory: the observer may read the allocator's
	// totals here (the first event it sees on a device).
	memorySeam.Lock()
	defer memorySeam.Unlock()
	b.o.Launched(l)
}
