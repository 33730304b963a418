//go:build cuda

package cuda

/*
#cgo LDFLAGS: -lcuda
#cgo linux LDFLAGS: -L/usr/local/cuda/lib64 -L/usr/lib/x86_64-linux-gnu
#cgo linux CFLAGS: -I/usr/local/cuda/include -I/usr/include
#include <cuda.h>

static CUresult gpukitHostAlloc(void **p, size_t n) {
	return cuMemHostAlloc(p, n, CU_MEMHOSTALLOC_PORTABLE);
}

static CUresult gpukitFreeHost(void *p) {
	return cuMemFreeHost(p);
}
*/
import "C"

import (
	"fmt"
	"unsafe"
)

// hostAlloc returns n bytes of page-locked host memory (cuMemHostAlloc,
// portable to every context). A context must be current.
func hostAlloc(n int64) (unsafe.Pointer, error) {
	var p unsafe.Pointer
	if r := C.gpukitHostAlloc(&p, C.size_t(n)); r != C.CUDA_SUCCESS {
		return nil, fmt.Errorf("cuMemHostAlloc(%d): CUresult %d", n, int(r))
	}
	return p, nil
}

// freeHost releases memory from hostAlloc (cuMemFreeHost).
func freeHost(p unsafe.Pointer) error {
	if r := C.gpukitFreeHost(p); r != C.CUDA_SUCCESS {
		return fmt.Errorf("cuMemFreeHost: CUresult %d", int(r))
	}
	return nil
}
