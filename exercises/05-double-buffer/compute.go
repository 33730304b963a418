package doublebuffer

import "github.com/gpumem/course/gpukit/alloc"

// Compute queues the work on batch k on the device's default stream. block
// holds the batch's bytes (the first len(host[k].Bytes) bytes of it).
type Compute func(block *alloc.Block, k int)
