package kernels

import (
	"fmt"
	"os"
	"runtime"
	"sync/atomic"
	"time"
)

// parallelThreshold is the element count below which elementwise kernels stay
// on the calling goroutine: under ~64K elements the cost of waking goroutines
// (a few µs) is comparable to the work itself.
const parallelThreshold = 1 << 16

// workers returns how many goroutines to use for work of the given size,
// measured in units where minPer units are worth one goroutine.
func workers(size, minPer int) int {
	w := runtime.GOMAXPROCS(0)
	if minPer < 1 {
		minPer = 1
	}
	if max := size / minPer; max < w {
		w = max
	}
	if w < 1 {
		w = 1
	}
	return w
}

// piecesPerWorker is how many pieces parallelFor cuts the work into per
// goroutine. The goroutines claim pieces in order until none is left, so a
// goroutine that starts late (waking an idle core can take from 0.1 to a
// few milliseconds on a virtual machine, longer than many kernels run)
// finds its share already taken by the others instead of holding up the
// whole call.
const piecesPerWorker = 4

// defaultSpin is how long a helper goroutine stays awake after its last piece,
// looking for the next call's work, and how long a caller waits awake for
// its helpers' last pieces. A training step runs its kernels with
// microseconds to a few milliseconds of serial work between them; a
// goroutine that blocks lets its core idle, and waking it again is slow on
// a virtual machine: the woken thread often shares a core with the caller
// for a while (measured here: of two goroutines started together after a
// pause, one ran only once the other had finished, or both took twice as
// long), so an 8192×1000 cross-entropy forward and backward took 14 to 26
// ms (median 21) after a 0.3 s pause and 13 ms back to back. With helpers
// that stay awake for 5 ms it takes 13.8 and 13.2 ms. OpenMP's threads, on
// which PyTorch's CPU kernels run (Debian's PyTorch 1.13:
// torch.__config__.parallel_info() names OpenMP, libtorch_cpu.so links
// libgomp), spin the same way before they sleep: GOMP_SPINCOUNT, 300,000
// spins by default (gcc.gnu.org/onlinedocs/libgomp/GOMP_005fSPINCOUNT.html).
//
// GPUKIT_SPIN sets it, as a duration from 0 to 1s ("0" never waits awake):
// lower it where the cores are shared with other busy processes (make test
// runs its two lanes with 0), as OMP_WAIT_POLICY=passive does for OpenMP.
const defaultSpin = 5 * time.Millisecond

// spinNanos is the setting in force (an atomic, so tests may change it).
var spinNanos atomic.Int64

func init() {
	d, err := spinSetting(os.Getenv("GPUKIT_SPIN"))
	if err != nil {
		// Reported once, as libgomp reports a wrong OMP_WAIT_POLICY.
		fmt.Fprintln(os.Stderr, err)
	}
	spinNanos.Store(int64(d))
}

