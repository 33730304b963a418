// Package tensortest holds what tests of code built on tensors share
// beyond a card (gpukit/device/simtest): a run of Go's collector at a time
// the test chooses.
package tensortest

import (
	"runtime/debug"
	"testing"

	"github.com/gpumem/course/gpukit/tensor"
)

// NoCollector frees the tensors nothing references any more (a full
// collection, tensor.CollectGarbage), then turns Go's garbage collector off
// until the test ends, with a 2 GiB soft memory limit as the backstop, so
// that what a test measures does not depend on when a collection runs: a
// tensor a test forgot is then still allocated when the test reads the
// allocator, every time.
func NoCollector(t testing.TB) {
	t.Helper()
	tensor.CollectGarbage()
	gc, limit := debug.SetGCPercent(-1), debug.SetMemoryLimit(2<<30)
	t.Cleanup(func() {
		debug.SetGCPercent(gc)
		debug.SetMemoryLimit(limit)
	})
}
