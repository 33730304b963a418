package predict

import (
	"testing"

	"github.com/gpumem/course/gpukit/alloc"
	"github.com/gpumem/course/gpukit/device"
	"github.com/gpumem/course/gpukit/device/simtest"
)

const MiB = 1 << 20

// newDevice opens a private classroom card in meta mode: the allocator's
// accounting without backing bytes, which is all these tests read, so
// that hundreds of segments cost no host memory.
func newDevice(t *testing.T) *device.Device {
	t.Helper()
	return simtest.Card(t, simtest.Meta())
}

// measure serves requests on a fresh device, keeping every block, and reads
// what the real allocator holds.
func measure(t *testing.T, requests []int64) Prediction {
	t.Helper()
	dev := newDevice(t)
	var blocks []*alloc.Block
	for _, n := range requests {
		b, err := dev.Malloc(n, dev.DefaultStream())
		if err != nil {
			t.Fatal(err)
		}
		blocks = append(blocks, b)
	}
	held := Prediction{Allocated: dev.MemoryAllocated(), Reserved: dev.MemoryReserved(), Segments: dev.Stats()["segment.all.current"]}
	for _, b := range blocks { // give the simulated memory back at once
		dev.Free(b)
	}
	dev.EmptyCache()
	return held
}
