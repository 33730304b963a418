package strided

import (
	"math"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"github.com/gpumem/course/gpukit/alloc"
	"github.com/gpumem/course/gpukit/device"
	"github.com/gpumem/course/gpukit/device/simtest"
	"github.com/gpumem/course/gpukit/tensor"
)

// newDevice opens a private simulated classroom card.
func newDevice(t *testing.T) *device.Device {
	t.Helper()
	return simtest.Card(t)
}

// randomBytes is n bytes from a fixed seed.
func randomBytes(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 1))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// reference is the index model: every element found by its full index.
func reference(src []byte, itemsize int, shape, strides []int, offset int) []byte {
	numel := 1
	for _, n := range shape {
		numel *= n
	}
	out := make([]byte, 0, numel*itemsize)
	if numel == 0 {
		return out
	}
	idx := make([]int, len(shape))
	for {
		at := offset
		for k := range idx {
			at += idx[k] * strides[k]
		}
		out = append(out, src[at*itemsize:(at+1)*itemsize]...)
		k := len(idx) - 1
		for ; k >= 0; k-- {
			idx[k]++
			if idx[k] < shape[k] {
				break
			}
			idx[k] = 0
		}
		if k < 0 {
			return out
		}
	}
}

func block(n int64) int64 { return alloc.Config{}.RoundSize(n) }

// kernelLog records, as a tensor.Observer, the device kernels that ops
// launch while it is installed.
type kernelLog struct{ launches []tensor.Launch }

func (l *kernelLog) Allocated(*tensor.Storage) {}
func (l *kernelLog) Freed(*tensor.Storage)     {}
func (l *kernelLog) Launched(k tensor.Launch)  { l.launches = append(l.launches, k) }

// reading is the names of the logged kernels that read t's storage.
func (l *kernelLog) reading(t *tensor.Tensor) []string {
	var names []string
	for _, k := range l.launches {
		for _, in := range k.Inputs {
			if in != nil && in.SameStorage(t) {
				names = append(names, k.Name)
				break
			}
		}
	}
	return names
}

// fastest is the shortest of n timed runs of f, each after a collection:
// memory f took from the heap in its last run is free again, so that a
// run that allocates reuses pages the process has touched, not fresh ones
// (a first touch of a page cost 3 to 30 µs on the course's virtual
// machines: a 1 MiB buffer made per call, with the collector off, made a
// copy 12 to 18× slower than Go's on a quiet machine and under 10× on a
// loaded one, either side of TestFastPaths' 10×).
func fastest(n int, f func()) time.Duration {
	best := time.Duration(math.MaxInt64)
	for range n {
		runtime.GC()
		start := time.Now()
		f()
		best = min(best, time.Since(start))
	}
	return best
}
