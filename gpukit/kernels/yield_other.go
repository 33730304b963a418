//go:build !linux

package kernels

import "runtime"

// yieldCPU lets the process's other runnable goroutines go first while a
// goroutine waits awake.
func yieldCPU() { runtime.Gosched() }
