package expandable

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/gpumem/course/gpukit/alloc"
	"github.com/gpumem/course/gpukit/device"
	"github.com/gpumem/course/gpukit/tensor/tensortest"
)

func checkPredict(t *testing.T, what string, its [][]int64) {
	t.Helper()
	got, err := Predict(its)
	if err != nil {
		t.Errorf("%s: Predict: %v", what, err)
		return
	}
	if want := measure(t, its); got != want {
		t.Errorf("%s: Predict = %+v, the allocator holds %+v", what, got, want)
	}
}

// TestPredictJitter: the batch-size jitter of the lesson.
func TestPredictJitter(t *testing.T) {
	tensortest.NoCollector(t)
	var its [][]int64
	for n := int64(4); n <= 9; n++ {
		its = append(its, []int64{n * MiB / 2, n * 2 * MiB, n * MiB / 2, n * 2 * MiB, n * MiB / 2, n * 2 * MiB})
	}
	checkPredict(t, "batches of 4 to 9", its)
}

// TestPredictPoolsAndPages: page boundaries of both pools, rounding,
// shrinking batches, and bad requests.
func TestPredictPoolsAndPages(t *testing.T) {
	tensortest.NoCollector(t)
	for _, c := range []struct {
		what string
		its  [][]int64
	}{
		{"one byte", [][]int64{{1}}},
		{"exactly one large page", [][]int64{{20 * MiB}}},
		{"one large page and 512 bytes", [][]int64{{20 * MiB, 512 + 1}, {20*MiB + 1}}},
		{"1 MiB is small, 1 MiB + 1 is large", [][]int64{{MiB, MiB + 1, MiB, MiB + 1}}},
		{"small pages", [][]int64{{700_000, 700_000, 700_000, 1000}, {300_000}}},
		{"larger, then smaller batches", [][]int64{{50 * MiB, 30 * MiB}, {10 * MiB}, {79 * MiB}, {81 * MiB}}},
		{"rounding adds up: 2049 blocks of 1000 B take 1024 B each, two small pages", [][]int64{thousands(2049)}},
		{"a map per allocation, not per page", [][]int64{{100 * MiB}, {100 * MiB, 100 * MiB}}},
		{"no iterations", nil},
	} {
		checkPredict(t, c.what, c.its)
	}
	for _, bad := range [][][]int64{{{MiB, 0}}, {{-5}}, {{MiB}, {MiB, -MiB}}} {
		if _, err := Predict(bad); err == nil {
			t.Errorf("Predict(%v) accepted a request of 0 bytes or less", bad)
		}
	}
}

// thousands returns n requests of 1000 bytes.
func thousands(n int) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = 1000
	}
	return out
}

// TestPredictRandom: random runs of iterations against the allocator.
func TestPredictRandom(t *testing.T) {
	tensortest.NoCollector(t)
	r := rand.New(rand.NewPCG(23, 5))
	for run := range 30 {
		var its [][]int64
		for range 1 + r.IntN(6) {
			var it []int64
			for range 1 + r.IntN(8) {
				switch r.IntN(3) {
				case 0:
					it = append(it, 1+r.Int64N(MiB))
				case 1:
					it = append(it, MiB+1+r.Int64N(9*MiB))
				default:
					it = append(it, 10*MiB+r.Int64N(60*MiB))
				}
			}
			its = append(its, it)
		}
		checkPredict(t, fmt.Sprintf("run %d %v", run, its), its)
	}
}

func TestLargestFree(t *testing.T) {
	tensortest.NoCollector(t)
	dev := newDevice(t, 256*MiB)
	a := mustMalloc(t, dev, 6*MiB, 0)
	mustMalloc(t, dev, 4*MiB, 0)
	mustMalloc(t, dev, 3*MiB, 0)
	dev.Free(a)
	if got := LargestFree(dev.Snapshot()); got != 7*MiB {
		t.Errorf("LargestFree = %d, want %d: the free rest of the page", got, 7*MiB)
	}
}

