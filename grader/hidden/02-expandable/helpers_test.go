package expandable

import (
	"testing"

	"github.com/gpumem/course/gpukit/alloc"
	"github.com/gpumem/course/gpukit/device"
	"github.com/gpumem/course/gpukit/device/simtest"
)

const MiB = 1 << 20

// newDevice opens a private simulated card of the given capacity (accounting
// only, no bytes) whose allocator has expandable segments on.
func newDevice(t *testing.T, capacity int64) *device.Device {
	t.Helper()
	return newDeviceConf(t, capacity, "expandable_segments:True")
}

func newDeviceConf(t *testing.T, capacity int64, conf string) *device.Device {
	t.Helper()
	return simtest.Card(t, simtest.Meta(), simtest.Capacity(capacity), simtest.AllocConf(conf))
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

func mustMalloc(t *testing.T, dev *device.Device, n int64, s alloc.Stream) *alloc.Block {
	t.Helper()
	b, err := dev.Malloc(n, s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
