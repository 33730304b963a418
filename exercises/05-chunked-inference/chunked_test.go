package chunked

import (
	"fmt"
	"strings"
	"testing"
	"unsafe"

	"github.com/gpumem/course/gpukit/alloc"
	"github.com/gpumem/course/gpukit/device"
	"github.com/gpumem/course/gpukit/device/simtest"
	"github.com/gpumem/course/gpukit/tensor/tensortest"
)

// card returns a fresh simulated card with the classroom figures and the
// given capacity.
func card(t *testing.T, capacity int64) *device.Device {
	t.Helper()
	return simtest.Card(t, simtest.Capacity(capacity), simtest.Named("small"))
}

func floats(d *device.Device, b *alloc.Block, n int) []float32 {
	return unsafe.Slice((*float32)(unsafe.Pointer(&d.Bytes(b)[0])), n)
}

// sumPlus is a model with outWidth outputs per row: the row's sum plus the
// output's index. It counts the rows it was given and keeps the largest
// chunk.
func sumPlus(inWidth, outWidth int, seen, largest *int) Model {
	return func(d *device.Device, in, out *alloc.Block, rows int) {
		*seen += rows
		*largest = max(*largest, rows)
		x, y := floats(d, in, rows*inWidth), floats(d, out, rows*outWidth)
		for i := range rows {
			var s float32
			for _, v := range x[i*inWidth : (i+1)*inWidth] {
				s += v
			}
			for j := range outWidth {
				y[i*outWidth+j] = s + float32(j)
			}
		}
		d.Launch(d.DefaultStream(), device.Kernel{Name: "sum-plus", Bytes: int64(4 * rows * (inWidth + outWidth))})
	}
}

// rowsText is "1 row" or "n rows".
func rowsText(n int) string {
	if n == 1 {
		return "1 row"
	}
	return fmt.Sprintf("%d rows", n)
}

// values makes rows of width small whole numbers (so sums are exact).
func values(rows, width int) []float32 {
	in := make([]float32, rows*width)
	for i := range in {
		in[i] = float32((i*5 + i/width) % 17)
	}
	return in
}

// checkSumPlus checks Infer's outputs against sumPlus's, row by row.
func checkSumPlus(t *testing.T, what string, in, out []float32, inWidth, outWidth int) bool {
	t.Helper()
	rows := len(in) / inWidth
	if len(out) != rows*outWidth {
		t.Errorf("%s: %d outputs for %d rows of %d outputs", what, len(out), rows, outWidth)
		return false
	}
	for i := range rows {
		var s float32
		for _, v := range in[i*inWidth : (i+1)*inWidth] {
			s += v
		}
		for j := range outWidth {
			if got, want := out[i*outWidth+j], s+float32(j); got != want {
				t.Errorf("%s: row %d, output %d: got %v, want %v", what, i, j, got, want)
				return false
			}
		}
	}
	return true
}

// The grader's TestOutputsMatchTheModel runs another model, input and
// budgets: outputs are the model's, row by row, each row seen once, for
// several budgets and a row count that is not a multiple of the chunk.
func TestRowSums(t *testing.T) {
	tensortest.NoCollector(t)
	const rows, width = 1000, 256
	input := make([]float32, rows*width)
	for i := range input {
		input[i] = float32(i % 13)
	}
	for _, budget := range []int64{6 << 10, 256 << 10, 2<<20 + 300<<10, 48 << 20} {
		d := card(t, 64<<20)
		seen, largest := 0, 0
		out, err := Infer(d, input, width, 1, sumPlus(width, 1, &seen, &largest), budget)
		if err != nil {
			t.Fatalf("budget %d bytes: %v", budget, err)
		}
		if seen != rows {
			t.Fatalf("budget %d bytes: the model saw %d rows, want each of %d once", budget, seen, rows)
		}
		checkSumPlus(t, fmt.Sprintf("budget %d bytes", budget), input, out, width, 1)
	}
}

// The public twin of the grader's TestPeakWithinBudget, on other widths and
// budgets: the allocator's peak allocated bytes stay within the budget,
// with chunks at least half as large as the budget allows (as asked,
// before the allocator's rounding), and nothing stays allocated.
func TestPeakWithinBudgetPublic(t *testing.T) {
	tensortest.NoCollector(t)
	const rows, inWidth, outWidth = 5000, 768, 3
	in := values(rows, inWidth)
	for _, budget := range []int64{48 << 10, 900 << 10, 2<<20 + 512<<10, 7<<20 + 1000, 13<<20 + 300<<10} {
		d := card(t, 64<<20)
		d.ResetPeakStats()
		seen, largest := 0, 0
		out, err := Infer(d, in, inWidth, outWidth, sumPlus(inWidth, outWidth, &seen, &largest), budget)
		if err != nil {
			t.Fatalf("budget %d bytes: %v", budget, err)
		}
		checkSumPlus(t, fmt.Sprintf("budget %d bytes", budget), in, out, inWidth, outWidth)
		if peak := d.MaxMemoryAllocated(); peak > budget {
			t.Errorf("budget %d bytes: the allocator's peak was %d bytes", budget, peak)
		}
		if upper := int(budget / (4 * (inWidth + outWidth))); largest < min(rows, upper/2) {
			t.Errorf("budget %d bytes: the largest chunk had %s; the budget holds up to %d rows as asked, so chunks of at least %d rows fit: use chunks as large as the budget allows", budget, rowsText(largest), upper, upper/2)
		}
		if got := d.MemoryAllocated(); got != 0 {
			t.Errorf("budget %d bytes: %d bytes still allocated after Infer", budget, got)
		}
	}
}

