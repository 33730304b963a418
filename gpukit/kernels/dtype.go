package kernels

import (
	"unsafe"
)

// Element helpers shared by the callers of the kernels (gpukit/tensor and
// gpukit/device/cpucompute): raw bytes viewed as float slices, and the N-d
// offset loop of the generic kernels. The 16-bit float formats are
// gpukit/dtypes'.

// Float32s and Float64s view raw bytes as float slices (len(b)/4 or
// len(b)/8 elements; nil when b holds none). Device blocks and Go
// allocations are at least 8-byte aligned.
func Float32s(b []byte) []float32 {
	if len(b) < 4 {
		return nil
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(&b[0])), len(b)/4)
}

// Float64s: see Float32s.
func Float64s(b []byte) []float64 {
	if len(b) < 8 {
		return nil
	}
	return unsafe.Slice((*float64)(unsafe.Pointer(&b[0])), len(b)/8)
}
