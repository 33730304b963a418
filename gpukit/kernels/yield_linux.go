package kernels

import (
	"runtime"
	"syscall"
)

// yieldCPU lets whatever else is runnable go first while a goroutine waits
// awake: the process's other goroutines (runtime.Gosched), then other
// processes' threads on this CPU (sched_yield(2)), so that waiting awake
// costs only CPU time no one else wants, as OpenBLAS's waiting threads do.
func yieldCPU() {
	runtime.Gosched()
	syscall.Syscall(syscall.SYS_SCHED_YIELD, 0, 0, 0)
}
