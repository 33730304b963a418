package tensor

import (
	"fmt"
	"sync"
	"testing"
	"unsafe"

	"github.com/gpumem/course/gpukit/alloc"
	"github.com/gpumem/course/gpukit/device/computetest"
)

// hostHeap is host memory as the conformance suite allocates it: Go
// buffers whose real addresses hostCompute resolves, kept alive here
// until freed.
type hostHeap struct {
	mu   sync.Mutex
	bufs map[uint64][]float64
}

func (h *hostHeap) Malloc(size int64) (uint64, error) {
	words := make([]float64, (size+7)/8)
	addr := uint64(uintptr(unsafe.Pointer(&words[0])))
	h.mu.Lock()
	h.bufs[addr] = words
	h.mu.Unlock()
	return addr, nil
}

func (h *hostHeap) Free(addr uint64) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.bufs[addr]; !ok {
		return fmt.Errorf("free of %#x", addr)
	}
	delete(h.bufs, addr)
	return nil
}

func (h *hostHeap) CopyHtoD(dst uint64, src []byte, _ bool, _ alloc.Stream, _ bool) error {
	copy(hostPointers{}.Bytes(dst, int64(len(src))), src)
	return nil
}

func (h *hostHeap) CopyDtoH(dst []byte, src uint64, _ bool, _ alloc.Stream, _ bool) error {
	copy(dst, hostPointers{}.Bytes(src, int64(len(dst))))
	return nil
}

// TestHostComputeConformance runs the Compute suite on the Compute of host
// tensors, which resolves real pointers.
func TestHostComputeConformance(t *testing.T) {
	h := &hostHeap{bufs: map[uint64][]float64{}}
	c, _ := hostMem{}.compute()
	for _, m := range computetest.Run(t, c, h) {
		if m.Method != "Adam" {
			t.Errorf("the host lacks %v", m)
		}
	}
}
