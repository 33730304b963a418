package chunked

import (
	"strings"
	"testing"
	"unsafe"

	"github.com/gpumem/course/gpukit/alloc"
	"github.com/gpumem/course/gpukit/device"
	"github.com/gpumem/course/gpukit/device/simtest"
	"github.com/gpumem/course/gpukit/tensor/tensortest"
)

func card(t *testing.T, capacity int64) *device.Device {
	t.Helper()
	return simtest.Card(t, simtest.Capacity(capacity), simtest.Named("small"))
}

func floats(d *device.Device, b *alloc.Block, n int) []float32 {
	return unsafe.Slice((*float32)(unsafe.Pointer(&d.Bytes(b)[0])), n)
}

// stats is a model with two outputs per row, sum and maximum; it counts
// the rows it was given.
func stats(width int, seen *int) Model {
	return chunks(width, seen, new(int))
}

// chunks is stats that also keeps the largest chunk it was given.
func chunks(width int, seen, largest *int) Model {
	return func(d *device.Device, in, out *alloc.Block, rows int) {
		*seen += rows
		*largest = max(*largest, rows)
		x, y := floats(d, in, rows*width), floats(d, out, 2*rows)
		for i := range rows {
			var s, m float32
			for _, v := range x[i*width : (i+1)*width] {
				s += v
				m = max(m, v)
			}
			y[2*i], y[2*i+1] = s, m
		}
		d.Launch(d.DefaultStream(), device.Kernel{Name: "stats", Bytes: int64(4 * rows * (width + 2))})
	}
}

func input(rows, width int) []float32 {
	in := make([]float32, rows*width)
	for i := range in {
		in[i] = float32((i*7 + i/width) % 101)
	}
	return in
}

func checkOutputs(t *testing.T, in, out []float32, width int) {
	t.Helper()
	rows := len(in) / width
	if len(out) != 2*rows {
		t.Fatalf("%d outputs for %d rows of 2", len(out), rows)
	}
	for i := range rows {
		var s, m float32
		for _, v := range in[i*width : (i+1)*width] {
			s += v
			m = max(m, v)
		}
		if out[2*i] != s || out[2*i+1] != m {
			t.Fatalf("row %d: got (%v, %v), want (%v, %v)", i, out[2*i], out[2*i+1], s, m)
		}
	}
}

// TestOutputsMatchTheModel: outputs are the model's, row by row, for
// several budgets and a row count that is not a multiple of the chunk.
func TestOutputsMatchTheModel(t *testing.T) {
	tensortest.NoCollector(t)
	const rows, width = 1237, 300
	in := input(rows, width)
	for _, budget := range []int64{8 << 10, 200 << 10, 3 << 20, 64 << 20} {
		d := card(t, 64<<20)
		seen := 0
		out, err := Infer(d, in, width, 2, stats(width, &seen), budget)
		if err != nil {
			t.Fatalf("budget %d: %v", budget, err)
		}
		if seen != rows {
			t.Fatalf("budget %d: the model saw %d rows, want each of %d once", budget, seen, rows)
		}
		checkOutputs(t, in, out, width)
	}
}

// TestPeakWithinBudget: the allocator's peak allocated bytes during Infer
// stay within the budget (small and large budgets, where the allocator
// rounds blocks differently), with chunks as large as the budget allows:
// at least half the rows whose input and output bytes, as asked, fill the
// budget (the allocator's rounding costs less than that).
func TestPeakWithinBudget(t *testing.T) {
	tensortest.NoCollector(t)
	const rows, width = 4000, 1024
	in := input(rows, width)
	for _, budget := range []int64{64 << 10, 1 << 20, 3 << 20, 5<<20 + 4096, 11<<20 + 600<<10} {
		d := card(t, 64<<20)
		d.ResetPeakStats()
		seen, largest := 0, 0
		out, err := Infer(d, in, width, 2, chunks(width, &seen, &largest), budget)
		if err != nil {
			t.Fatalf("budget %d: %v", budget, err)
		}
		checkOutputs(t, in, out, width)
		if peak := d.MaxMemoryAllocated(); peak > budget {
			t.Errorf("budget %d bytes: the allocator's peak was %d bytes", budget, peak)
		}
		if upper := int(budget / (4 * (width + 2))); largest < min(rows, upper/2) {
			t.Errorf("budget %d bytes: the largest chunk had %d rows; the budget holds up to %d rows as asked, so chunks of at least %d rows fit: use chunks as large as the budget allows", budget, largest, upper, upper/2)
		}
		if d.MemoryAllocated() != 0 {
			t.Errorf("budget %d: %d bytes still allocated after Infer", budget, d.MemoryAllocated())
		}
	}
}

