package chunked

import (
	"github.com/gpumem/course/gpukit/alloc"
	"github.com/gpumem/course/gpukit/device"
)

// Model computes the outputs of rows input rows on d's default stream: in
// holds rows×inWidth float32 values, out receives rows×outWidth.
type Model func(d *device.Device, in, out *alloc.Block, rows int)
