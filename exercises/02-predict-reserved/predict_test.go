package predict

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/gpumem/course/gpukit/alloc"
	"github.com/gpumem/course/gpukit/device/simtest"
)

const MiB = 1 << 20

// measure serves requests on a fresh simulated classroom card, keeping every
// block, and reads what the real allocator holds.
func measure(t *testing.T, requests []int64) Prediction {
	t.Helper()
	dev := simtest.Card(t, simtest.Meta())
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

// The grader's TestRoundSize checks other sizes near the boundaries and
// other random sizes against the allocator's own rounding (PyTorch's
// default: up to a multiple of 512 B).
func TestRoundSize(t *testing.T) {
	var cfg alloc.Config
	sizes := []int64{
		3, 100, 510, 514, 1000, 1536, 2047, 2049,
		MiB - 511, MiB - 2, MiB + 2, MiB + 1000,
		2*MiB - 2, 2*MiB + 700, 10*MiB - 300, 10*MiB + 512, 20*MiB - 7, 33*MiB + 3,
	}
	r := rand.New(rand.NewPCG(29, 3))
	for range 60 {
		sizes = append(sizes, 1+r.Int64N(48*MiB))
	}
	for _, n := range sizes {
		if got, want := RoundSize(n), cfg.RoundSize(n); got != want {
			t.Errorf("RoundSize(%d) = %d, the allocator rounds it to %d", n, got, want)
		}
	}
}

// The grader's TestSegmentSize measures other requests: one of each pool
// and one with a segment of its own.
func TestSegmentSize(t *testing.T) {
	for _, n := range []int64{300_000, 6_000_000, 31_000_001} {
		rounded := RoundSize(n)
		if got, want := SegmentSize(rounded), measure(t, []int64{n}).Reserved; got != want {
			t.Errorf("a request of %d B: SegmentSize(RoundSize(%d)) = SegmentSize(%d) = %d, the allocator reserved %d", n, n, rounded, got, want)
		}
	}
	if !IsSmall(RoundSize(1500)) || IsSmall(RoundSize(3*MiB)) {
		t.Error("1500 B come from the small pool, 3 MiB from the large pool")
	}
}

// The grader's TestPredictSequence serves another fixed sequence.
func TestPredictSequence(t *testing.T) {
	requests := []int64{3_000_000, 5_000_000, 2000, 25 * MiB, 900_000, 300_000, 3_000_000}
	got, err := Predict(requests)
	if err != nil {
		t.Fatal(err)
	}
	if want := measure(t, requests); got != want {
		t.Errorf("Predict(%v) = %s; the allocator holds %s", requests, predictionText(got), predictionText(want))
	}
}

// predictionText writes a Prediction as the test's messages show it.
func predictionText(p Prediction) string {
	segments := "segments"
	if p.Segments == 1 {
		segments = "segment"
	}
	return fmt.Sprintf("%d bytes allocated, %d reserved in %d %s", p.Allocated, p.Reserved, p.Segments, segments)
}

// The public twin of the grader's TestPoolBoundaries, on other sizes near
// the same boundaries (512 B, 1 MiB, 2 MiB, 10 MiB, 20 MiB): the pool and
// the segment are the allocator's, measured on a fresh device.
func TestPoolsAtBoundaries(t *testing.T) {
	for _, n := range []int64{
		3, 500, 510, 1000, 1536,
		MiB - 513, MiB - 2, MiB + 2, MiB + 1000,
		2*MiB - 512, 2*MiB + 512,
		10*MiB - 1000, 10*MiB - 300, 10*MiB + 512, 11*MiB + 1,
		20*MiB - 1, 20*MiB + 512, 30*MiB + 5,
	} {
		dev := simtest.Card(t, simtest.Meta())
		b, err := dev.Malloc(n, dev.DefaultStream())
		if err != nil {
			t.Fatal(err)
		}
		rounded := RoundSize(n)
		if got, want := SegmentSize(rounded), dev.MemoryReserved(); got != want {
			t.Errorf("a request of %d B: SegmentSize(RoundSize(%d)) = SegmentSize(%d) = %d, the allocator reserved %d", n, n, rounded, got, want)
		}
		small := dev.Stats()["segment.small_pool.current"] == 1
		if got := IsSmall(rounded); got != small {
			pool := "large"
			if small {
				pool = "small"
			}
			t.Errorf("a request of %d B: IsSmall(%d) = %v, but the allocator used the %s pool", n, rounded, got, pool)
		}
		dev.Free(b)
	}
}

// comparePredict compares Predict's answer for requests with the real
// allocator's.
func comparePredict(t *testing.T, what string, requests []int64) {
	t.Helper()
	got, err := Predict(requests)
	if err != nil {
		t.Errorf("%s %v: %v", what, requests, err)
		return
	}
	if want := measure(t, requests); got != want {
		t.Errorf("%s %v: Predict = %s; the allocator holds %s", what, requests, predictionText(got), predictionText(want))
	}
}

// The public twin of the grader's TestPredictSplitRules, on other
// sequences: a large-pool rest of exactly 1 MiB is not split, one just
// over is; a small-pool rest of 512 B is split; blocks of 10 MiB and more
// get segments of their own, rounded to 2 MiB; best fit takes the
// smallest free block that fits.
func TestPredictSplitCases(t *testing.T) {
	for _, c := range []struct {
		name     string
		requests []int64
	}{
		{"a large rest of exactly 1 MiB", []int64{4 * MiB, 15 * MiB, 1}},
		{"a large rest just over 1 MiB", []int64{4 * MiB, 15*MiB - 512, MiB + 1}},
		{"a small rest of 512 B", []int64{MiB, MiB - 512, 300}},
		{"an own segment, rest exactly 1 MiB", []int64{13 * MiB, 2 * MiB}},
		{"an own segment, rest over 1 MiB", []int64{12*MiB + 512, 1500 * 1024}},
		{"best fit", []int64{5 * MiB, 5 * MiB, 5 * MiB, 8 * MiB, 8 * MiB, 3 * MiB, 5 * MiB}},
		{"a large rest that fits exactly", []int64{7 * MiB, 13 * MiB}},
		{"a small rest that fits exactly", []int64{1536 * 1024, 512 * 1024}},
		{"the small pool fills segments", []int64{800_000, 800_000, 800_000, 400_000, 100_000, MiB}},
		{"one of each", []int64{700, 600_000, 3 * MiB, 10*MiB + 5, 48 * MiB}},
	} {
		comparePredict(t, c.name, c.requests)
	}
}

// The public twin of the grader's TestPredictRandomSequences, with another
// seed and fewer sequences: random mixes of small, large and own-segment
// requests against the real allocator; no request, and bad requests.
func TestPredictSeededSequences(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 77))
	for seq := range 8 {
		var requests []int64
		for range 1 + r.IntN(40) {
			var n int64
			switch r.IntN(4) {
			case 0:
				n = 1 + r.Int64N(MiB) // small pool
			case 1:
				n = MiB + 1 + r.Int64N(9*MiB) // large pool, shared 20 MiB segments
			case 2:
				n = 10*MiB + r.Int64N(30*MiB) // own segments
			default:
				n = 1 + r.Int64N(4096)
			}
			requests = append(requests, n)
		}
		comparePredict(t, fmt.Sprintf("sequence %d", seq), requests)
	}
	if got, err := Predict([]int64{}); err != nil || got != (Prediction{}) {
		t.Errorf("no requests: Predict = %s, error %v; want nothing allocated or reserved and no error", predictionText(got), err)
	}
	for _, bad := range [][]int64{{-3}, {MiB, 0}} {
		if _, err := Predict(bad); err == nil {
			t.Errorf("Predict(%v): no error, want one for a request of 0 bytes or less", bad)
		}
	}
}
