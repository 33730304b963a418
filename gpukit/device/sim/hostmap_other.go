//go:build !linux

package sim

import "github.com/gpumem/course/gpukit/alloc"

// Only Linux reserves host memory without committing it here: elsewhere sim
// devices have no page mapping (meta devices do) and expandable segments
// fall back to plain segments, with PyTorch's warning.

func hostReserve(size int64) ([]byte, error) { return nil, alloc.ErrPagesUnsupported }

func hostDiscard(b []byte) {
	clear(b)
}

func hostRelease(b []byte) {}
