package data

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/gpumem/course/gpukit/alloc"
	"github.com/gpumem/course/gpukit/device"
)

// Source is what a Prefetcher reads host batches from: an *Epoch.
type Source interface {
	Next() (*Batch, error)
}

// Prefetcher copies batches to a device on a copy stream of its own while
// the consumer computes on another stream (double buffering at depth 2,
// triple at 3): up to depth batches are in flight or ready.
//
// Each batch's block is allocated on the copy stream and filled there; an
// event recorded after the copy makes the compute stream, and only it,
// wait for that batch. Release records the compute stream on the block
// (RecordStream), so that the allocator does not hand the block to the
// next copy until the compute queued on it so far is done.
type Prefetcher struct {
	d       *device.Device
	src     Source
	copyS   alloc.Stream
	compute alloc.Stream
	depth   int
	queue   []*DeviceBatch
	retired []*DeviceBatch // released, host memory not yet freed
	err     error
	closed  bool
}

// DeviceBatch is a batch on the device.
type DeviceBatch struct {
	Number  int
	Indices []int
	Shape   []int
	Block   *alloc.Block // the values, float32, row-major

	host   *Batch
	issued *device.Event // on the copy stream, before the copy
	ready  *device.Event // on the copy stream, after the copy
	p      *Prefetcher
	copied int64
}

// NewPrefetcher returns a prefetcher of the given depth (2 or more) that
// reads src, copies on a new stream of d and serves batches to work queued
// on compute. Host batches should be pinned (Options.Pin): a copy from
// pageable memory blocks the host, and nothing overlaps.
func NewPrefetcher(d *device.Device, src Source, compute alloc.Stream, depth int) (*Prefetcher, error) {
	if d == nil || src == nil {
		return nil, fmt.Errorf("data: NewPrefetcher: nil device or source")
	}
	if depth < 2 {
		return nil, fmt.Errorf("data: NewPrefetcher: depth %d; use 2 for double buffering, 3 for triple", depth)
	}
	return &Prefetcher{d: d, src: src, copyS: d.NewStream(), compute: compute, depth: depth}, nil
}

// CopyStream returns the stream the prefetcher copies on.
func (p *Prefetcher) CopyStream() alloc.Stream { return p.copyS }

// issue reads the next host batch and queues its copy.
func (p *Prefetcher) issue() error {
	hb, err := p.src.Next()
	if err != nil {
		return err
	}
	if hb == nil {
		return errors.New("data: prefetch: the source returned neither a batch nor an error")
	}
	n := int64(len(hb.Data)) * 4
	issued := p.d.RecordEvent(p.copyS)
	blk, err := p.d.Malloc(n, p.copyS)
	if err != nil {
		hb.Release()
		return fmt.Errorf("data: prefetch batch %d: %w", hb.Number, err)
	}
	if n > 0 {
		if err := p.d.CopyToDevice(blk, 0, hb.Bytes(), hb.Pinned(), p.copyS, true); err != nil {
			p.d.Free(blk)
			hb.Release()
			return fmt.Errorf("data: prefetch batch %d: %w", hb.Number, err)
		}
	}
	p.queue = append(p.queue, &DeviceBatch{
		Number: hb.Number, Indices: hb.Indices, Shape: hb.Shape, Block: blk,
		host: hb, issued: issued, ready: p.d.RecordEvent(p.copyS), p: p, copied: n,
	})
	return nil
}

// Next returns the next batch, once the compute stream has been told to
// wait for its copy; it keeps depth-1 further copies queued. It returns
// io.EOF after the last batch and the source's error if it fails.
func (p *Prefetcher) Next() (*DeviceBatch, error) {
	if p.closed {
		return nil, ErrClosed
	}
	for p.err == nil && len(p.queue) < p.depth {
		if err := p.issue(); err != nil {
			p.err = err
		}
	}
	if len(p.queue) == 0 {
		return nil, p.err
	}
	b := p.queue[0]
	p.queue = p.queue[1:]
	p.d.WaitEvent(p.compute, b.ready)
	return b, nil
}

// CopyEvents returns events recorded on the copy stream just before and
// just after the batch's copy: on sim, ElapsedSince places the copy on the
// timeline.
func (b *DeviceBatch) CopyEvents() (start, end *device.Event) { return b.issued, b.ready }

// Float32s returns the batch's values on a sim device (nil elsewhere, and
// after Release): they alias device memory.
func (b *DeviceBatch) Float32s() []float32 {
	if b.p == nil || b.Block == nil {
		return nil
	}
	raw := b.p.d.Bytes(b.Block)
	if len(raw) < 4 || b.copied == 0 {
		return nil
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(&raw[0])), b.copied/4)
}

// Release frees the batch: its block goes back to the allocator, recorded
// on the compute stream so that it is not reused before the work queued
// there is done; its host memory is freed once its copy has ended.
func (b *DeviceBatch) Release() { b.release(true) }

// ReleaseWithoutRecordStream frees the block the way the source notes'
// double buffering does, without RecordStream: the allocator may hand it
// to the next copy while the compute stream still uses it. It exists to
// show COURSE.md's mistake 9; do not use it otherwise.
func (b *DeviceBatch) ReleaseWithoutRecordStream() { b.release(false) }

func (b *DeviceBatch) release(record bool) {
	if b.Block == nil {
		return
	}
	if record {
		b.p.d.RecordStream(b.Block, b.p.compute)
	}
	b.p.d.Free(b.Block)
	b.Block = nil
	// The host batch may be freed once its copy has read it; until then it
	// waits in retired, without stalling the host.
	b.p.retired = append(b.p.retired, b)
	b.p.reap(false)
}

// reap frees the host batches whose copies have ended (all, when wait).
func (p *Prefetcher) reap(wait bool) {
	kept := p.retired[:0]
	for _, b := range p.retired {
		if wait {
			b.ready.Synchronize()
		}
		if b.ready.Query() {
			b.host.Release()
		} else {
			kept = append(kept, b)
		}
	}
	clear(p.retired[len(kept):])
	p.retired = kept
}

// Close releases the batches still queued.
func (p *Prefetcher) Close() error {
	if p.closed {
		return nil
	}
	p.closed = true
	for _, b := range p.queue {
		b.Release()
	}
	p.queue = nil
	p.reap(true)
	return nil
}
