package tensor_test

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gpumem/course/gpukit/device"
	"github.com/gpumem/course/gpukit/tensor"
)

// allocatedLedger checks, at every event an observer sees, that the
// device's allocated bytes equal the running sum of the blocks the events
// so far allocated and freed: an observer sees the events in the order
// the allocator applied them.
type allocatedLedger struct {
	d     *device.Device
	mu    sync.Mutex
	sum   int64
	sizes map[*tensor.Storage]int64
	bad   int
	first string
}

func (l *allocatedLedger) Allocated(s *tensor.Storage) {
	l.mu.Lock()
	defer l.mu.Unlock()
	size := s.Block().Size()
	l.sizes[s] = size
	l.check(size, "allocated")
}

func (l *allocatedLedger) Freed(s *tensor.Storage) {
	l.mu.Lock()
	defer l.mu.Unlock()
	size := l.sizes[s]
	delete(l.sizes, s)
	l.check(-size, "freed")
}

func (l *allocatedLedger) Launched(tensor.Launch) {}

func (l *allocatedLedger) check(delta int64, what string) {
	l.sum += delta
	if got := l.d.MemoryAllocated(); got != l.sum {
		if l.bad == 0 {
			l.first = what
		}
		l.bad++
		l.sum = got // count each disorder once
	}
}

// TestObserverSeesAllocatorOrder: two goroutines allocate and free at
// once, as a program's goroutine and the collector's cleanup goroutine
// do, and the observer's view of the allocated bytes never departs from
// the allocator's (gpukit/profiler's timeline reads the allocator's total
// at each event).
func TestObserverSeesAllocatorOrder(t *testing.T) {
	d := newDev(t)
	l := &allocatedLedger{d: d, sizes: map[*tensor.Storage]int64{}, sum: d.MemoryAllocated()}
	prev := tensor.SetObserver(l)
	defer tensor.SetObserver(prev)
	var wg sync.WaitGroup
	for g := range 2 {
		wg.Go(func() {
			for i := range 4000 {
				x := tensor.Zeros([]int{64 + 64*((i+g)%4)}, tensor.On(d))
				x.Release()
			}
		})
	}
	wg.Wait()
	l.mu.Lock()
	defer l.mu.Unlock()
	require.Zero(t, l.bad, "%d events saw the allocated bytes out of order with the allocator (first: %s)", l.bad, l.first)
}

// TestOrderedWithMemoryRefusesNil: a nil function is the package's own
// error, and the seam is left unlocked (an allocation after it does not
// hang).
func TestOrderedWithMemoryRefusesNil(t *testing.T) {
	func() {
		defer func() {
			r := recover()
			require.NotNil(t, r, "no panic")
			err, ok := r.(*tensor.Error)
			require.True(t, ok, "panic %v is not a *tensor.Error", r)
			require.Contains(t, err.Error(), "tensor: OrderedWithMemory: nil function")
		}()
		tensor.OrderedWithMemory(nil)
	}()
	tensor.Zeros([]int{4}, tensor.On(newDev(t))).Release()
}
