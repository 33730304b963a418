package leak

import (
	"math"
	"testing"

	"github.com/gpumem/course/gpukit/device"
	"github.com/gpumem/course/gpukit/device/simtest"
	"github.com/gpumem/course/gpukit/tensor"
)

// newDevice opens a private simulated classroom card that holds its
// cuBLAS workspace.
func newDevice(t *testing.T) *device.Device {
	t.Helper()
	// the first product on the card takes cuBLAS's workspace (lesson 02),
	// which stays for good: take it now, so that the tests measure tensors
	return simtest.Card(t, simtest.BlasWorkspace())
}

// problem is a model and data of the given sizes, from fixed seeds.
type problem struct{ n, in, hidden, out, steps int }

func (p problem) setup(t *testing.T) (*device.Device, *MLP, Data) {
	dev := newDevice(t)
	return dev, NewMLP(dev, p.in, p.hidden, p.out, 7), NewData(dev, p.n, p.in, p.out, 8)
}

// referenceFit is the loop as it should be, releasing everything it makes.
func referenceFit(m *MLP, d Data, steps int, lr float64) History {
	var h History
	for range steps {
		pred := m.Forward(d.X)
		loss := tensor.MSELoss(pred, d.Y)
		pred.Release()
		loss.Backward()
		h.Train = append(h.Train, loss.Item())
		loss.Release()
		m.Step(lr)
		tensor.NoGrad(func() {
			p := m.Forward(d.ValX)
			v := tensor.MSELoss(p, d.ValY)
			h.Val = append(h.Val, v.Item())
			p.Release()
			v.Release()
		})
	}
	return h
}

// sameBits reports whether two series are bitwise equal.
func sameBits(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
			return false
		}
	}
	return true
}

// unchanged checks that allocated memory and live blocks are as before.
func unchanged(t *testing.T, what string, dev *device.Device, allocated, live int64) {
	t.Helper()
	if got := dev.MemoryAllocated(); got != allocated {
		t.Errorf("%s: allocated memory %d bytes after Fit, %d before: %d bytes outlive the loop", what, got, allocated, got-allocated)
	}
	if got := dev.Stats()["allocation.all.current"]; got != live {
		t.Errorf("%s: %d live blocks after Fit, %d before", what, got, live)
	}
}

// opLog records, as a tensor.Observer, every kernel launched while it is
// installed, and so keeps every tensor an op wrote reachable, as a
// profiler that keeps its records does: memory that comes back only when
// the collector finds a tensor unreachable does not come back while it
// listens.
type opLog struct{ launches []tensor.Launch }

func (l *opLog) Allocated(*tensor.Storage) {}
func (l *opLog) Freed(*tensor.Storage)     {}
func (l *opLog) Launched(k tensor.Launch)  { l.launches = append(l.launches, k) }

// listen installs a new opLog until the test ends.
func listen(t *testing.T) *opLog {
	l := &opLog{}
	previous := tensor.SetObserver(l)
	t.Cleanup(func() { tensor.SetObserver(previous) })
	return l
}

// recording is the names of the logged ops that read x and recorded a
// graph (their output requires grad).
func (l *opLog) recording(x *tensor.Tensor) []string {
	var names []string
	for _, k := range l.launches {
		for _, in := range k.Inputs {
			if in != nil && in.SameStorage(x) && k.Out != nil && k.Out.RequiresGrad() {
				names = append(names, k.Name)
				break
			}
		}
	}
	return names
}
