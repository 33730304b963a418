package tensor

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/gpumem/course/gpukit/alloc"
	"github.com/gpumem/course/gpukit/device"
	"github.com/gpumem/course/gpukit/device/backend"
	"github.com/gpumem/course/gpukit/internal/hostmem"
)

// This file is the only one that talks to gpukit/device: the memory seam
// (see storage.go) for device and host memory, and the copies of To.

// deviceMemory puts storages in blocks of a device's caching allocator.
type deviceMemory struct{ d *device.Device }

func (m deviceMemory) name() string { return m.d.Name() }

func (m deviceMemory) hasBytes() bool { return m.d.Kind() == device.Sim }

func (m deviceMemory) alloc(n int64) (any, uint64, []byte, error) {
	b, err := m.d.Malloc(n, m.d.DefaultStream())
	if err != nil {
		return nil, 0, nil, err
	}
	if b == nil { // zero bytes: no block, as PyTorch allocates nothing
		return (*alloc.Block)(nil), 0, nil, nil
	}
	data := m.d.Bytes(b)
	if data != nil {
		data = data[:n:n]
	} else if m.hasBytes() {
		return nil, 0, nil, fmt.Errorf("tensor: device %s returned no bytes for block %#x", m.d.Name(), b.Addr())
	}
	return b, b.Addr(), data, nil
}

func (m deviceMemory) free(h any) {
	if b, _ := h.(*alloc.Block); b != nil {
		m.d.Free(b)
	}
}

func (m deviceMemory) launch(k kernelCost) {
	m.d.Launch(m.d.DefaultStream(), device.Kernel{Name: k.name, Flops: k.flops, Bytes: k.bytes, Half: k.half})
}

func (m deviceMemory) compute() (backend.Compute, alloc.Stream) {
	return m.d.Compute(), m.d.DefaultStream()
}

func (m deviceMemory) blasWorkspace() error { return m.d.BlasWorkspace(m.d.DefaultStream()) }

// hostMem is host memory: pageable Go memory, or a pinned buffer from the
// default device (page-locked memory belongs to the driver).
type hostMem struct{ pinned bool }

func hostMemory(pinned bool) memory { return hostMem{pinned: pinned} }

func (m hostMem) name() string { return "cpu" }

func (m hostMem) hasBytes() bool { return true }

func (m hostMem) alloc(n int64) (any, uint64, []byte, error) {
	if n == 0 {
		return nil, 0, nil, nil
	}
	if total := hostmem.Total(); total > 0 && n > total {
		return nil, 0, nil, errorf("host allocation of %d bytes is larger than this machine's memory (%d bytes); PyTorch's CPU allocator would fail too (\"can't allocate memory\")", n, total)
	}
	if m.pinned {
		hb, err := device.Default().HostAlloc(n, true)
		if err != nil {
			return nil, 0, nil, err
		}
		return hb, uint64(uintptr(unsafe.Pointer(&hb.Bytes[0]))), hb.Bytes[:n:n], nil
	}
	// float64 backing keeps the bytes 8-byte aligned for the fast paths.
	words := make([]float64, (n+7)/8)
	b := unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), n)
	return b, uint64(uintptr(unsafe.Pointer(&b[0]))), b, nil
}

func (m hostMem) free(h any) {
	if hb, ok := h.(*device.HostBuffer); ok {
		hb.Free()
	}
}

func (m hostMem) launch(kernelCost) {}

func (m hostMem) blasWorkspace() error { return nil }

// compute is the CPU kernels on the host tensors' real addresses: every
// kernel call is made with the tensors' storages, whose data slices keep
// that memory alive, in hand until it returns (device.HostCompute).
func (m hostMem) compute() (backend.Compute, alloc.Stream) { return device.HostCompute(), 0 }

// On places a new tensor on device d. Without On or OnHost, tensors are
// created on device.Default() (sim:0).
func On(d *device.Device) Option {
	return optionFunc(func(c *config) { c.mem = deviceMemory{d} })
}

// defaultMemory is where tensors go without an On or OnHost option.
var defaultMemory = func() memory { return deviceMemory{device.Default()} }

// Device is the device t lives on, nil for host tensors.
func (t *Tensor) Device() *device.Device { return t.st.Device() }

// DeviceName is where t lives: "sim:0", "meta:0", "cpu", ...
func (t *Tensor) DeviceName() string { return t.st.DeviceName() }

// IsHost reports whether t lives in host memory.
func (t *Tensor) IsHost() bool { return t.st.Device() == nil }

// IsPinned reports whether t lives in page-locked host memory.
func (t *Tensor) IsPinned() bool {
	m, ok := t.st.core.mem.(hostMem)
	return ok && m.pinned
}

// Device is the device the storage lives on, nil for host memory.
func (s *Storage) Device() *device.Device {
	if m, ok := s.core.mem.(deviceMemory); ok {
		return m.d
	}
	return nil
}

// DeviceName is where the storage lives, such as "sim:0", "meta:0" or
// "cpu".
func (s *Storage) DeviceName() string { return s.core.mem.name() }