// spinSetting reads GPUKIT_SPIN's value; for a wrong one it returns the
// default and an error that says so.
func spinSetting(v string) (time.Duration, error) {
	if v == "" {
		return defaultSpin, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 || d > time.Second {
		return defaultSpin, fmt.Errorf("kernels: GPUKIT_SPIN=%q is not a duration from 0 to 1s (such as 5ms or 0); helpers wait awake for %v", v, defaultSpin)
	}
	return d, nil
}

// spinFor is how long to wait awake.
func spinFor() time.Duration { return time.Duration(spinNanos.Load()) }

// A job is one parallelFor call: count pieces of chunk indices, claimed in
// order by the caller and by up to the given number of helpers.
type job struct {
	fn              func(lo, hi int)
	n, chunk, count int
	next            atomic.Int64 // the next piece to claim
	done            atomic.Int64 // pieces finished
	helpers         atomic.Int32 // helper places left
	finished        chan struct{}
}

// offered is the newest job that may want helpers, and spinning the number
// of helper goroutines awake and looking for one.
var (
	offered  atomic.Pointer[job]
	spinning atomic.Int32
)

// join takes a helper's place in j, if one is left.
func (j *job) join() bool {
	for {
		h := j.helpers.Load()
		if h <= 0 {
			return false
		}
		if j.helpers.CompareAndSwap(h, h-1) {
			return true
		}
	}
}

// work claims and runs pieces until none is left; whoever finishes the
// last piece closes finished.
func (j *job) work() {
	for {
		i := int(j.next.Add(1)) - 1
		if i >= j.count {
			return
		}
		j.fn(i*j.chunk, min((i+1)*j.chunk, j.n))
		if int(j.done.Add(1)) == j.count {
			close(j.finished)
		}
	}
}

// help is a helper goroutine: it works on j if a place is left, then on
// the jobs offered while it stays awake, and returns once none came for
// spinFor.
func help(j *job) {
	for ; j != nil; j = awaitJob() {
		if j.join() {
			j.work()
		}
	}
}

// maySpin reports whether a goroutine may wait awake: not when spinFor is
// 0, nor when there are more Ps than CPUs, where spinning would take a CPU
// from one that works.
func maySpin() bool { return spinFor() > 0 && runtime.GOMAXPROCS(0) <= runtime.NumCPU() }

// awaitJob returns the offered job that has a helper's place left, looking
// for up to spinFor when maySpin, or nil.
func awaitJob() *job {
	wanted := func() *job {
		if j := offered.Load(); j != nil && j.helpers.Load() > 0 {
			return j
		}
		return nil
	}
	if maySpin() {
		spinning.Add(1)
		for deadline := time.Now().Add(spinFor()); time.Now().Before(deadline); {
			if j := wanted(); j != nil {
				spinning.Add(-1)
				return j
			}
			yieldCPU()
		}
		spinning.Add(-1)
	}
	// A caller may have counted this goroutine as awake just before it
	// stopped looking, and started no helper in its place.
	return wanted()
}

// ParallelFor runs fn over [0, n) in pieces on the kernels' goroutines, up
// to GOMAXPROCS of them and one for each minPer indices at most, the caller
// among them: for a backend's loop whose indices are independent. fn must
// compute each index the same whichever piece holds it, and two pieces
// must not write the same memory. n == 0 calls nothing; a negative n or a
// nil fn panics with the package's message.
func ParallelFor(n, minPer int, fn func(lo, hi int)) {
	if n < 0 || fn == nil {
		panic(fmt.Sprintf("kernels: ParallelFor: %d indices, fn nil: %v (want n >= 0 and a function)", n, fn == nil))
	}
	if n == 0 {
		return
	}
	parallelFor(n, workers(n, minPer), 1, fn)
}

// parallelFor runs fn over [0,n) on up to w goroutines: the range is cut
// into about w·piecesPerWorker pieces, each aligned to a multiple of align
// (except the last), which the goroutines claim in order. The first
// goroutine is the caller, so w == 1 involves no other. fn must compute
// each index the same whichever piece holds it, which is what keeps every
// kernel's result independent of the number of cores.
func parallelFor(n, w, align int, fn func(lo, hi int)) {
	parallelPieces(n, w, w*piecesPerWorker, align, fn)
}

// parallelPieces is parallelFor cut into about the given number of pieces.
// The helpers are goroutines still awake from an earlier call (help) and,
// for the places they cannot fill, new ones.
func parallelPieces(n, w, pieces, align int, fn func(lo, hi int)) {
	if align < 1 {
		align = 1
	}
	if w <= 1 || n <= align {
		fn(0, n)
		return
	}
	chunk := (n + pieces - 1) / pieces
	chunk = (chunk + align - 1) / align * align
	count := (n + chunk - 1) / chunk
	if count <= 1 {
		fn(0, n)
		return
	}
	j := &job{fn: fn, n: n, chunk: chunk, count: count, finished: make(chan struct{})}
	helpers := int32(min(w, count) - 1)
	j.helpers.Store(helpers)
	offered.Store(j)
	for range helpers - min(helpers, spinning.Load()) {
		go help(j)
	}
	j.work()
	offered.CompareAndSwap(j, nil)
	// The helpers' last pieces: wait awake for a while, then asleep.
	if maySpin() {
		for deadline := time.Now().Add(spinFor()); j.done.Load() < int64(count) && time.Now().Before(deadline); {
			yieldCPU()
		}
	}
	<-j.finished
}
