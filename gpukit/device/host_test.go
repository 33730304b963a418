package device_test

import (
	"fmt"
	"sync"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpumem/course/gpukit/alloc"
	"github.com/gpumem/course/gpukit/device"
	"github.com/gpumem/course/gpukit/device/computetest"
	"github.com/gpumem/course/gpukit/device/simtest"
)

// hostHeap is host memory as the conformance suite allocates it: Go
// buffers whose real addresses HostCompute resolves, kept alive here
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
	copy(pointee(dst, len(src)), src)
	return nil
}

func (h *hostHeap) CopyDtoH(dst []byte, src uint64, _ bool, _ alloc.Stream, _ bool) error {
	copy(dst, pointee(src, len(dst)))
	return nil
}

// pointee is the n bytes at addr, a live Go buffer of the heap.
func pointee(addr uint64, n int) []byte {
	return unsafe.Slice((*byte)(*(*unsafe.Pointer)(unsafe.Pointer(&addr))), n)
}

// TestHostComputeConformance runs the Compute suite on HostCompute, which
// resolves real pointers.
func TestHostComputeConformance(t *testing.T) {
	h := &hostHeap{bufs: map[uint64][]float64{}}
	c := device.HostCompute()
	for _, m := range computetest.Run(t, c, h) {
		if m.Method != "Adam" {
			t.Errorf("the host lacks %v", m)
		}
	}
}

// noCompute is a backend that computes nothing: only Backend's methods of
// the sim card it wraps.
type noCompute struct{ device.Backend }

func TestDeviceCompute(t *testing.T) {
	for _, c := range []struct {
		name string
		dev  *device.Device
		want bool
	}{
		{"sim", simtest.Card(t), true},
		{"meta", simtest.Card(t, simtest.Meta()), true},
		{"custom without kernels", mustNew(t, noCompute{simtest.Card(t).Backend()}), false},
	} {
		assert.Equal(t, c.want, c.dev.Compute() != nil, c.name)
	}
}

func mustNew(t *testing.T, b device.Backend) *device.Device {
	t.Helper()
	d, err := device.New(b)
	require.NoError(t, err)
	return d
}
