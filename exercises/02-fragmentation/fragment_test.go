package fragment

import (
	"errors"
	"testing"

	"github.com/gpumem/course/gpukit/alloc"
	"github.com/gpumem/course/gpukit/device"
	"github.com/gpumem/course/gpukit/device/sim"
)

const MiB = 1 << 20

// newDevice opens a private simulated classroom card of the given capacity
// (smaller than the real 2 GiB, so that filling it is quick).
func newDevice(t *testing.T, capacity int64) *device.Device {
	t.Helper()
	p, err := device.LookupProfile("classroom")
	if err != nil {
		t.Fatal(err)
	}
	p = p.Resized(capacity) // a made-up card: all of it is ours
	dev, err := device.New(sim.New(0, p))
	if err != nil {
		t.Fatal(err)
	}
	return dev
}

func TestFragmentSmallRequest(t *testing.T) {
	dev := newDevice(t, 256*MiB)
	kept, err := Fragment(dev, 4*MiB)
	if err != nil {
		t.Fatal(err)
	}
	_, capacity := dev.MemInfo()
	if free := capacity - dev.MemoryAllocated(); free < capacity/4 {
		t.Errorf("only %d of %d bytes are not allocated, want at least a quarter", free, capacity)
	}
	_, err = dev.Malloc(4*MiB, dev.DefaultStream())
	var oom *alloc.OutOfMemoryError
	if !errors.As(err, &oom) {
		t.Fatalf("asking for 4 MiB after Fragment: got %v, want an out-of-memory error", err)
	}
	for _, b := range kept {
		dev.Free(b)
	}
	if _, err := dev.Malloc(4*MiB, dev.DefaultStream()); err != nil {
		t.Errorf("after freeing the kept blocks, 4 MiB must fit: %v", err)
	}
}

func TestLargestFreeBlock(t *testing.T) {
	dev := newDevice(t, 256*MiB)
	var blocks []*alloc.Block
	for _, n := range []int64{4 * MiB, 6 * MiB, 2 * MiB} { // one 20 MiB segment, 8 MiB left at its end
		b, err := dev.Malloc(n, dev.DefaultStream())
		if err != nil {
			t.Fatal(err)
		}
		blocks = append(blocks, b)
	}
	dev.Free(blocks[1])
	if got := LargestFreeBlock(dev.Snapshot(), "large"); got != 8*MiB {
		t.Errorf("LargestFreeBlock = %d, want %d: the free 6 MiB block and the 8 MiB rest of the segment", got, 8*MiB)
	}
}
