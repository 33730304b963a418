package chunked

import (
	"testing"
	"unsafe"

	"github.com/gpumem/course/gpukit/alloc"
	"github.com/gpumem/course/gpukit/device"
	"github.com/gpumem/course/gpukit/device/sim"
)

// card returns a fresh simulated card with the classroom figures and the
// given capacity.
func card(t *testing.T, capacity int64) *device.Device {
	p, err := device.LookupProfile("classroom")
	if err != nil {
		t.Fatal(err)
	}
	p = p.Resized(capacity) // a made-up card: all of it is ours
	p.Name = "small"
	d, err := device.New(sim.New(0, p))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func floats(d *device.Device, b *alloc.Block, n int) []float32 {
	return unsafe.Slice((*float32)(unsafe.Pointer(&d.Bytes(b)[0])), n)
}

// rowSum is a model with one output per row: the sum of the row.
func rowSum(width int) Model {
	return func(d *device.Device, in, out *alloc.Block, rows int) {
		x, y := floats(d, in, rows*width), floats(d, out, rows)
		for i := range rows {
			var s float32
			for _, v := range x[i*width : (i+1)*width] {
				s += v
			}
			y[i] = s
		}
		d.Launch(d.DefaultStream(), device.Kernel{Name: "row-sum", Bytes: int64(4 * rows * (width + 1))})
	}
}

func TestRowSums(t *testing.T) {
	d := card(t, 64<<20)
	const rows, width = 1000, 256
	input := make([]float32, rows*width)
	for i := range input {
		input[i] = float32(i % 13)
	}
	out, err := Infer(d, input, width, 1, rowSum(width), 256<<10)
	if err != nil {
		t.Fatal(err)
	}
	for i := range rows {
		var s float32
		for _, v := range input[i*width : (i+1)*width] {
			s += v
		}
		if out[i] != s {
			t.Fatalf("row %d: got %v, want %v", i, out[i], s)
		}
	}
}
