//go:build (amd64 || arm64) && !purego

package tensor

// getg returns the address of the running goroutine's runtime structure.
//
//go:noescape
func getg() uintptr

// goroutineKey identifies the calling goroutine for grad modes: the address
// of its g, read in one instruction.
func goroutineKey() uintptr { return getg() }
