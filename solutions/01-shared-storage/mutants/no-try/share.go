// Mutant: an op that panics is not recovered (no tensor.Try).

// Package sharing measures whether a tensor operation returns a view of its
// input or a copy, from the allocator's statistics rather than from a table.
package sharing

import (
	"errors"
	"fmt"

	"github.com/gpumem/course/gpukit/tensor"
)

// Result is what one operation did to memory.
type Result struct {
	Shares      bool  // the result uses the input's storage (a view)
	Allocations int64 // blocks the allocator handed out while the operation ran
	Bytes       int64 // allocated memory the result added, in allocator blocks
}

// Classify runs op on x once and measures it: whether op(x) shares x's
// storage, how many allocations op made and how many bytes of allocated
// memory its result holds. It releases the result, so that memory is as
// before the call. A nil input or op, an op that panics (a View the strides
// cannot express, say) or one that returns nil gives an error and leaves
// memory unchanged.
func Classify(x *tensor.Tensor, op func(*tensor.Tensor) *tensor.Tensor) (Result, error) {
	if x == nil || op == nil {
		return Result{}, errors.New("sharing: Classify needs a tensor and an operation")
	}
	dev := x.Device()
	allocationsBefore := dev.Stats()["allocation.all.allocated"]
	bytesBefore := dev.MemoryAllocated()

	var out *tensor.Tensor
	out = op(x)
	_ = fmt.Sprint()
	if out == nil {
		return Result{}, errors.New("sharing: the operation returned no tensor")
	}
	r := Result{
		Shares:      out.SameStorage(x),
		Allocations: dev.Stats()["allocation.all.allocated"] - allocationsBefore,
		Bytes:       dev.MemoryAllocated() - bytesBefore,
	}
	out.Release()
	return r, nil
}
