// Package doublebuffer is exercise 05-double-buffer: feed batches to the
// device so that the copy of the next batch overlaps the compute of the
// current one.
package doublebuffer

import (
	"errors"

	"github.com/gpumem/course/gpukit/device"
)

// Run feeds every batch of host to compute, in order, on d: see README.md.
func Run(d *device.Device, host []*device.HostBuffer, compute Compute) error {
	// Your code here.
	return errors.New("doublebuffer: Run: not implemented yet")
}
