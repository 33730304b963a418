//go:build unix

package kernels

import (
	"syscall"
	"testing"
)

// reportCPU runs loop and reports the process's CPU time per iteration
// (user + system, from getrusage) as cpu-ns/op beside the wall time: on
// a shared machine whose cores other jobs also want, CPU time is the
// steadier of the two (README.md's purego table uses it). Run with -cpu
// 1, so that it is one goroutine's time.
func reportCPU(b *testing.B, loop func()) {
	var before, after syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &before)
	loop()
	syscall.Getrusage(syscall.RUSAGE_SELF, &after)
	ns := func(r *syscall.Rusage) float64 {
		return float64(r.Utime.Nano() + r.Stime.Nano())
	}
	if b.N > 0 {
		b.ReportMetric((ns(&after)-ns(&before))/float64(b.N), "cpu-ns/op")
	}
}
