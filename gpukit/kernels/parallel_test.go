package kernels

import (
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpumem/course/gpukit/internal/racetest"
)

// TestParallelPiecesCoversEachIndexOnce runs many parallelPieces calls at
// once, some nested in others' pieces, and checks that every call runs each
// of its indices exactly once, in pieces aligned as asked, whoever helps.
func TestParallelPiecesCoversEachIndexOnce(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	defer spinNanos.Store(spinNanos.Swap(int64(defaultSpin)))
	callers, calls := 6, 60
	if racetest.Enabled {
		calls = 15
	}
	var wg sync.WaitGroup
	for c := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(c), 1))
			for range calls {
				n, w, pieces, align := 1+rng.IntN(5000), 1+rng.IntN(6), 1+rng.IntN(40), 1+rng.IntN(8)
				seen := make([]atomic.Int32, n)
				nested := rng.IntN(4) == 0
				parallelPieces(n, w, pieces, align, func(lo, hi int) {
					if lo%align != 0 || (hi%align != 0 && hi != n) {
						t.Errorf("piece [%d,%d) of %d is not aligned to %d", lo, hi, n, align)
					}
					for i := lo; i < hi; i++ {
						seen[i].Add(1)
					}
					if nested {
						var sum atomic.Int64
						parallelFor(100, 3, 1, func(lo, hi int) { sum.Add(int64(hi - lo)) })
						if sum.Load() != 100 {
							t.Errorf("nested call covered %d of 100", sum.Load())
						}
					}
				})
				for i := range seen {
					if got := seen[i].Load(); got != 1 {
						t.Errorf("n=%d w=%d pieces=%d align=%d: index %d ran %d times", n, w, pieces, align, i, got)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
}

// TestHelpersGoToSleep checks that the helpers stop looking for work soon
// after the last call, so an idle program burns no CPU and keeps no
// goroutines.
func TestHelpersGoToSleep(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(max(2, runtime.NumCPU()))) // helpers spin
	defer spinNanos.Store(spinNanos.Swap(int64(defaultSpin)))
	before := runtime.NumGoroutine()
	for range 20 {
		parallelFor(1000, 4, 1, func(lo, hi int) {})
	}
	asleep := func() bool { return spinning.Load() == 0 && runtime.NumGoroutine() <= before }
	// Helpers spin for defaultSpin (5 ms) before they sleep; the
	// deadline is generous for a loaded machine or an emulated arm64 (the
	// loop ends as soon as they sleep).
	for deadline := time.Now().Add(10 * time.Second); !asleep() && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	require.True(t, asleep(), "helpers awake: %d; goroutines: %d, %d before", spinning.Load(), runtime.NumGoroutine(), before)
	assert.Nil(t, offered.Load(), "a finished call is still offered to helpers")
}

func TestSpinSetting(t *testing.T) {
	for _, tt := range []struct {
		value string
		want  time.Duration
		ok    bool
	}{
		{"", defaultSpin, true},
		{"0", 0, true},
		{"250us", 250 * time.Microsecond, true},
		{"1s", time.Second, true},
		{"5", defaultSpin, false},       // no unit
		{"-1ms", defaultSpin, false},    // negative
		{"2s", defaultSpin, false},      // above the cap
		{"fast", defaultSpin, false},    // not a duration
		{"1e400ms", defaultSpin, false}, // overflows
	} {
		got, err := spinSetting(tt.value)
		assert.Equal(t, tt.want, got, "GPUKIT_SPIN=%q", tt.value)
		if tt.ok {
			assert.NoError(t, err, "GPUKIT_SPIN=%q", tt.value)
		} else {
			assert.ErrorContains(t, err, "kernels: GPUKIT_SPIN=", "GPUKIT_SPIN=%q", tt.value)
		}
	}
}

// BenchmarkParallelForBackToBack times the calls of a training step: a
// parallel kernel of about 100 µs, then serial work of about 100 µs,
// again and again. Helpers that stay awake between the calls take each
// one's work without being woken.
func BenchmarkParallelForBackToBack(b *testing.B) {
	x := make([]float32, 1<<16)
	kernel := func(lo, hi int) {
		for i := lo; i < hi; i++ {
			x[i] = x[i]*0.5 + 1
		}
	}
	for b.Loop() {
		for range 8 {
			parallelFor(len(x), runtime.GOMAXPROCS(0), 16, kernel)
		}
		kernel(0, len(x))
	}
}

// TestParallelForArguments: every index once, whatever minPer; no call for
// none; a negative count or a nil function is the package's panic.
func TestParallelForArguments(t *testing.T) {
	for _, minPer := range []int{-1, 0, 1, 7, 1 << 20} {
		seen := make([]atomic.Int32, 1000)
		ParallelFor(len(seen), minPer, func(lo, hi int) {
			for i := lo; i < hi; i++ {
				seen[i].Add(1)
			}
		})
		for i := range seen {
			require.EqualValues(t, 1, seen[i].Load(), "minPer %d, index %d", minPer, i)
		}
	}
	ParallelFor(0, 1, func(lo, hi int) { t.Errorf("called with [%d, %d) for no indices", lo, hi) })
	assert.PanicsWithValue(t, "kernels: ParallelFor: -1 indices, fn nil: false (want n >= 0 and a function)",
		func() { ParallelFor(-1, 1, func(int, int) {}) })
	assert.PanicsWithValue(t, "kernels: ParallelFor: 5 indices, fn nil: true (want n >= 0 and a function)",
		func() { ParallelFor(5, 1, nil) })
}
