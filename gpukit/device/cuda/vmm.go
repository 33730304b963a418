//go:build cuda

package cuda

/*
#cgo LDFLAGS: -lcuda
#cgo linux LDFLAGS: -L/usr/local/cuda/lib64 -L/usr/lib/x86_64-linux-gnu
#cgo linux CFLAGS: -I/usr/local/cuda/include -I/usr/include
#include <cuda.h>
#include <string.h>

static CUresult gpukitVMMSupported(CUdevice dev, int *ok) {
	return cuDeviceGetAttribute(ok, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, dev);
}

static CUresult gpukitGranularity(int dev, size_t *g) {
	CUmemAllocationProp prop;
	memset(&prop, 0, sizeof prop);
	prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	prop.location.id = dev;
	return cuMemGetAllocationGranularity(g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
}

static CUresult gpukitCreate(CUmemGenericAllocationHandle *h, size_t size, int dev) {
	CUmemAllocationProp prop;
	memset(&prop, 0, sizeof prop);
	prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	prop.location.id = dev;
	return cuMemCreate(h, size, &prop, 0);
}

static CUresult gpukitSetAccess(CUdeviceptr p, size_t size, int dev) {
	CUmemAccessDesc desc;
	memset(&desc, 0, sizeof desc);
	desc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	desc.location.id = dev;
	desc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
	return cuMemSetAccess(p, size, &desc, 1);
}
*/
import "C"

import (
	"fmt"

	"gorgonia.org/cu"

	"github.com/gpumem/course/gpukit/alloc"
	"github.com/gpumem/course/gpukit/device/internal/pagemap"
)

// Virtual memory management for expandable segments (alloc.PageMemory),
// as PyTorch's ExpandableSegment drives it: cuMemAddressReserve for the
// range; per page cuMemCreate, then cuMemMap and one cuMemSetAccess for the
// mapped run; cuStreamSynchronize, cuMemUnmap and cuMemRelease to unmap;
// cuMemAddressFree. A device without CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_
// MANAGEMENT_SUPPORTED makes Reserve fail with alloc.ErrPagesUnsupported,
// and the allocator falls back to cuMemAlloc with PyTorch's warning.

// reservation is an address range from cuMemAddressReserve and the
// physical allocation behind each mapped page.
type reservation struct {
	pagemap.Range
	handles []C.CUmemGenericAllocationHandle // by page; 0 when unmapped
}

// PageMapped reports whether page i is mapped.
func (r *reservation) PageMapped(i int64) bool { return i < int64(len(r.handles)) && r.handles[i] != 0 }

var _ alloc.PageMemory = (*Backend)(nil)

func cuErr(what string, r C.CUresult) error {
	if r == C.CUDA_SUCCESS {
		return nil
	}
	if r == C.CUDA_ERROR_OUT_OF_MEMORY {
		return fmt.Errorf("%s: CUresult %d: %w", what, int(r), alloc.ErrDeviceFull)
	}
	return fmt.Errorf("%s: CUresult %d", what, int(r))
}

