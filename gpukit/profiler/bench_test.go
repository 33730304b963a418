package profiler_test

import (
	"testing"
	"time"

	"github.com/gpumem/course/gpukit/profiler"
)

// The overhead of the profiler on a training step of medium-sized ops
// (an MLP 256 → 512 → 10 on a batch of 64: matmuls of 8 to 16 MFLOP):
//
//	go test -run '^$' -bench Step -benchtime 20x ./gpukit/profiler/
//
// best-ns/step is the fastest single step, the figure to compare on a
// shared machine (ns/op, the mean, moves with the neighbours' load).
//
// Off is the step with no profile running (each launch pays one atomic
// load at its seam, each allocation and free a shared lock); On runs the step inside a profile with shapes recorded.
// Compare Off with the same step before the seams existed (git stash) for
// the cost of the seams, and On with Off for the cost of profiling.

func benchStep(b *testing.B, on bool) {
	d := newDev(b)
	m, x, y := newMLP(d, 64, 256, 512, 10)
	m.step(x, y)
	best := time.Duration(1<<63 - 1)
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		if on {
			p, err := profiler.Start(profiler.Options{RecordShapes: true})
			if err != nil {
				b.Fatal(err)
			}
			m.step(x, y)
			p.Stop()
		} else {
			m.step(x, y)
		}
		best = min(best, time.Since(t0))
	}
	b.StopTimer()
	b.ReportMetric(float64(best.Nanoseconds()), "best-ns/step")
	x.Release()
	y.Release()
	for _, p := range m.params() {
		p.Release()
	}
}

func BenchmarkStepProfilerOff(b *testing.B) { benchStep(b, false) }
func BenchmarkStepProfilerOn(b *testing.B)  { benchStep(b, true) }
