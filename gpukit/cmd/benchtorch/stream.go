package main

import (
	"fmt"
	"runtime"
	"sync"
	"time"
)

// streamN is the length of each of STREAM's arrays here: 16 M float32
// (64 MiB), the size of the memory-bound cases' operands, far above the
// last-level cache a vCPU gets.
const streamN = 16 << 20

// streamBandwidth measures the memory bandwidth as STREAM does (McCalpin,
// www.cs.virginia.edu/stream): copy c = a and triad a = b + s·c over
// arrays of streamN float32, on GOMAXPROCS goroutines, each its own
// contiguous share, the arrays first written by the goroutines that use
// them. Bytes are counted as STREAM counts them (copy 2, triad 3 per
// element times 4 bytes: reads plus writes, the write-allocate read not
// counted); the best of reps runs is printed, in bytes per second, one
// "copy" and one "triad" line. Copy is Go's copy (the runtime's memmove,
// non-temporal stores for large moves); triad is a plain Go loop, four
// elements per iteration, which on amd64 is still limited by memory, not
// by its arithmetic, at two threads and more.
func streamBandwidth(reps int) {
	a, b, c := make([]float32, streamN), make([]float32, streamN), make([]float32, streamN)
	w := runtime.GOMAXPROCS(0)
	each := func(fn func(lo, hi int)) float64 {
		var wg sync.WaitGroup
		start := time.Now()
		for k := range w {
			lo, hi := streamN*k/w, streamN*(k+1)/w
			wg.Go(func() { fn(lo, hi) })
		}
		wg.Wait()
		return time.Since(start).Seconds()
	}
	each(func(lo, hi int) { // first touch, by the goroutine that will use it
		for i := lo; i < hi; i++ {
			a[i], b[i], c[i] = 1, 2, 0
		}
	})
	best := func(bytes float64, fn func(lo, hi int)) float64 {
		fn(0, streamN) // warm
		t := 1e9
		for range max(reps, 5) {
			t = min(t, each(fn))
		}
		return bytes / t
	}
	cp := best(2*4*streamN, func(lo, hi int) { copy(c[lo:hi], a[lo:hi]) })
	s := float32(3)
	triad := best(3*4*streamN, func(lo, hi int) {
		x, y, z := a[lo:hi], b[lo:hi], c[lo:hi]
		z, y = z[:len(x)], y[:len(x)]
		i := 0
		for ; i+4 <= len(x); i += 4 {
			x[i] = y[i] + s*z[i]
			x[i+1] = y[i+1] + s*z[i+1]
			x[i+2] = y[i+2] + s*z[i+2]
			x[i+3] = y[i+3] + s*z[i+3]
		}
		for ; i < len(x); i++ {
			x[i] = y[i] + s*z[i]
		}
	})
	fmt.Printf("copy\t%.6g\ntriad\t%.6g\n", cp, triad)
}
