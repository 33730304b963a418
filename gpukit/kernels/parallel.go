package kernels

import (
	"runtime"
	"sync"
	"sync/atomic"
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

// parallelFor runs fn over [0,n) on up to w goroutines: the range is cut
// into about w·piecesPerWorker pieces, each aligned to a multiple of align
// (except the last), which the goroutines claim in order. The first
// goroutine is the caller, so w == 1 spawns nothing. fn must compute each
// index the same whichever piece holds it, which is what keeps every
// kernel's result independent of the number of cores.
func parallelFor(n, w, align int, fn func(lo, hi int)) {
	parallelPieces(n, w, w*piecesPerWorker, align, fn)
}

// parallelPieces is parallelFor cut into about the given number of pieces.
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
	var next atomic.Int64
	work := func() {
		for {
			i := int(next.Add(1)) - 1
			if i >= count {
				return
			}
			fn(i*chunk, min((i+1)*chunk, n))
		}
	}
	var wg sync.WaitGroup
	for range min(w, count) - 1 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			work()
		}()
	}
	work()
	wg.Wait()
}
