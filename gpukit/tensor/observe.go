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
// While no observer is installed, each seam pays one atomic load.
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

// observedMemory holds, while an observer is installed, each storage's
// allocation or free together with the observer's call about it, so that
// the observer sees them in the order the allocator applied them. Without
// it a free on the collector's cleanup goroutine could land between
// another goroutine's allocation and its report, and an observer that
// reads the allocator's totals at each event (gpukit/profiler's
// timeline) would see them disagree with its own running sum.
var observedMemory sync.Mutex

// freeObserved frees the memory of s and reports it to the observer.
func freeObserved(s *Storage) {
	b := observer.Load()
	if b == nil {
		s.core.free()
		return
	}
	observedMemory.Lock()
	defer observedMemory.Unlock()
	s.core.free()
	b.o.Freed(s)
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
	b.o.Launched(l)
}
