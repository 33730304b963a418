package data

import (
	"fmt"
	"math"
	"slices"
	"unsafe"

	"github.com/gpumem/course/gpukit/alloc"
	"github.com/gpumem/course/gpukit/device"
)

// CopyToHostChunked copies n bytes of src, from byte offset 0, into dst in
// chunks of at most chunk bytes, each an asynchronous copy on stream s
// (dst should be page-locked: Pin a HostBuffer). It records s on src, so
// that src may be freed right after the call: the allocator keeps it until
// the copies are done. The host must synchronize s before reading dst.
func CopyToHostChunked(d *device.Device, dst *device.HostBuffer, src *alloc.Block, chunk int64, s alloc.Stream) error {
	if d == nil || dst == nil || src == nil {
		return fmt.Errorf("data: CopyToHostChunked: nil device, buffer or block")
	}
	if chunk <= 0 {
		return fmt.Errorf("data: CopyToHostChunked: chunk of %d bytes; it must be positive", chunk)
	}
	n := int64(len(dst.Bytes))
	if n > src.Size() {
		return fmt.Errorf("data: CopyToHostChunked: %d host bytes but the block holds %d", n, src.Size())
	}
	for off := int64(0); off < n; off += chunk {
		m := min(chunk, n-off)
		if err := d.CopyToHost(dst.Bytes[off:off+m], src, off, dst.Pinned, s, true); err != nil {
			return fmt.Errorf("data: CopyToHostChunked at byte %d: %w", off, err)
		}
	}
	d.RecordStream(src, s)
	return nil
}

// ChunkFunc computes the output rows of one chunk on the device's default
// stream: out holds rows×outRow float32 values, in rows×inRow.
type ChunkFunc func(d *device.Device, in *alloc.Block, out *alloc.Block, rows int) error

// MapStats describes a MapChunks run.
type MapStats struct {
	Chunks       int   // number of chunks
	RowsPerChunk int   // rows in each chunk but the last
	PeakBytes    int64 // the allocator's peak allocated bytes during the run
}

