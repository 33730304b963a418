package expandable

import (
	"errors"
	"testing"

	"github.com/gpumem/course/gpukit/alloc"
	"github.com/gpumem/course/gpukit/device"
	"github.com/gpumem/course/gpukit/device/sim"
)

const MiB = 1 << 20

// newDevice opens a private simulated card of the given capacity whose
// allocator has expandable segments on.
func newDevice(t *testing.T, capacity int64) *device.Device {
	t.Helper()
	p, err := device.LookupProfile("classroom")
	if err != nil {
		t.Fatal(err)
	}
	p = p.Resized(capacity)
	cfg, err := alloc.ParseConfig("expandable_segments:True")
	if err != nil {
		t.Fatal(err)
	}
	dev, err := device.New(sim.NewMeta(0, p), device.WithAllocConfig(cfg))
	if err != nil {
		t.Fatal(err)
	}
	return dev
}

// measure runs the iterations on a fresh device and reads what the real
// allocator holds.
func measure(t *testing.T, iterations [][]int64) Usage {
	t.Helper()
	dev := newDevice(t, 2<<30)
	for _, it := range iterations {
		var live []*alloc.Block
		for _, n := range it {
			b, err := dev.Malloc(n, dev.DefaultStream())
			if err != nil {
				t.Fatal(err)
			}
			live = append(live, b)
		}
		for _, b := range live {
			dev.Free(b)
		}
	}
	return Usage{Reserved: dev.MemoryReserved(), Segments: len(dev.Snapshot().Segments), Maps: dev.Stats()["num_device_alloc"]}
}

// TestPredictJitter: the batch-size jitter of the lesson, three batches.
func TestPredictJitter(t *testing.T) {
	var its [][]int64
	for n := int64(4); n <= 6; n++ {
		its = append(its, []int64{n * MiB / 2, n * 2 * MiB, n * MiB / 2, n * 2 * MiB})
	}
	got, err := Predict(its)
	if err != nil {
		t.Fatal(err)
	}
	if want := measure(t, its); got != want {
		t.Errorf("Predict = %+v, the allocator holds %+v", got, want)
	}
}

func TestLargestFree(t *testing.T) {
	dev := newDevice(t, 256*MiB)
	a, b, c := mustMalloc(t, dev, 6*MiB), mustMalloc(t, dev, 4*MiB), mustMalloc(t, dev, 3*MiB)
	dev.Free(a)
	_, _ = b, c
	// One 20 MiB page: a's free 6 MiB, then b and c, then the free 7 MiB
	// at the end of the page.
	if got := LargestFree(dev.Snapshot()); got != 7*MiB {
		t.Errorf("LargestFree = %d, want %d: the free rest of the page after c", got, 7*MiB)
	}
}

func TestPin(t *testing.T) {
	const capacity, request = 256 * MiB, 30 * MiB
	dev := newDevice(t, capacity)
	kept, err := Pin(dev, request)
	if err != nil {
		t.Fatal(err)
	}
	if free := capacity - dev.MemoryAllocated(); free < capacity/4 {
		t.Errorf("only %d bytes are not allocated, want at least a quarter of the device", free)
	}
	if _, err := dev.Malloc(request, dev.DefaultStream()); !errors.As(err, new(*alloc.OutOfMemoryError)) {
		t.Errorf("Malloc(%d) after Pin: %v, want an out-of-memory error", request, err)
	}
	for _, b := range kept {
		dev.Free(b)
	}
	if _, err := dev.Malloc(request, dev.DefaultStream()); err != nil {
		t.Errorf("Malloc(%d) after freeing the kept blocks: %v", request, err)
	}
}

func mustMalloc(t *testing.T, dev *device.Device, n int64) *alloc.Block {
	t.Helper()
	b, err := dev.Malloc(n, dev.DefaultStream())
	if err != nil {
		t.Fatal(err)
	}
	return b
}
