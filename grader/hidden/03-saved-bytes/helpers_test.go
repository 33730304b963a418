package saved

import (
	"runtime"
	"testing"

	"github.com/gpumem/course/gpukit/device/simtest"
	"github.com/gpumem/course/gpukit/tensor"
)

// measure runs Model.Loss on a private simulated classroom card and returns
// what it left allocated beyond the model.
func measure(t *testing.T, s Shape, mode Mode) int64 {
	t.Helper()
	dev := simtest.Card(t)
	m := NewModel(dev, s, mode, 1)
	// the first product on the card takes cuBLAS's workspace (lesson 02),
	// which stays: take it first, so that what is left is the graph's
	if err := dev.BlasWorkspace(dev.DefaultStream()); err != nil {
		t.Fatal(err)
	}
	before := dev.MemoryAllocated()
	loss := m.Loss(mode)
	defer loss.Release()
	left := dev.MemoryAllocated() - before
	runtime.KeepAlive(m) // the collector must not free the model before the measurement
	return left
}

func check(t *testing.T, s Shape, mode Mode) {
	t.Helper()
	got, err := Predict(s, mode)
	if err != nil {
		t.Errorf("%v %+v: %v", mode, s, err)
		return
	}
	if want := measure(t, s, mode); got != want {
		t.Errorf("%v %+v: predicted %d bytes, the allocator holds %d", mode, s, got, want)
	}
}

// tensorLog counts, as a tensor.Observer, the storages allocated and the
// kernels launched while it is installed.
type tensorLog struct{ allocated, launched int }

func (l *tensorLog) Allocated(*tensor.Storage) { l.allocated++ }
func (l *tensorLog) Freed(*tensor.Storage)     {}
func (l *tensorLog) Launched(tensor.Launch)    { l.launched++ }
