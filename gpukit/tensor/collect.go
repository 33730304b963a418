package tensor

import (
	"runtime"
	"runtime/metrics"
	"time"
)

// The collector fallback: every tensor handle made by wrap carries a
// runtime.AddCleanup whose argument is its tensorRef (never the tensor).
// When the collector finds a tensor unreachable without Release having
// been called, the cleanup drops the tensor's storage reference and node
// reference, exactly as Release would have, so reference counts never go
// stale. Release stops the cleanup (runtime.Cleanup.Stop); the tensorRef's
// done flag makes sure that only one of the two ever counts.

// collectLimit bounds how long CollectGarbage waits.
const collectLimit = time.Second

// CollectGarbage runs the garbage collector and waits until the collector
// fallbacks of the tensors that became unreachable have run, so that
// their memory is back in the allocator when it returns. It returns how
// many tensor references the collector released (tensor handles dropped
// without Release), 0 if there were none.
//
// Go gives no exact "cleanups done" signal: runtime.GC returns once the
// unreachable objects are found and their cleanups queued, and the
// cleanups run afterwards on the runtime's cleanup goroutines. CollectGarbage
// therefore reads the runtime's approximate, process-wide counters
// /gc/cleanups/queued:cleanups and /gc/cleanups/executed:cleanups
// (runtime/metrics) and waits until every queued cleanup has been
// executed, polling every 100 µs. Releasing a node can make more tensors
// unreachable (the parameters its edges held, for example), which only
// the next collection finds; so it repeats (a new runtime.GC and wait)
// while the last round released something. Waiting is bounded: after
// about a second in all it returns what it counted so far, which happens
// only when some cleanup in the process is slow or blocked.
//
// It is a tool for lessons, tests and leak hunting: a full collection of
// the Go heap on every call, never a way to manage memory in a training
// loop (use Release).
func CollectGarbage() int {
	deadline := time.Now().Add(collectLimit)
	total := int64(0)
	for round := 0; round < 8; round++ {
		before := collectedRefs.Load()
		runtime.GC()
		waitCleanups(deadline)
		n := collectedRefs.Load() - before
		total += n
		if n == 0 || time.Now().After(deadline) {
			break
		}
	}
	return int(total)
}

// waitCleanups waits until the runtime's cleanup queue is empty (every
// queued cleanup executed) or until deadline.
func waitCleanups(deadline time.Time) {
	samples := []metrics.Sample{
		{Name: "/gc/cleanups/executed:cleanups"},
		{Name: "/gc/cleanups/queued:cleanups"},
	}
	for {
		metrics.Read(samples)
		if samples[0].Value.Kind() != metrics.KindUint64 {
			// No such metrics (an older runtime): fall back to a short wait.
			time.Sleep(10 * time.Millisecond)
			return
		}
		if samples[0].Value.Uint64() >= samples[1].Value.Uint64() || time.Now().After(deadline) {
			return
		}
		time.Sleep(100 * time.Microsecond)
	}
}