// TestLargestFreeStates: blocks still used by another stream are not free,
// every segment counts, and an empty cache has no free block.
func TestLargestFreeStates(t *testing.T) {
	tensortest.NoCollector(t)
	dev := newDeviceConf(t, 256*MiB, "")
	if got := LargestFree(dev.Snapshot()); got != 0 {
		t.Errorf("LargestFree of an empty allocator = %d", got)
	}
	s := dev.NewStream()
	x := mustMalloc(t, dev, 30*MiB, 0) // a 30 MiB segment of its own
	dev.RecordStream(x, s)
	dev.Launch(s, device.Kernel{Name: "busy", Flops: 1 << 50}) // keeps stream s busy: x stays pending
	dev.Free(x)
	mustMalloc(t, dev, 12*MiB, 0)
	y := mustMalloc(t, dev, 2*MiB, 0) // a 20 MiB segment: 18 MiB free
	mustMalloc(t, dev, 5*MiB, 0)      // 13 MiB free
	_ = y
	snap := dev.Snapshot()
	pending := false
	for _, seg := range snap.Segments {
		for _, b := range seg.Blocks {
			pending = pending || b.State == alloc.StateActivePendingFree
		}
	}
	if !pending {
		t.Fatal("test setup: no pending block")
	}
	if got := LargestFree(snap); got != 13*MiB {
		t.Errorf("LargestFree = %d, want %d: the 30 MiB block waits for another stream", got, 13*MiB)
	}
}

func checkPinned(t *testing.T, capacity, request int64) {
	t.Helper()
	dev := newDevice(t, capacity)
	kept, err := Pin(dev, request)
	if err != nil {
		t.Errorf("capacity %d, request %d: Pin: %v", capacity, request, err)
		return
	}
	var keptBytes int64
	for _, b := range kept {
		if b == nil || b.Freed() {
			t.Errorf("capacity %d, request %d: Pin returned a freed or nil block", capacity, request)
			return
		}
		keptBytes += b.Size()
	}
	if got := dev.MemoryAllocated(); got != keptBytes {
		t.Errorf("capacity %d, request %d: %d bytes allocated but the kept blocks hold %d", capacity, request, got, keptBytes)
	}
	if free := capacity - dev.MemoryAllocated(); free < capacity/4 {
		t.Errorf("capacity %d, request %d: only %d bytes are not allocated, want a quarter of the device", capacity, request, free)
	}
	if _, err := dev.Malloc(request, dev.DefaultStream()); !errors.As(err, new(*alloc.OutOfMemoryError)) {
		t.Errorf("capacity %d, request %d: the request after Pin: %v, want an out-of-memory error", capacity, request, err)
	}
	for _, seg := range dev.Snapshot().Segments {
		if !seg.IsExpandable {
			t.Errorf("capacity %d, request %d: a segment that is not expandable", capacity, request)
		}
	}
	for _, b := range kept {
		dev.Free(b)
	}
	if _, err := dev.Malloc(request, dev.DefaultStream()); err != nil {
		t.Errorf("capacity %d, request %d: the request after freeing the kept blocks: %v", capacity, request, err)
	}
}

func TestPin(t *testing.T) {
	tensortest.NoCollector(t)
	checkPinned(t, 256*MiB, 30*MiB)
}

// TestPinRequests: small and large requests on two devices, and requests
// and devices Pin must refuse without allocating.
func TestPinRequests(t *testing.T) {
	tensortest.NoCollector(t)
	for _, c := range []struct{ capacity, request int64 }{
		{256 * MiB, 2 * MiB}, {256 * MiB, 7 * MiB}, {256 * MiB, 19 * MiB}, {256 * MiB, 64 * MiB},
		{1 << 30, 3 * MiB}, {1 << 30, 256 * MiB},
		// whole multiples of a 1 MiB + 512 B block: a free run of exactly
		// the request's size serves it
		{256 * MiB, 3 * (MiB + 512)}, {256 * MiB, 5 * (MiB + 512)},
	} {
		checkPinned(t, c.capacity, c.request)
	}
	for _, c := range []struct {
		what    string
		conf    string
		request int64
		busy    bool
	}{
		{"a request below 2 MiB", "expandable_segments:True", 2*MiB - 1, false},
		{"a request above a quarter of the device", "expandable_segments:True", 64*MiB + 1, false},
		{"a device without expandable segments", "", 8 * MiB, false},
		{"a device with memory allocated", "expandable_segments:True", 8 * MiB, true},
	} {
		dev := newDeviceConf(t, 256*MiB, c.conf)
		var before int64
		if c.busy {
			mustMalloc(t, dev, MiB, 0)
			before = dev.MemoryAllocated()
		}
		if _, err := Pin(dev, c.request); err == nil {
			t.Errorf("Pin accepted %s", c.what)
		}
		if dev.MemoryAllocated() != before {
			t.Errorf("Pin refused %s but left memory allocated", c.what)
		}
	}
}
