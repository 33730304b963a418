package expandable

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gpumem/course/gpukit/alloc"
	"github.com/gpumem/course/gpukit/device"
	"github.com/gpumem/course/gpukit/device/simtest"
)

const MiB = 1 << 20

// newDevice opens a private simulated card of the given capacity whose
// allocator has expandable segments on.
func newDevice(t *testing.T, capacity int64) *device.Device {
	t.Helper()
	return newDeviceWith(t, capacity, "expandable_segments:True")
}

// newDeviceWith opens a private simulated card of the given capacity whose
// allocator has the settings conf (PYTORCH_CUDA_ALLOC_CONF's syntax; ""
// for the defaults).
func newDeviceWith(t *testing.T, capacity int64, conf string) *device.Device {
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
		t.Errorf("Predict = %s; the allocator holds %s", usageText(got), usageText(want))
	}
}

// usageText writes a Usage as the test's messages show it.
func usageText(u Usage) string {
	return fmt.Sprintf("%d bytes reserved, %d segments, %d maps", u.Reserved, u.Segments, u.Maps)
}

// comparePredict compares Predict's answer for its with the real
// allocator's.
func comparePredict(t *testing.T, what string, its [][]int64) {
	t.Helper()
	got, err := Predict(its)
	if err != nil {
		t.Errorf("%s: Predict: %v", what, err)
		return
	}
	if want := measure(t, its); got != want {
		t.Errorf("%s: Predict = %s; the allocator holds %s", what, usageText(got), usageText(want))
	}
}

// The public twin of the grader's TestPredictPoolsAndPages, on other
// requests: page boundaries of both pools, rounding, shrinking batches,
// one map per allocation; requests of 0 bytes or less are errors.
func TestPredictBoundaries(t *testing.T) {
	for _, c := range []struct {
		what string
		its  [][]int64
	}{
		{"512 bytes", [][]int64{{512}}},
		{"exactly two large pages", [][]int64{{40 * MiB}}},
		{"a large page and one byte more", [][]int64{{15 * MiB, 5*MiB + 1}}},
		{"just under 1 MiB is small, 1 MiB + 512 B is large", [][]int64{{MiB - 1, MiB + 512}, {MiB + 512}}},
		{"small pages", [][]int64{{900_000, 900_000, 900_000}, {2000}}},
		{"larger, then smaller batches", [][]int64{{60 * MiB}, {25 * MiB, 25 * MiB}, {5 * MiB}, {45 * MiB}}},
		{"rounding adds up: 4097 blocks of 500 B take 512 B each, two small pages", [][]int64{slices.Repeat([]int64{500}, 4097)}},
		{"a map per allocation, not per page", [][]int64{{70 * MiB}, {70 * MiB, 70 * MiB}}},
		{"an empty iteration", [][]int64{{}, {3 * MiB}}},
	} {
		comparePredict(t, c.what, c.its)
	}
	for _, bad := range [][][]int64{{{0}}, {{2 * MiB}, {-1}}, {{2 * MiB, -3 * MiB}}} {
		if _, err := Predict(bad); err == nil {
			t.Errorf("Predict(%v) accepted a request of 0 bytes or less, want an error", bad)
		}
	}
}