// TestInputLargerThanDevice: 96 MiB of input through a 64 MiB card with
// an 8 MiB budget.
func TestInputLargerThanDevice(t *testing.T) {
	tensortest.NoCollector(t)
	const width = 1024
	rows := (96 << 20) / (4 * width)
	in := input(rows, width)
	d := card(t, 64<<20)
	d.ResetPeakStats()
	seen := 0
	out, err := Infer(d, in, width, 2, stats(width, &seen), 8<<20)
	if err != nil {
		t.Fatal(err)
	}
	checkOutputs(t, in, out, width)
	if peak := d.MaxMemoryAllocated(); peak > 8<<20 {
		t.Errorf("peak allocated %d bytes, budget 8 MiB", peak)
	}
}

// TestBadArguments: a budget too small for one row, and an input that is
// not whole rows, are errors; a valid call still works.
func TestBadArguments(t *testing.T) {
	tensortest.NoCollector(t)
	d := card(t, 64<<20)
	seen := 0
	in := input(10, 64)
	out, err := Infer(d, in, 64, 2, stats(64, &seen), 1<<20)
	if err != nil {
		t.Fatalf("valid call: %v", err)
	}
	checkOutputs(t, in, out, 64)
	if _, err := Infer(d, in, 64, 2, stats(64, &seen), 100); err == nil {
		t.Error("a budget of 100 bytes cannot hold one row, yet Infer returned no error")
	}
	if _, err := Infer(d, in[:100], 64, 2, stats(64, &seen), 1<<20); err == nil || !strings.Contains(err.Error(), "row") {
		t.Errorf("100 values are not whole rows of 64: got %v, want an error about rows", err)
	}
	for _, w := range []struct{ in, out int }{{0, 2}, {-64, 2}, {64, 0}, {64, -2}} {
		p, err := inferOrPanic(d, in, w.in, w.out, 1<<20)
		if p != nil {
			t.Errorf("input width %d, output width %d: Infer panicked (%v); want an error: widths must be positive", w.in, w.out, p)
		} else if err == nil {
			t.Errorf("input width %d, output width %d: no error; want one: widths must be positive", w.in, w.out)
		}
	}
}

// TestLargestChunk: where the allocator counts the blocks exactly (at
// most 1 MiB, or a whole 2 MiB), a budget that holds a chunk's two blocks
// exactly gives chunks of exactly that many rows, and a wide output is
// counted too. Each input is a whole number of such chunks.
func TestLargestChunk(t *testing.T) {
	tensortest.NoCollector(t)
	for _, c := range []struct {
		what              string
		inWidth, outWidth int
		budget            int64
		chunk             int
	}{
		{"128 values in and out, 512 B a row each", 128, 128, 102400, 100},
		{"an input block of exactly 1 MiB", 256, 128, 1<<20 + 512<<10, 1024},
		{"an input block of exactly 2 MiB", 512, 2, 2<<20 + 8192, 1024},
		{"2 values in, 1024 out (a wide output)", 2, 1024, 1 << 20, 255},
	} {
		d := card(t, 64<<20)
		d.ResetPeakStats()
		in := input(3*c.chunk, c.inWidth)
		seen, largest := 0, 0
		model := func(d *device.Device, x, y *alloc.Block, rows int) {
			seen += rows
			largest = max(largest, rows)
			xs, ys := floats(d, x, rows*c.inWidth), floats(d, y, rows*c.outWidth)
			for i := range rows {
				for j := range c.outWidth {
					ys[i*c.outWidth+j] = xs[i*c.inWidth] + float32(j)
				}
			}
		}
		out, err := Infer(d, in, c.inWidth, c.outWidth, model, c.budget)
		if err != nil {
			t.Errorf("%s, budget %d bytes: %v", c.what, c.budget, err)
			continue
		}
		if len(out) != 3*c.chunk*c.outWidth || seen != 3*c.chunk {
			t.Errorf("%s: %d outputs, the model saw %d rows; want %d outputs, each of %d rows once", c.what, len(out), seen, 3*c.chunk*c.outWidth, 3*c.chunk)
			continue
		}
		for i := range 3 * c.chunk {
			if got, want := out[i*c.outWidth+c.outWidth-1], in[i*c.inWidth]+float32(c.outWidth-1); got != want {
				t.Errorf("%s: row %d's last output is %v, want %v", c.what, i, got, want)
				break
			}
		}
		if peak := d.MaxMemoryAllocated(); peak > c.budget {
			t.Errorf("%s, budget %d bytes: the allocator's peak was %d bytes", c.what, c.budget, peak)
		}
		if largest != c.chunk {
			t.Errorf("%s, budget %d bytes: the largest chunk had %d rows; the budget holds the two blocks of %d rows exactly, as the allocator counts them (and not one more row): use the largest chunk that fits", c.what, c.budget, largest, c.chunk)
		}
	}
}

// inferOrPanic is Infer, with a panic returned as what it is.
func inferOrPanic(d *device.Device, in []float32, inWidth, outWidth int, budget int64) (panicked any, err error) {
	defer func() { panicked = recover() }()
	seen := 0
	_, err = Infer(d, in, inWidth, outWidth, stats(max(inWidth, 1), &seen), budget)
	return nil, err
}
