package predict

import (
	"testing"

	"github.com/gpumem/course/gpukit/alloc"
	"github.com/gpumem/course/gpukit/device"
	"github.com/gpumem/course/gpukit/device/sim"
)

const MiB = 1 << 20

// measure serves requests on a fresh simulated classroom card, keeping every
// block, and reads what the real allocator holds.
func measure(t *testing.T, requests []int64) Prediction {
	t.Helper()
	p, err := device.LookupProfile("classroom")
	if err != nil {
		t.Fatal(err)
	}
	dev, err := device.New(sim.New(0, p))
	if err != nil {
		t.Fatal(err)
	}
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

func TestRoundSize(t *testing.T) {
	for _, c := range []struct{ n, want int64 }{{1, 512}, {512, 512}, {513, 1024}, {4_000_000, 4_000_256}} {
		if got := RoundSize(c.n); got != c.want {
			t.Errorf("RoundSize(%d) = %d, want %d", c.n, got, c.want)
		}
	}
}

func TestSegmentSize(t *testing.T) {
	for _, n := range []int64{100_000, 4_000_000, 25_000_001} {
		rounded := RoundSize(n)
		if got, want := SegmentSize(rounded), measure(t, []int64{n}).Reserved; got != want {
			t.Errorf("a request of %d B: SegmentSize(RoundSize(%d)) = SegmentSize(%d) = %d, the allocator reserved %d", n, n, rounded, got, want)
		}
	}
	if !IsSmall(RoundSize(1000)) || IsSmall(RoundSize(2*MiB)) {
		t.Error("1000 B come from the small pool, 2 MiB from the large pool")
	}
}

func TestPredictSequence(t *testing.T) {
	requests := []int64{4_000_000, 4_000_000, 1000, 30 * MiB, 700_000, 700_000}
	got, err := Predict(requests)
	if err != nil {
		t.Fatal(err)
	}
	if want := measure(t, requests); got != want {
		t.Errorf("Predict = %+v, the allocator holds %+v", got, want)
	}
}
