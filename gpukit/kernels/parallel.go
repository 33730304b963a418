package kernels

import (
	"runtime"
	"sync"
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

// parallelFor splits [0,n) into w nearly equal chunks, each aligned to a
// multiple of align (except the last), and runs fn on them concurrently.
// The first chunk runs on the calling goroutine, so w == 1 spawns nothing.
func parallelFor(n, w, align int, fn func(lo, hi int)) {
	if w <= 1 || n <= align {
		fn(0, n)
		return
	}
	if align < 1 {
		align = 1
	}
	chunk := (n + w - 1) / w
	chunk = (chunk + align - 1) / align * align
	var wg sync.WaitGroup
	for lo := chunk; lo < n; lo += chunk {
		hi := min(lo+chunk, n)
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn(lo, hi)
		}()
	}
	fn(0, min(chunk, n))
	wg.Wait()
}