// The public twin of the grader's TestLargestChunk, on other widths and
// budgets: where the allocator counts the blocks exactly (at most 1 MiB,
// or a whole 2 MiB), a budget that holds a chunk's two blocks exactly gives
// chunks of exactly that many rows, and a wide output counts too.
func TestLargestChunkPublic(t *testing.T) {
	tensortest.NoCollector(t)
	for _, c := range []struct {
		what              string
		inWidth, outWidth int
		budget            int64
		chunk             int
	}{
		{"64 values in and out, 256 B a row each", 64, 64, 76800, 150},
		{"an output block of exactly 1 MiB", 64, 256, 1<<20 + 256<<10, 1024},
		{"an input block of exactly 2 MiB", 1024, 8, 2<<20 + 16384, 512},
		{"3 values in, 768 out (a wide output)", 3, 768, 1 << 20, 340},
	} {
		d := card(t, 64<<20)
		d.ResetPeakStats()
		in := values(3*c.chunk, c.inWidth)
		seen, largest := 0, 0
		out, err := Infer(d, in, c.inWidth, c.outWidth, sumPlus(c.inWidth, c.outWidth, &seen, &largest), c.budget)
		if err != nil {
			t.Errorf("%s, budget %d bytes: %v", c.what, c.budget, err)
			continue
		}
		if seen != 3*c.chunk {
			t.Errorf("%s: the model saw %d rows, want each of %d once", c.what, seen, 3*c.chunk)
			continue
		}
		if !checkSumPlus(t, c.what, in, out, c.inWidth, c.outWidth) {
			continue
		}
		if peak := d.MaxMemoryAllocated(); peak > c.budget {
			t.Errorf("%s, budget %d bytes: the allocator's peak was %d bytes", c.what, c.budget, peak)
		}
		if largest != c.chunk {
			t.Errorf("%s, budget %d bytes: the largest chunk had %s; the budget holds the two blocks of %d rows exactly, as the allocator counts them (and not one more row): use the largest chunk that fits", c.what, c.budget, rowsText(largest), c.chunk)
		}
	}
}

// The public twin of the grader's TestInputLargerThanDevice: 80 MiB of
// input through a 48 MiB card within a 6 MiB budget.
func TestInputLargerThanCard(t *testing.T) {
	tensortest.NoCollector(t)
	const inWidth, outWidth = 512, 2
	rows := (80 << 20) / (4 * inWidth)
	in := values(rows, inWidth)
	d := card(t, 48<<20)
	d.ResetPeakStats()
	seen, largest := 0, 0
	out, err := Infer(d, in, inWidth, outWidth, sumPlus(inWidth, outWidth, &seen, &largest), 6<<20)
	if err != nil {
		t.Fatal(err)
	}
	checkSumPlus(t, "80 MiB of input", in, out, inWidth, outWidth)
	if peak := d.MaxMemoryAllocated(); peak > 6<<20 {
		t.Errorf("the allocator's peak was %d bytes, the budget 6 MiB (%d bytes)", peak, 6<<20)
	}
}

// The public twin of the grader's TestBadArguments, on other sizes: a
// budget too small for one row's two blocks, an input that is not whole
// rows, and a width of 0 or less are errors, not panics; a valid call
// still works.
func TestBadArgumentsPublic(t *testing.T) {
	tensortest.NoCollector(t)
	d := card(t, 64<<20)
	seen, largest := 0, 0
	in := values(12, 48)
	out, err := Infer(d, in, 48, 3, sumPlus(48, 3, &seen, &largest), 64<<10)
	if err != nil {
		t.Fatalf("a valid call: %v", err)
	}
	checkSumPlus(t, "a valid call", in, out, 48, 3)
	if _, err := Infer(d, in, 48, 3, sumPlus(48, 3, &seen, &largest), 700); err == nil {
		t.Error("a budget of 700 bytes cannot hold one row (an input and an output block of 512 bytes each, as the allocator counts them), yet Infer returned no error")
	}
	if _, err := Infer(d, in[:7*48+5], 48, 3, sumPlus(48, 3, &seen, &largest), 64<<10); err == nil || !strings.Contains(err.Error(), "row") {
		t.Errorf("%d values are not whole rows of 48: got %v, want an error about rows", 7*48+5, err)
	}
	for _, w := range []struct{ in, out int }{{0, 3}, {-48, 3}, {48, 0}, {48, -1}} {
		p, err := func() (panicked any, err error) {
			defer func() { panicked = recover() }()
			_, err = Infer(d, in, w.in, w.out, sumPlus(max(w.in, 1), max(w.out, 1), &seen, &largest), 64<<10)
			return nil, err
		}()
		if p != nil {
			t.Errorf("input width %d, output width %d: Infer panicked (%v); want an error: widths must be positive", w.in, w.out, p)
		} else if err == nil {
			t.Errorf("input width %d, output width %d: no error; want one: widths must be positive", w.in, w.out)
		}
	}
}
