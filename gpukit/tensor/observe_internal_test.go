package tensor

import (
	"testing"
	"time"

	"github.com/gpumem/course/gpukit/alloc"
	"github.com/gpumem/course/gpukit/device/backend"
)

// gateMemory is host-like memory whose alloc or free, once gated, stops
// half-way until the test lets it go: a goroutine caught inside the
// allocator, as the collector's cleanup goroutine can be while another
// goroutine holds the allocator's lock.
type gateMemory struct {
	gateAlloc, gateFree bool
	entered, release    chan struct{}
}

func (m *gateMemory) name() string { return "gate" }

func (m *gateMemory) alloc(n int64) (any, uint64, []byte, error) {
	if m.gateAlloc {
		m.wait()
	}
	return nil, 0x1000, make([]byte, n), nil
}

func (m *gateMemory) free(any) {
	if m.gateFree {
		m.wait()
	}
}

func (m *gateMemory) wait() {
	m.entered <- struct{}{}
	<-m.release
}

func (m *gateMemory) hasBytes() bool                           { return true }
func (m *gateMemory) launch(kernelCost)                        {}
func (m *gateMemory) compute() (backend.Compute, alloc.Stream) { return nil, 0 }
func (m *gateMemory) blasWorkspace() error                     { return nil }

type nopObserver struct{}

func (nopObserver) Allocated(*Storage) {}
func (nopObserver) Freed(*Storage)     {}
func (nopObserver) Launched(Launch)    {}

// TestObserverWaitsForMemoryUnderWay: an allocation or free under way
// finishes before SetObserver returns, and before OrderedWithMemory runs
// its function. Otherwise it lands after the observer's first event (the
// allocator's totals change with no event, and gpukit/profiler's timeline,
// which reads them at each event, no longer adds up), or its report lands
// after a profiler range began that the allocator's change preceded (the
// range's peak starts from a stale total).
func TestObserverWaitsForMemoryUnderWay(t *testing.T) {
	installers := []struct {
		name    string
		install func() (undo func())
	}{
		{"SetObserver", func() func() {
			prev := SetObserver(nopObserver{})
			return func() { SetObserver(prev) }
		}},
		{"OrderedWithMemory", func() func() {
			OrderedWithMemory(func() {})
			return func() {}
		}},
	}
	ops := []struct {
		name string
		run  func(m *gateMemory)
	}{
		{"alloc", func(m *gateMemory) {
			m.gateAlloc = true
			if _, err := newStorage(m, 64); err != nil {
				panic(err)
			}
		}},
		{"free", func(m *gateMemory) {
			s, err := newStorage(m, 64)
			if err != nil {
				panic(err)
			}
			s.retain()
			m.gateFree = true
			s.drop()
		}},
	}
	for _, in := range installers {
		for _, observed := range []bool{false, true} {
			for _, op := range ops {
				name := in.name + "/" + op.name
				if observed {
					name += "/observed"
				}
				t.Run(name, func(t *testing.T) {
					if observed {
						prev := SetObserver(nopObserver{})
						defer SetObserver(prev)
					}
					m := &gateMemory{entered: make(chan struct{}), release: make(chan struct{})}
					done := make(chan struct{})
					go func() {
						defer close(done)
						op.run(m)
					}()
					<-m.entered // under way

					returned := make(chan func())
					go func() { returned <- in.install() }()
					select {
					case undo := <-returned:
						close(m.release)
						<-done
						undo()
						t.Fatalf("%s returned while a %s was under way", in.name, op.name)
					case <-time.After(50 * time.Millisecond):
					}
					close(m.release)
					<-done
					(<-returned)()
				})
			}
		}
	}
}
