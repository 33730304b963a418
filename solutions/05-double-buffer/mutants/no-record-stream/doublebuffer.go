// Mutant: blocks are freed without recording the compute stream on them.

// Package doublebuffer is exercise 05-double-buffer: feed batches to the
// device so that the copy of the next batch overlaps the compute of the
// current one.
package doublebuffer

import (
	"fmt"

	"github.com/gpumem/course/gpukit/alloc"
	"github.com/gpumem/course/gpukit/device"
)

// Run feeds every batch of host to compute, in order, on d: see README.md.
func Run(d *device.Device, host []*device.HostBuffer, compute Compute) error {
	for k, h := range host {
		if h == nil || len(h.Bytes) == 0 {
			return fmt.Errorf("doublebuffer: batch %d is empty", k)
		}
	}
	if len(host) == 0 {
		return nil
	}
	copyS, computeS := d.NewStream(), d.DefaultStream()
	type inFlight struct {
		block *alloc.Block
		ready *device.Event
	}
	// issue allocates batch k's block on the copy stream and queues its copy.
	issue := func(k int) (inFlight, error) {
		blk, err := d.Malloc(int64(len(host[k].Bytes)), copyS)
		if err != nil {
			return inFlight{}, fmt.Errorf("doublebuffer: batch %d: %w", k, err)
		}
		if err := d.CopyToDevice(blk, 0, host[k].Bytes, host[k].Pinned, copyS, true); err != nil {
			d.Free(blk)
			return inFlight{}, fmt.Errorf("doublebuffer: batch %d: %w", k, err)
		}
		return inFlight{blk, d.RecordEvent(copyS)}, nil
	}
	next, err := issue(0)
	if err != nil {
		return err
	}
	for k := range host {
		cur := next
		if k+1 < len(host) {
			if next, err = issue(k + 1); err != nil {
				d.Free(cur.block)
				return err
			}
		}
		d.WaitEvent(computeS, cur.ready) // compute waits for this batch only
		compute(cur.block, k)
		d.Free(cur.block)
	}
	return nil
}