// Block is the allocator block of a device storage (nil on the host, for
// an empty tensor, or once the storage is freed).
func (s *Storage) Block() *alloc.Block {
	s.core.mu.Lock()
	defer s.core.mu.Unlock()
	b, _ := s.core.h.(*alloc.Block)
	return b
}

// isAllocError reports whether err is an allocation failure that ops
// panic with unchanged (so Try returns it and errors.As finds it).
func isAllocError(err error) bool {
	var oom *alloc.OutOfMemoryError
	return errors.As(err, &oom) || errors.Is(err, alloc.ErrDeviceFull)
}

// To copies t to device d (torch.Tensor.to(device, non_blocking)). When t
// is already on d it returns a new reference to the same storage (no copy,
// no allocation), as PyTorch returns self. A non-blocking copy from pinned
// host memory is asynchronous on the device's clock; from pageable memory
// it is synchronous whatever nonBlocking says. The copy is differentiable.
func (t *Tensor) To(d *device.Device, nonBlocking bool) *Tensor {
	return t.moveTo(deviceMemory{d}, nonBlocking)
}

// ToHost copies t to host memory, page-locked when pinned. Copying does
// not free t's device memory (COURSE mistake 5): Release t for that.
func (t *Tensor) ToHost(pinned, nonBlocking bool) *Tensor {
	return t.moveTo(hostMem{pinned: pinned}, nonBlocking)
}

func (t *Tensor) moveTo(dst memory, nonBlocking bool) *Tensor {
	t.live("To")
	if t.st.core.mem == dst {
		return t.sameTensor()
	}
	out := empty(dst, t.shape, t.dtype)
	copyAcross(out, t, nonBlocking)
	src := t.st.core.mem
	return record(out, "ToCopyBackward0", []*Tensor{t}, nil, func(g *Tensor, _ []*Tensor, _ []bool) []*Tensor {
		back := empty(src, g.shape, g.dtype)
		copyAcross(back, g, false)
		return []*Tensor{back}
	})
}

// deviceOnly reports whether t's values live where the host cannot read
// them directly (a cuda device): they travel through copies instead. Meta
// tensors have no values at all.
func (t *Tensor) deviceOnly() bool {
	d := t.st.Device()
	return t.st.data == nil && d != nil && d.Kind() == device.CUDA
}

// writeValues fills the new contiguous tensor t through write, which
// stores into bytes laid out like t: directly where the host can reach t's
// memory, through a host buffer and a copy on a cuda device, not at all on
// a meta device.
func writeValues(t *Tensor, write func(data []byte)) {
	switch {
	case t.st.data != nil:
		write(t.st.data)
	case t.deviceOnly() && t.Numel() > 0:
		buf := make([]byte, t.Nbytes())
		write(buf)
		d := t.st.Device()
		if err := d.CopyToDevice(t.st.Block(), 0, buf, false, d.DefaultStream(), false); err != nil {
			panicf("copy of %s to %s failed: %v", fmtShape(t.shape), t.DeviceName(), err)
		}
	}
}

// hostBytes returns bytes laid out like t's storage that the host can read:
// the storage itself, or a copy of it from a cuda device. It panics on a
// meta tensor, which has no values.
func (t *Tensor) hostBytes(op string) []byte {
	if t.deviceOnly() {
		d := t.st.Device()
		buf := make([]byte, t.st.Nbytes())
		if err := d.CopyToHost(buf, t.st.Block(), 0, false, d.DefaultStream(), false); err != nil {
			panicf("%s: copy of %s from %s failed: %v", op, fmtShape(t.shape), t.DeviceName(), err)
		}
		return buf
	}
	t.needBytes(op)
	return t.st.data
}

// copyAcross copies src into the contiguous tensor dst of the same shape
// and dtype on another memory, through the device's copy engine. A
// non-contiguous src is first copied to a contiguous temporary where it
// lives (not recorded by autograd).
func copyAcross(dst, src *Tensor, async bool) {
	if !src.IsContiguous() {
		c := empty(src.outMem(), src.shape, src.dtype)
		defer c.Release()
		copyKernel(c, src)
		c.charge("copy", 0, src)
		src = c
	}
	n := int64(src.Numel() * src.dtype.Size())
	if n == 0 {
		return
	}
	srcOff := int64(src.offset * src.dtype.Size())
	dstOff := int64(dst.offset * dst.dtype.Size())
	sd, dd := src.st.Device(), dst.st.Device()
	var err error
	switch {
	case sd == nil && dd == nil:
		copy(dst.st.data[dstOff:dstOff+n], src.st.data[srcOff:srcOff+n])
	case sd == nil: // host → device
		err = dd.CopyToDevice(dst.st.Block(), dstOff, src.st.data[srcOff:srcOff+n], src.IsPinned(), dd.DefaultStream(), async)
	case dd == nil: // device → host
		err = sd.CopyToHost(dst.st.data[dstOff:dstOff+n], src.st.Block(), srcOff, dst.IsPinned(), sd.DefaultStream(), async)
	default: // device → device
		err = dd.CopyDevice(dst.st.Block(), dstOff, src.st.Block(), srcOff, n, dd.DefaultStream())
	}
	if err != nil {
		panicf("copy of %s from %s to %s failed: %v", fmtShape(src.shape), src.DeviceName(), dst.DeviceName(), err)
	}
}