// The public twin of the grader's TestPredictRandom, with another seed and
// fewer runs: random iterations of small, medium and large requests
// against the real allocator.
func TestPredictSeeded(t *testing.T) {
	r := rand.New(rand.NewPCG(71, 9))
	for run := range 8 {
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
		comparePredict(t, fmt.Sprintf("run %d, iterations %v", run, its), its)
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

// The public twin of the grader's TestLargestFreeStates, on other blocks:
// an empty allocator has no free block, a block that another stream still
// uses is not free, and every segment counts.
func TestLargestFreeOtherStates(t *testing.T) {
	dev := newDeviceWith(t, 512*MiB, "")
	if got := LargestFree(dev.Snapshot()); got != 0 {
		t.Errorf("LargestFree of an empty allocator = %d, want 0", got)
	}
	s := dev.NewStream()
	x := mustMalloc(t, dev, 40*MiB) // a 40 MiB segment of its own
	dev.RecordStream(x, s)
	dev.Launch(s, device.Kernel{Name: "busy", Flops: 1 << 50}) // keeps stream s busy: x stays pending
	dev.Free(x)
	mustMalloc(t, dev, 8*MiB)   // a 20 MiB segment: 12 MiB free
	mustMalloc(t, dev, 3*MiB)   // 9 MiB free
	mustMalloc(t, dev, 100_000) // a 2 MiB segment of the small pool
	pending := false
	snap := dev.Snapshot()
	for _, seg := range snap.Segments {
		for _, b := range seg.Blocks {
			pending = pending || b.State == alloc.StateActivePendingFree
		}
	}
	if !pending {
		t.Fatal("the test's setup failed: no block waits for stream s")
	}
	if got := LargestFree(snap); got != 9*MiB {
		t.Errorf("LargestFree = %d, want %d (the rest of the 20 MiB segment): the freed 40 MiB block still waits for another stream", got, 9*MiB)
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

// pinAndCheck runs Pin on a fresh device of the given capacity and checks
// the blocks it keeps.
func pinAndCheck(t *testing.T, capacity, request int64) {
	t.Helper()
	dev := newDevice(t, capacity)
	kept, err := Pin(dev, request)
	if err != nil {
		t.Errorf("capacity %d MiB, request %d bytes: Pin: %v", capacity/MiB, request, err)
		return
	}
	var keptBytes int64
	for _, b := range kept {
		if b == nil || b.Freed() {
			t.Errorf("capacity %d MiB, request %d bytes: Pin returned a freed or nil block", capacity/MiB, request)
			return
		}
		keptBytes += b.Size()
	}
	if got := dev.MemoryAllocated(); got != keptBytes {
		t.Errorf("capacity %d MiB, request %d bytes: %d bytes allocated but the blocks Pin returned hold %d: return every block you keep", capacity/MiB, request, got, keptBytes)
	}
	if free := capacity - dev.MemoryAllocated(); free < capacity/4 {
		t.Errorf("capacity %d MiB, request %d bytes: only %d bytes are not allocated, want at least a quarter of the device", capacity/MiB, request, free)
	}
	if _, err := dev.Malloc(request, dev.DefaultStream()); err == nil {
		t.Errorf("capacity %d MiB, request %d bytes: the request after Pin was served, want an out-of-memory error", capacity/MiB, request)
	} else if !errors.As(err, new(*alloc.OutOfMemoryError)) {
		t.Errorf("capacity %d MiB, request %d bytes: the request after Pin: %v, want an out-of-memory error", capacity/MiB, request, err)
	}
	for _, b := range kept {
		dev.Free(b)
	}
	if _, err := dev.Malloc(request, dev.DefaultStream()); err != nil {
		t.Errorf("capacity %d MiB, request %d bytes: the request after freeing the kept blocks: %v", capacity/MiB, request, err)
	}
}

// The public twin of the grader's TestPinRequests, on other requests and
// devices: requests from 2 MiB to a quarter of the device; requests and
// devices Pin must refuse, without allocating.
func TestPinOtherRequests(t *testing.T) {
	for _, c := range []struct{ capacity, request int64 }{
		{256 * MiB, 4 * MiB}, {256 * MiB, 23 * MiB}, {256 * MiB, 41 * MiB},
		{512 * MiB, 2 * MiB}, {512 * MiB, 128 * MiB},
		{256 * MiB, 4 * (MiB + 512)}, // a whole multiple of a 1 MiB + 512 B block
	} {
		pinAndCheck(t, c.capacity, c.request)
	}
	for _, c := range []struct {
		what    string
		conf    string
		request int64
		busy    bool
	}{
		{"a request of 1 MiB", "expandable_segments:True", MiB, false},
		{"a request above a quarter of the device", "expandable_segments:True", 128*MiB + 512, false},
		{"a device without expandable segments", "expandable_segments:False", 16 * MiB, false},
		{"a device with memory allocated", "expandable_segments:True", 16 * MiB, true},
	} {
		dev := newDeviceWith(t, 512*MiB, c.conf)
		var before int64
		if c.busy {
			mustMalloc(t, dev, 3*MiB)
			before = dev.MemoryAllocated()
		}
		if _, err := Pin(dev, c.request); err == nil {
			t.Errorf("Pin accepted %s, want an error", c.what)
		}
		if got := dev.MemoryAllocated(); got != before {
			t.Errorf("Pin refused %s but left %d bytes allocated, want %d: check before allocating", c.what, got, before)
		}
	}
}
