// Package chunked is exercise 05-chunked-inference: run a model over an
// input larger than the device, chunk by chunk, within a memory budget.
package chunked

import (
	"errors"

	"github.com/gpumem/course/gpukit/device"
)

// Infer runs model over every row of input on d within budget bytes of
// device memory: see README.md.
func Infer(d *device.Device, input []float32, inWidth, outWidth int, model Model, budget int64) ([]float32, error) {
	// Your code here.
	return nil, errors.New("chunked: Infer: not implemented yet")
}
