// Mutant: only the input block is counted against the budget.

// Package chunked is exercise 05-chunked-inference: run a model over an
// input larger than the device, chunk by chunk, within a memory budget.
package chunked

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/gpumem/course/gpukit/device"
)

// Infer runs model over every row of input on d within budget bytes of
// device memory: see README.md.
func Infer(d *device.Device, input []float32, inWidth, outWidth int, model Model, budget int64) ([]float32, error) {
	if inWidth <= 0 || outWidth <= 0 {
		return nil, fmt.Errorf("chunked: widths %d and %d must be positive", inWidth, outWidth)
	}
	if len(input)%inWidth != 0 {
		return nil, fmt.Errorf("chunked: %d input values are not whole rows of %d", len(input), inWidth)
	}
	rows := len(input) / inWidth
	// The largest chunk whose two blocks fit the budget as the allocator
	// counts them.
	fits := func(r int) bool {
		return allocated(4*int64(r)*int64(inWidth)) <= budget
	}
	if !fits(1) {
		return nil, fmt.Errorf("chunked: a budget of %d bytes cannot hold one row", budget)
	}
	lo, hi := 1, max(rows, 1)
	for lo < hi {
		mid := lo + (hi-lo+1)/2
		if fits(mid) {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	out := make([]float32, rows*outWidth)
	s := d.DefaultStream()
	for first := 0; first < rows; first += lo {
		r := min(lo, rows-first)
		in, err := d.Malloc(4*int64(r*inWidth), s)
		if err != nil {
			return nil, err
		}
		res, err := d.Malloc(4*int64(r*outWidth), s)
		if err != nil {
			d.Free(in)
			return nil, err
		}
		err = d.CopyToDevice(in, 0, bytesOf(input[first*inWidth:(first+r)*inWidth]), false, s, false)
		if err == nil {
			model(d, in, res, r)
			host := make([]byte, 4*r*outWidth)
			err = d.CopyToHost(host, res, 0, false, s, false)
			for i := range r * outWidth {
				out[first*outWidth+i] = math.Float32frombits(binary.LittleEndian.Uint32(host[4*i:]))
			}
		}
		d.Free(in)
		d.Free(res)
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// allocated is what the caching allocator counts for a request of n
// bytes: rounded up to 512 B, and above 1 MiB up to 2 MiB (a large block
// is not split when less than 1 MiB would remain in its segment).
func allocated(n int64) int64 {
	if n > 1<<20 {
		return (n + 2<<20 - 1) / (2 << 20) * (2 << 20)
	}
	return (n + 511) / 512 * 512
}

// bytesOf is v's little-endian bytes, the layout of device memory.
func bytesOf(v []float32) []byte {
	b := make([]byte, 0, 4*len(v))
	for _, x := range v {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
	}
	return b
}
