//go:build !linux

package hostmem

// Total is unknown outside Linux (0): allocations are then checked only
// against Go's own limit.
func Total() int64 { return 0 }