// Reserve is cuMemAddressReserve, after checking that the device supports
// virtual memory management.
func (b *Backend) Reserve(size int64) (uint64, error) {
	if size <= 0 {
		return 0, fmt.Errorf("cuda: %s: reserve of %d bytes: size must be positive", b.Name(), size)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	var p C.CUdeviceptr
	err := b.do(func() error {
		var ok C.int
		if err := cuErr("cuDeviceGetAttribute", C.gpukitVMMSupported(C.CUdevice(b.dev), &ok)); err != nil {
			return err
		}
		if ok == 0 {
			return alloc.ErrPagesUnsupported
		}
		var g C.size_t
		if err := cuErr("cuMemGetAllocationGranularity", C.gpukitGranularity(C.int(b.index), &g)); err != nil {
			return err
		}
		if int64(g) <= 0 || size%int64(g) != 0 {
			return fmt.Errorf("%d bytes are not a multiple of the allocation granularity (%d bytes)", size, int64(g))
		}
		return cuErr("cuMemAddressReserve", C.cuMemAddressReserve(&p, C.size_t(size), 0, 0, 0))
	})
	if err != nil {
		return 0, fmt.Errorf("cuda: %s: reserving %d bytes: %w", b.Name(), size, err)
	}
	b.resv.Insert(&reservation{Range: pagemap.Range{Addr: uint64(p), Size: size}})
	return uint64(p), nil
}

// MapPages creates one physical allocation per page (cuMemCreate), maps
// them (cuMemMap) and makes them accessible (cuMemSetAccess). When the
// device is full it releases what it created and maps nothing, as
// ExpandableSegment::map does; the error wraps alloc.ErrDeviceFull.
func (b *Backend) MapPages(addr uint64, pageSize int64, n int) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	r, first, err := b.resv.Pages(pagemap.Map, addr, pageSize, n)
	if err != nil {
		return fmt.Errorf("cuda: %s: %w", b.Name(), err)
	}
	hs := make([]C.CUmemGenericAllocationHandle, n)
	err = b.do(func() error {
		for i := range hs {
			if err := cuErr("cuMemCreate", C.gpukitCreate(&hs[i], C.size_t(pageSize), C.int(b.index))); err != nil {
				for _, h := range hs[:i] {
					C.cuMemRelease(h)
				}
				return err
			}
		}
		for i, h := range hs {
			p := C.CUdeviceptr(addr + uint64(int64(i)*pageSize))
			if err := cuErr("cuMemMap", C.cuMemMap(p, C.size_t(pageSize), 0, h, 0)); err != nil {
				for j := range i {
					C.cuMemUnmap(C.CUdeviceptr(addr+uint64(int64(j)*pageSize)), C.size_t(pageSize))
				}
				for _, h := range hs {
					C.cuMemRelease(h)
				}
				return err
			}
		}
		size := C.size_t(pageSize * int64(n))
		if err := cuErr("cuMemSetAccess", C.gpukitSetAccess(C.CUdeviceptr(addr), size, C.int(b.index))); err != nil {
			C.cuMemUnmap(C.CUdeviceptr(addr), size)
			for _, h := range hs {
				C.cuMemRelease(h)
			}
			return err
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("cuda: %s: mapping %d pages of %d bytes at 0x%x: %w", b.Name(), n, pageSize, addr, err)
	}
	r.Page = pageSize
	for len(r.handles) < first+n {
		r.handles = append(r.handles, 0)
	}
	copy(r.handles[first:], hs)
	return nil
}

// UnmapPages synchronizes stream s (cuMemUnmap and cuMemRelease do not
// always wait for the device), then unmaps and releases each page.
func (b *Backend) UnmapPages(s alloc.Stream, addr uint64, pageSize int64, n int) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	r, first, err := b.resv.Pages(pagemap.Unmap, addr, pageSize, n)
	if err != nil {
		return fmt.Errorf("cuda: %s: %w", b.Name(), err)
	}
	// A stream this backend did not create has no work queued; the
	// allocator may still name it (streams are plain numbers to it): then
	// the whole device is synchronized, as for cudaFree.
	sync := cu.Synchronize
	if cs, ok := b.streams[s]; ok {
		sync = cs.Synchronize
	}
	err = b.do(func() error {
		if err := sync(); err != nil {
			return err
		}
		for i := first; i < first+n; i++ {
			p := C.CUdeviceptr(r.Addr + uint64(int64(i)*pageSize))
			if err := cuErr("cuMemUnmap", C.cuMemUnmap(p, C.size_t(pageSize))); err != nil {
				return err
			}
			if err := cuErr("cuMemRelease", C.cuMemRelease(r.handles[i])); err != nil {
				return err
			}
			r.handles[i] = 0
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("cuda: %s: unmapping %d pages at 0x%x: %w", b.Name(), n, addr, err)
	}
	return nil
}

// Unreserve is cuMemAddressFree of a range with no page mapped.
func (b *Backend) Unreserve(addr uint64, size int64) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	found, err := b.resv.Remove(addr, size, func(r *reservation) error {
		for j, h := range r.handles {
			if h != 0 {
				return fmt.Errorf("cuda: %s: unreserve of 0x%x with page %d still mapped", b.Name(), addr, j)
			}
		}
		if err := b.do(func() error {
			return cuErr("cuMemAddressFree", C.cuMemAddressFree(C.CUdeviceptr(addr), C.size_t(size)))
		}); err != nil {
			return fmt.Errorf("cuda: %s: %w", b.Name(), err)
		}
		return nil
	})
	if !found {
		return fmt.Errorf("cuda: %s: unreserve of %d bytes at 0x%x: not a reservation", b.Name(), size, addr)
	}
	return err
}

// ownsPagesLocked reports whether [addr, addr+n) lies in mapped pages of
// one reservation.
func (b *Backend) ownsPagesLocked(addr uint64, n int64) bool {
	_, ok := b.resv.Mapped(addr, n)
	return ok
}
