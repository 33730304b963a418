package predict

import (
	"math/rand/v2"
	"testing"

	"github.com/gpumem/course/gpukit/alloc"
	"github.com/gpumem/course/gpukit/tensor/tensortest"
)

// boundaries are the sizes where a rule changes, and their neighbours. A
// function, not a package-level variable: the student's code shares the
// package and could change a variable before the tests run.
func boundaries() []int64 {
	return []int64{
		1, 2, 511, 512, 513, 1023, 1024, 1025,
		MiB - 512, MiB - 1, MiB, MiB + 1, MiB + 512, MiB + 513,
		2*MiB - 1, 2 * MiB, 2*MiB + 1,
		10*MiB - 513, 10*MiB - 512, 10*MiB - 1, 10 * MiB, 10*MiB + 1,
		12 * MiB, 12*MiB + 1, 20 * MiB, 20*MiB + 1, 40*MiB + 3,
	}
}

func TestRoundSize(t *testing.T) {
	tensortest.NoCollector(t)
	var cfg alloc.Config // the allocator's own rounding, PyTorch's default
	r := rand.New(rand.NewPCG(11, 0))
	sizes := boundaries()
	for range 200 {
		sizes = append(sizes, 1+r.Int64N(64*MiB))
	}
	for _, n := range sizes {
		if got, want := RoundSize(n), cfg.RoundSize(n); got != want {
			t.Errorf("RoundSize(%d) = %d, the allocator rounds to %d", n, got, want)
		}
	}
}

func TestSegmentSize(t *testing.T) {
	tensortest.NoCollector(t)
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

// At every boundary, the pool and the segment are the allocator's, measured
// on a fresh device by the segment it takes.
func TestPoolBoundaries(t *testing.T) {
	tensortest.NoCollector(t)
	for _, n := range boundaries() {
		dev := newDevice(t)
		b, err := dev.Malloc(n, dev.DefaultStream())
		if err != nil {
			t.Fatal(err)
		}
		rounded := RoundSize(n)
		if got, want := SegmentSize(rounded), dev.MemoryReserved(); got != want {
			t.Errorf("request %d: SegmentSize(%d) = %d, the allocator reserved %d", n, rounded, got, want)
		}
		if got, want := IsSmall(rounded), dev.Stats()["segment.small_pool.current"] == 1; got != want {
			t.Errorf("request %d: IsSmall(%d) = %v, but the allocator used the %s pool", n, rounded, got, map[bool]string{true: "small", false: "large"}[want])
		}
		dev.Free(b)
		dev.EmptyCache() // give the simulated memory back at once
	}
}

func TestPredictSequence(t *testing.T) {
	tensortest.NoCollector(t)
	requests := []int64{4_000_000, 4_000_000, 1000, 30 * MiB, 700_000, 700_000}
	got, err := Predict(requests)
	if err != nil {
		t.Fatal(err)
	}
	if want := measure(t, requests); got != want {
		t.Errorf("Predict = %+v, the allocator holds %+v", got, want)
	}
}

// Sequences that exercise the split rules: a large-pool rest of exactly
// 1 MiB is not split (the whole block is allocated), a small-pool rest of
// 512 B is; blocks of 10 MiB and more get segments of their own, rounded
// to 2 MiB, whose rest may or may not be split; best fit picks the smallest
// free block.
func TestPredictSplitRules(t *testing.T) {
	tensortest.NoCollector(t)
	for _, c := range []struct {
		name     string
		requests []int64
	}{
		{"large rest of exactly 1 MiB", []int64{19 * MiB, 1}},
		{"large rest just over 1 MiB", []int64{19*MiB - 512, 2 * MiB}},
		{"small rest of 512 B", []int64{2*MiB - 512, 512, 512}},
		{"own segment, rest 1 MiB", []int64{11 * MiB, 3 * MiB}},
		{"own segment, rest below 2 MiB", []int64{10*MiB + 1, 1536 * 1024}},
		{"best fit", []int64{15 * MiB, 17 * MiB, 3 * MiB, 3 * MiB, 2 * MiB}},
		{"a large rest that fits exactly", []int64{5 * MiB, 15 * MiB}},
		{"a small rest that fits exactly", []int64{MiB, MiB}},
		{"small pool fills segments", []int64{900_000, 900_000, 900_000, 300_000, 200_000, 1 << 20}},
		{"one of each", []int64{1, MiB, MiB + 1, 10 * MiB, 64 * MiB}},
	} {
		got, err := Predict(c.requests)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if want := measure(t, c.requests); got != want {
			t.Errorf("%s %v: Predict = %+v, the allocator holds %+v", c.name, c.requests, got, want)
		}
	}
}

// Random sequences of mixed sizes (a fixed seed), checked against the real
// allocator; no request and bad requests.
func TestPredictRandomSequences(t *testing.T) {
	tensortest.NoCollector(t)
	r := rand.New(rand.NewPCG(2026, 9))
	for seq := range 25 {
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
		got, err := Predict(requests)
		if err != nil {
			t.Fatalf("sequence %d: %v", seq, err)
		}
		if want := measure(t, requests); got != want {
			t.Errorf("sequence %d %v: Predict = %+v, the allocator holds %+v", seq, requests, got, want)
		}
	}
	if got, err := Predict(nil); err != nil || got != (Prediction{}) {
		t.Errorf("Predict(nil) = %+v, %v; want nothing allocated or reserved, no error", got, err)
	}
	for _, bad := range [][]int64{{0}, {512, -1}} {
		if _, err := Predict(bad); err == nil {
			t.Errorf("Predict(%v): got no error", bad)
		}
	}
}
