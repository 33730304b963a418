package sim

import (
	"github.com/gpumem/course/gpukit/device/backend"
	"github.com/gpumem/course/gpukit/device/cpucompute"
)

// A simulated device computes: every Backend implements backend.Compute.
// A sim device runs the CPU kernels of gpukit/kernels on its segments'
// backing bytes (gpukit/device/cpucompute, resolving addresses with
// Bytes); the calls are synchronous and charge nothing, as the caller
// (gpukit/tensor) charges each op's modelled cost to the clock with
// Launch, once. A meta device has no bytes: its Compute checks nothing
// and computes nothing (backend.NopCompute), and the op's modelled cost
// is charged by the caller exactly as on sim.
var _ backend.Compute = (*Backend)(nil)

// computer is the embedded Compute of a Backend (unexported, so that its
// methods are the Backend's without a settable field).
type computer = backend.Compute

func newCompute(b *Backend) backend.Compute {
	if b.kind == backend.Meta {
		return backend.NopCompute{}
	}
	return cpucompute.New(b.Name(), b)
}