// MapChunks runs fn over every item of ds (rows of inRow values each),
// chunk by chunk, so that an input larger than the device (and than the
// host memory you want to spend) can be processed: only one chunk of
// input is in host memory at a time, in a page-locked staging buffer.
// Chunks are sized so that one chunk's input and output blocks and the
// previous chunk's output, still being copied back, fit in budget bytes
// of device memory. Inputs go to the device on the default stream;
// outputs come back on a copy stream of their own into page-locked host
// memory, overlapping the next chunk's compute, and at most one output is
// in flight. It returns the outputs (ds.Len()×outRow values, copied out of
// the page-locked buffer, which is freed) and the run's statistics; the
// allocator's peak is reset at the start, so PeakBytes is this run's.
func MapChunks(d *device.Device, ds Dataset, outRow int, budget int64, fn ChunkFunc) ([]float32, MapStats, error) {
	var st MapStats
	if d == nil || ds == nil || fn == nil {
		return nil, st, fmt.Errorf("data: MapChunks: nil device, data set or function")
	}
	rows := ds.Len()
	if rows == 0 {
		return nil, st, nil
	}
	first, err := ds.Item(0)
	if err != nil {
		return nil, st, fmt.Errorf("data: MapChunks: item 0: %w", err)
	}
	inRow := len(first.Data)
	if inRow <= 0 || outRow <= 0 {
		return nil, st, fmt.Errorf("data: MapChunks: row sizes %d and %d must be positive", inRow, outRow)
	}
	if int64(rows) > math.MaxInt64/4/int64(max(outRow, inRow)) {
		return nil, st, fmt.Errorf("data: MapChunks: %d rows of %d values overflow", rows, max(inRow, outRow))
	}
	// A chunk of r rows holds an input block and an output block, and the
	// previous output may still be in flight: the largest r whose blocks,
	// as the allocator counts them, fit the budget.
	footprint := func(r int64) int64 {
		return allocatedSize(4*r*int64(inRow)) + 2*allocatedSize(4*r*int64(outRow))
	}
	if footprint(1) > budget {
		return nil, st, fmt.Errorf("data: MapChunks: a budget of %d bytes cannot hold one row (%d bytes with the output in flight)", budget, footprint(1))
	}
	lo, hi := int64(1), int64(rows) // footprint(lo) fits
	for lo < hi {
		mid := lo + (hi-lo+1)/2
		if footprint(mid) <= budget {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	st.RowsPerChunk = int(lo)
	outBuf, err := d.HostAlloc(int64(rows)*int64(outRow)*4, true)
	if err != nil {
		return nil, st, err
	}
	defer outBuf.Free()
	pinnedOut := unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(outBuf.Bytes))), rows*outRow)
	stage, err := d.HostAlloc(4*int64(st.RowsPerChunk)*int64(inRow), true)
	if err != nil {
		return nil, st, err
	}
	defer stage.Free()
	staged := unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(stage.Bytes))), st.RowsPerChunk*inRow)
	copyS := d.NewStream()
	// Copies still queued must end before the host buffers are freed, on
	// every return.
	defer d.StreamSynchronize(copyS)
	d.ResetPeakStats()
	var inflight *device.Event // the previous chunk's copy back
	for lo := 0; lo < rows; lo += st.RowsPerChunk {
		r := min(st.RowsPerChunk, rows-lo)
		chunk := st.Chunks
		st.Chunks++
		if reader, ok := ds.(ItemReader); ok {
			if err := reader.ReadItems(lo, r, staged[:r*inRow]); err != nil {
				return nil, st, fmt.Errorf("data: MapChunks: items [%d, %d): %w", lo, lo+r, err)
			}
		} else {
			for i := range r {
				it, err := ds.Item(lo + i)
				if err != nil {
					return nil, st, fmt.Errorf("data: MapChunks: item %d: %w", lo+i, err)
				}
				if len(it.Data) != inRow {
					return nil, st, fmt.Errorf("data: MapChunks: item %d has %d values, item 0 has %d", lo+i, len(it.Data), inRow)
				}
				copy(staged[i*inRow:], it.Data)
			}
		}
		if inflight != nil {
			inflight.Synchronize() // bound the memory: one output in flight
		}
		inBlk, err := d.Malloc(4*int64(r*inRow), d.DefaultStream())
		if err != nil {
			return nil, st, fmt.Errorf("data: MapChunks: chunk %d: %w", chunk, err)
		}
		// Synchronous: the staging buffer is refilled for the next chunk.
		if err := d.CopyToDevice(inBlk, 0, stage.Bytes[:4*r*inRow], true, d.DefaultStream(), false); err != nil {
			d.Free(inBlk)
			return nil, st, err
		}
		outBlk, err := d.Malloc(4*int64(r*outRow), d.DefaultStream())
		if err != nil {
			d.Free(inBlk)
			return nil, st, fmt.Errorf("data: MapChunks: chunk %d: %w", chunk, err)
		}
		err = fn(d, inBlk, outBlk, r)
		d.Free(inBlk)
		if err != nil {
			d.Free(outBlk)
			return nil, st, fmt.Errorf("data: MapChunks: chunk %d: %w", chunk, err)
		}
		d.WaitEvent(copyS, d.RecordEvent(d.DefaultStream()))
		dst := device.HostBuffer{Bytes: outBuf.Bytes[4*lo*outRow : 4*(lo+r)*outRow], Pinned: true}
		if err := CopyToHostChunked(d, &dst, outBlk, 4<<20, copyS); err != nil {
			d.Free(outBlk)
			return nil, st, err
		}
		d.Free(outBlk) // recorded on copyS: kept until its copy is done
		inflight = d.RecordEvent(copyS)
	}
	d.StreamSynchronize(copyS)
	st.PeakBytes = d.MaxMemoryAllocated()
	return slices.Clone(pinnedOut), st, nil
}

// allocatedSize bounds what the caching allocator counts as allocated for
// a request of n bytes: n rounded up to 512 B, and for requests above
// 1 MiB up to 2 MiB, since a large block is not split when less than
// 1 MiB would remain and large segments are rounded to 2 MiB.
func allocatedSize(n int64) int64 {
	const small, large = 512, 2 << 20
	if n > 1<<20 {
		return (n + large - 1) / large * large
	}
	return (n + small - 1) / small * small
}
