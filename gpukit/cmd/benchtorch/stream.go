package main

import (
	"fmt"
	"io"
	"runtime"
	"sync"
	"time"

	"github.com/gpumem/course/gpukit/kernels"
	"github.com/gpumem/course/gpukit/ops"
)

// streamN is the length of each of STREAM's arrays here: 16 M float32
// (64 MiB), the size of the memory-bound cases' operands, far above the
// last-level cache a vCPU gets.
const streamN = 16 << 20

// streamScalar is STREAM's scalar s.
const streamScalar = 3

// streamBandwidth measures the memory bandwidth as STREAM does (McCalpin,
// www.cs.virginia.edu/stream) with its four kernels, in its order, over n
// float32 a, b and c on GOMAXPROCS goroutines:
//
//	copy   c = a      Go's copy (the runtime's memmove), each goroutine
//	                  its own contiguous share
//	scale  b = s·c    gpukit's vector loops (kernels.BinaryScalar and
//	add    c = a + b  kernels.Binary: AVX, non-temporal stores at this
//	                  size), split across the goroutines as the ops split
//	                  their work
//	triad  a = b + s·c  a plain Go loop, each goroutine its own share
//
// The arrays are first written by the goroutines that copy and triad
// use. Bytes are counted as STREAM counts them (copy and scale 2, add and
// triad 3 per element, times 4 bytes: reads plus writes, the
// write-allocate read not counted); the best of reps runs (at least 5) of
// each is written to w, in bytes per second, one "NAME VALUE" line each.
//
// The best figure (of this and a second run, after the cases) is the
// bandwidth bench-torch compares the ops with, so some kernel must move
// bytes as fast as the memory allows. Go's copy and the scalar triad fell
// short of that on this project's build machine (AMD EPYC, Zen 5 class,
// 2 vCPUs, 2026-12-01): over ten rounds of ten runs, copy gave 30-60
// GB/s and the vector scale and add 70-93; triad stays at 39-48 GB/s,
// its scalar loop's pace. With copy and triad alone, the bandwidth of a
// run had been anywhere from 41 to 103 GB/s, and in two runs below what
// the add op itself moved in the same run (gpukit/kernels/README.md, runs
// 19 and 21).
//
// As STREAM does, it then checks the arrays hold what the kernels compute
// (a = 1, b = 2, c = 0 at first: copy makes c 1, scale b 3, add c 4,
// triad a 15), so that a kernel that skipped its work cannot pass for
// fast memory.
func streamBandwidth(w io.Writer, n, reps int) error {
	a, b, c := make([]float32, n), make([]float32, n), make([]float32, n)
	workers := runtime.GOMAXPROCS(0)
	each := func(fn func(lo, hi int)) func() {
		return func() {
			var wg sync.WaitGroup
			for k := range workers {
				lo, hi := n*k/workers, n*(k+1)/workers
				wg.Go(func() { fn(lo, hi) })
			}
			wg.Wait()
		}
	}
	each(func(lo, hi int) { // first touch, by the goroutine that will use it
		for i := lo; i < hi; i++ {
			a[i], b[i], c[i] = 1, 2, 0
		}
	})()
	best := func(name string, bytesPerElem int, run func()) {
		run() // warm
		t := time.Duration(1 << 62)
		for range max(reps, 5) {
			start := time.Now()
			run()
			t = min(t, time.Since(start))
		}
		fmt.Fprintf(w, "%s\t%.6g\n", name, float64(bytesPerElem*4*n)/max(t.Seconds(), 1e-9))
	}
	best("copy", 2, each(func(lo, hi int) { copy(c[lo:hi], a[lo:hi]) }))
	best("scale", 2, func() { kernels.BinaryScalar(ops.Mul, b, c, streamScalar) })
	best("add", 3, func() { kernels.Binary(ops.Add, c, a, b) })
	best("triad", 3, each(func(lo, hi int) {
		x, y, z := a[lo:hi], b[lo:hi], c[lo:hi]
		z, y = z[:len(x)], y[:len(x)]
		i := 0
		for ; i+4 <= len(x); i += 4 {
			x[i] = y[i] + streamScalar*z[i]
			x[i+1] = y[i+1] + streamScalar*z[i+1]
			x[i+2] = y[i+2] + streamScalar*z[i+2]
			x[i+3] = y[i+3] + streamScalar*z[i+3]
		}
		for ; i < len(x); i++ {
			x[i] = y[i] + streamScalar*z[i]
		}
	}))
	for i := range n {
		if a[i] != 15 || b[i] != 3 || c[i] != 4 {
			return fmt.Errorf("stream: element %d is a %v, b %v, c %v after the four kernels, want 15, 3, 4", i, a[i], b[i], c[i])
		}
	}
	return nil
}
