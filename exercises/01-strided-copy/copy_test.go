package strided

import (
	"bytes"
	"fmt"
	"math"
	"runtime"
	"runtime/debug"
	"slices"
	"testing"
	"time"

	"github.com/gpumem/course/gpukit/alloc"
	"github.com/gpumem/course/gpukit/device/simtest"
	"github.com/gpumem/course/gpukit/tensor"
)

// counting returns n bytes 0, 1, 2, ...: byte i of an array of one-byte
// items is item i, which makes expected results easy to write.
func counting(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i)
	}
	return b
}

func TestCopyStridedBasics(t *testing.T) {
	src := counting(12) // a 3×4 matrix of one-byte items
	for _, c := range []struct {
		name           string
		shape, strides []int
		offset         int
		want           []byte
	}{
		{"contiguous", []int{3, 4}, []int{4, 1}, 0, counting(12)},
		{"transpose", []int{4, 3}, []int{1, 4}, 0, []byte{0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11}},
		{"rows 1-2, every other column from 1", []int{2, 2}, []int{4, 2}, 5, []byte{5, 7, 9, 11}},
	} {
		dst := make([]byte, len(c.want))
		if err := CopyStrided(dst, src, 1, c.shape, c.strides, c.offset); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !bytes.Equal(dst, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, dst, c.want)
		}
	}
}

func TestContiguousTensor(t *testing.T) {
	dev := simtest.Card(t)
	m := tensor.Randn([]int{30, 40}, tensor.On(dev))
	tr := m.T()
	before := dev.Stats()["allocation.all.allocated"]
	c, err := Contiguous(tr)
	if err != nil {
		t.Fatal(err)
	}
	if n := dev.Stats()["allocation.all.allocated"] - before; n != 1 {
		t.Errorf("Contiguous made %d allocations, want 1 (the result)", n)
	}
	if !c.IsContiguous() || c.SameStorage(m) {
		t.Errorf("the result must be contiguous (%v) on its own storage (shares: %v)", c.IsContiguous(), c.SameStorage(m))
	}
	for _, ij := range [][2]int{{0, 0}, {3, 7}, {39, 29}} {
		if got, want := c.At(ij[0], ij[1]), tr.At(ij[0], ij[1]); got != want {
			t.Errorf("element %v: got %g, want %g", ij, got, want)
		}
	}
}

// gcOff turns Go's collector off until the test ends, so that what the
// test measures does not depend on when a collection runs.
func gcOff(t *testing.T) {
	tensor.CollectGarbage()
	old := debug.SetGCPercent(-1)
	t.Cleanup(func() { debug.SetGCPercent(old) })
}

// pattern returns n bytes that do not repeat for a long while, so that an
// element read from the wrong place shows.
func pattern(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*37 + i/251)
	}
	return b
}

// byIndex is the layout copied the slow, obvious way: every element found
// from its full index. It is what CopyStrided must produce.
func byIndex(src []byte, itemsize int, shape, strides []int, offset int) []byte {
	numel := 1
	for _, n := range shape {
		numel *= n
	}
	out := make([]byte, 0, numel*itemsize)
	idx := make([]int, len(shape))
	for range numel {
		at := offset
		for k := range idx {
			at += idx[k] * strides[k]
		}
		out = append(out, src[at*itemsize:(at+1)*itemsize]...)
		for k := len(idx) - 1; k >= 0; k-- {
			idx[k]++
			if idx[k] < shape[k] {
				break
			}
			idx[k] = 0
		}
	}
	return out
}

// firstDifference describes where got and want first differ.
func firstDifference(got, want []byte) string {
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			return fmt.Sprintf("byte %d of the result is %d, want %d", i, got[i], want[i])
		}
	}
	return fmt.Sprintf("%d bytes, want %d", len(got), len(want))
}

// The public twin of the grader's TestEdgeLayouts, on other layouts: 0-d,
// size-0 dimensions, stride 0, permutations with offsets, 10 dimensions,
// items of 2 to 8 bytes, and nothing written past the layout's bytes
// although src goes on after it.
func TestUnusualLayouts(t *testing.T) {
	for _, c := range []struct {
		name           string
		itemsize       int
		shape, strides []int
		offset, srcLen int // srcLen in items
	}{
		{"0-d", 2, []int{}, []int{}, 3, 4},
		{"size-1 dimensions of any stride", 8, []int{1, 2, 1}, []int{50, 1, 9}, 1, 3},
		{"expanded row (stride 0)", 2, []int{4, 3}, []int{0, 1}, 1, 4},
		{"expanded column (stride 0)", 4, []int{2, 5}, []int{1, 0}, 3, 5},
		{"3-d permutation with an offset", 4, []int{4, 2, 3}, []int{1, 12, 4}, 6, 30},
		{"4-d permutation", 2, []int{2, 3, 2, 4}, []int{24, 1, 12, 3}, 0, 48},
		{"every third row, rows of stride 1", 1, []int{3, 5}, []int{15, 1}, 2, 40},
		{"contiguous with an offset, more src after it", 8, []int{3, 4}, []int{4, 1}, 5, 30},
		{"10-d, every stride reversed", 1, []int{2, 3, 2, 2, 2, 2, 2, 2, 2, 2}, []int{1, 2, 6, 12, 24, 48, 96, 192, 384, 768}, 0, 1536},
	} {
		src := pattern(c.srcLen * c.itemsize)
		want := byIndex(src, c.itemsize, c.shape, c.strides, c.offset)
		dst := bytes.Repeat([]byte{0xEE}, len(want)+2*c.itemsize) // two spare items, which must stay as they are
		if ok, err := callSafely(t, c.name, dst, src, c.itemsize, c.shape, c.strides, c.offset); !ok {
			continue
		} else if err != nil {
			t.Errorf("%s (shape %v, strides %v, offset %d): %v", c.name, c.shape, c.strides, c.offset, err)
			continue
		}
		if !bytes.Equal(dst[:len(want)], want) {
			t.Errorf("%s (shape %v, strides %v, offset %d): %s", c.name, c.shape, c.strides, c.offset, firstDifference(dst[:len(want)], want))
		}
		if !bytes.Equal(dst[len(want):], bytes.Repeat([]byte{0xEE}, 2*c.itemsize)) {
			t.Errorf("%s: wrote into dst past the layout's %d bytes: copy the layout's bytes only", c.name, len(want))
		}
	}
	// No elements: nothing to copy, nothing to read in src, no error.
	for _, shape := range [][]int{{2, 0}, {0, 4, 3}} {
		if err := CopyStrided(nil, nil, 2, shape, []int{500, 700, 900}[:len(shape)], 20); err != nil {
			t.Errorf("shape %v (no elements): %v, want no error", shape, err)
		}
	}
}

// callSafely calls CopyStrided and turns a panic into a test error (and
// ok false).
func callSafely(t *testing.T, name string, dst, src []byte, itemsize int, shape, strides []int, offset int) (ok bool, err error) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Errorf("%s: CopyStrided panicked (%v), want no panic, ever", name, r)
			ok, err = false, nil
		}
	}()
	return true, CopyStrided(dst, src, itemsize, shape, strides, offset)
}

// The public twin of the grader's TestInvalidLayouts, on other layouts:
// layouts that just fit are copied; invalid ones, and sizes that overflow
// int, are errors, never panics, and write nothing.
func TestInvalidLayoutsAreErrors(t *testing.T) {
	src := pattern(60) // 15 items of 4 bytes
	for _, c := range []struct {
		name           string
		shape, strides []int
		offset         int
	}{
		{"the whole of src", []int{5, 3}, []int{3, 1}, 0},
		{"a stride to the last item", []int{2}, []int{14}, 0},
		{"0-d at the last item", []int{}, []int{}, 14},
	} {
		want := byIndex(src, 4, c.shape, c.strides, c.offset)
		dst := make([]byte, len(want))
		if ok, err := callSafely(t, c.name, dst, src, 4, c.shape, c.strides, c.offset); !ok {
			continue
		} else if err != nil {
			t.Errorf("%s: %v, want a copy: the layout fits src and dst", c.name, err)
		} else if !bytes.Equal(dst, want) {
			t.Errorf("%s: %s", c.name, firstDifference(dst, want))
		}
	}
	const big = math.MaxInt / 3
	for _, c := range []struct {
		name           string
		dstLen         int
		itemsize       int
		shape, strides []int
		offset         int
	}{
		{"item size -1", 60, -1, []int{3}, []int{1}, 0},
		{"one size, two strides", 60, 4, []int{3}, []int{1, 1}, 0},
		{"negative stride", 60, 4, []int{2, 2}, []int{2, -1}, 3},
		{"negative size", 60, 4, []int{2, -2}, []int{2, 1}, 0},
		{"negative size after a size-0 dimension", 60, 4, []int{2, 0, -1}, []int{1, 1, 1}, 0},
		{"negative offset", 60, 4, []int{}, []int{}, -2},
		{"dst one item short", 20, 4, []int{2, 3}, []int{3, 1}, 0},
		{"the last row reads past src", 60, 4, []int{4, 3}, []int{4, 1}, 2},
		{"element count overflows", 60, 4, []int{big, 4}, []int{0, 0}, 0},
		{"a stride's step overflows", 60, 1, []int{5}, []int{big}, 0},
		{"offset plus steps overflow", 60, 1, []int{2}, []int{math.MaxInt / 2}, math.MaxInt/2 + 2},
		{"the last element's byte overflows", 60, 2, []int{4}, []int{big}, 0},
		{"the copy's bytes overflow", 60, 4, []int{math.MaxInt/4 + 1}, []int{0}, 0},
	} {
		dst := make([]byte, c.dstLen)
		if ok, err := callSafely(t, c.name, dst, src, c.itemsize, c.shape, c.strides, c.offset); ok && err == nil {
			t.Errorf("%s (item size %d, shape %v, strides %v, offset %d): no error, want one", c.name, c.itemsize, c.shape, c.strides, c.offset)
		}
		if !bytes.Equal(dst, make([]byte, c.dstLen)) {
			t.Errorf("%s: wrote into dst although the layout is invalid: check everything before copying", c.name)
		}
	}
}

// launchLog records, as a tensor.Observer, the device kernels that ops
// launch while it is installed.
type launchLog struct{ launches []tensor.Launch }

func (l *launchLog) Allocated(*tensor.Storage) {}
func (l *launchLog) Freed(*tensor.Storage)     {}
func (l *launchLog) Launched(k tensor.Launch)  { l.launches = append(l.launches, k) }

// readers is the names of the logged kernels that read t's storage.
func (l *launchLog) readers(t *tensor.Tensor) []string {
	var names []string
	for _, k := range l.launches {
		for _, in := range k.Inputs {
			if in != nil && in.SameStorage(t) {
				names = append(names, k.Name)
				break
			}
		}
	}
	return names
}

// The public twin of the grader's TestContiguousAllocations, on other
// dtypes and layouts: one allocation of the result's rounded size, no
// device kernel reading the input, the input unchanged; a nil, released
// or meta tensor is an error that leaves nothing allocated.
func TestContiguousOneAllocation(t *testing.T) {
	gcOff(t)
	dev := simtest.Card(t)
	f64 := tensor.Randn([]int{5, 9}, tensor.On(dev), tensor.Float64)
	i64 := tensor.Randint(0, 100, []int{4, 3, 6}, tensor.On(dev), tensor.WithGenerator(tensor.NewGenerator(9)))
	flags := i64.Lt(50)
	col := tensor.Randn([]int{70, 1}, tensor.On(dev))
	for _, c := range []struct {
		name string
		t    *tensor.Tensor
	}{
		{"float64 transposed", f64.T()},
		{"float64 every other column (step 2)", f64.Slice(1, 0, 9, 2)},
		{"int64 permuted", i64.Permute(1, 2, 0)},
		{"int64 narrowed (an offset)", i64.Narrow(2, 1, 4)},
		{"bool transposed", flags.Transpose(0, 2)},
		{"float32 expanded column (stride 0)", col.Expand(70, 40)},
		{"0-d float64", f64.Select(0, 3).Select(0, 4)},
	} {
		allocations, allocated, version := dev.Stats()["allocation.all.allocated"], dev.MemoryAllocated(), c.t.Version()
		kernels := &launchLog{}
		previous := tensor.SetObserver(kernels)
		out, err := Contiguous(c.t)
		tensor.SetObserver(previous)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if n := dev.Stats()["allocation.all.allocated"] - allocations; n != 1 {
			t.Errorf("%s: %d allocations, want 1 (the result)", c.name, n)
		}
		if got, want := dev.MemoryAllocated()-allocated, (alloc.Config{}).RoundSize(c.t.Nbytes()); got != want {
			t.Errorf("%s: Contiguous added %d bytes of allocated memory, want %d (the result's %d bytes, rounded up)", c.name, got, want, c.t.Nbytes())
		}
		if out.Device() != dev || out.Dtype() != c.t.Dtype() || !out.IsContiguous() || out.SameStorage(c.t) {
			t.Errorf("%s: the result must be a contiguous %v tensor of its own on the input's device", c.name, c.t.Dtype())
		}
		if read := kernels.readers(c.t); len(read) > 0 {
			t.Errorf("%s: device kernels %v read the input: fill the result with CopyStrided from the storage's bytes (not Clone, Contiguous or another op)", c.name, read)
		}
		want := c.t.Contiguous()
		if !slices.Equal(out.Shape(), want.Shape()) {
			t.Errorf("%s: shape %v, want %v", c.name, out.Shape(), want.Shape())
		} else if !slices.Equal(out.Float64s(), want.Float64s()) {
			t.Errorf("%s: the values differ from the input's", c.name)
		}
		if c.t.Version() != version {
			t.Errorf("%s: Contiguous modified its input", c.name)
		}
		want.Release()
		out.Release()
	}
	if _, err := Contiguous(nil); err == nil {
		t.Error("Contiguous(nil): no error, want one")
	}
	released := tensor.Zeros([]int{2, 2}, tensor.On(dev))
	released.Release()
	if _, err := Contiguous(released); err == nil {
		t.Error("Contiguous of a released tensor: no error, want one")
	}
	// A meta card holds shapes only: no bytes to read.
	meta := simtest.Card(t, simtest.Meta())
	shadow := tensor.Empty([]int{8, 50}, tensor.On(meta))
	allocated := meta.MemoryAllocated()
	if _, err := Contiguous(shadow.T()); err == nil {
		t.Error("Contiguous of a meta tensor: no error, want one (the host cannot read its bytes)")
	}
	if got := meta.MemoryAllocated(); got != allocated {
		t.Errorf("Contiguous of a meta tensor: %d bytes allocated after the error, %d before: release what you allocated", got, allocated)
	}
	runtime.KeepAlive(shadow)
	runtime.KeepAlive(f64)
	runtime.KeepAlive(i64)
	runtime.KeepAlive(flags)
	runtime.KeepAlive(col)
}

// The public twin of the grader's TestNoGoAllocations, on other layouts:
// CopyStrided allocates nothing on the Go heap (no index slice, no
// temporary buffer), whatever the layout.
func TestCopyAllocatesNothing(t *testing.T) {
	gcOff(t)
	src := pattern(2 * 6 * 10 * 12)
	dst := make([]byte, len(src))
	for _, c := range []struct {
		name           string
		shape, strides []int
	}{
		{"contiguous", []int{6, 10, 12}, []int{120, 12, 1}},
		{"transposed", []int{12, 10, 6}, []int{1, 12, 120}},
		{"rows of stride 1, permuted", []int{10, 6, 12}, []int{12, 120, 1}},
	} {
		var err error
		allocs := testing.AllocsPerRun(5, func() { err = CopyStrided(dst, src, 2, c.shape, c.strides, 0) })
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if allocs != 0 {
			t.Errorf("%s: %.0f Go allocations per call of CopyStrided, want 0 (keep the index on the stack: recursion or a fixed-size array)", c.name, allocs)
		}
		if want := byIndex(src, 2, c.shape, c.strides, 0); !bytes.Equal(dst, want) {
			t.Errorf("%s: %s", c.name, firstDifference(dst, want))
		}
	}
}

// quickest is the shortest of n timed runs of f, each after a collection,
// so that memory f took from the heap in its last run is free again: a run
// that allocates then reuses pages the process has touched, not fresh ones
// (slow on some machines, and more or less so from run to run).
func quickest(n int, f func()) time.Duration {
	best := time.Duration(math.MaxInt64)
	for range n {
		runtime.GC()
		start := time.Now()
		f()
		best = min(best, time.Since(start))
	}
	return best
}

// The public twin of the grader's TestFastPaths, on another matrix: a
// contiguous layout, and rows whose innermost stride is 1, are copied a
// run at a time, within 10× the time of Go's copy of the same runs (the
// best of 9 runs of each, with the collector on: a buffer made per call is
// TestCopyAllocatesNothing's business, not this test's).
func TestFastPathsAreFast(t *testing.T) {
	const rows, cols = 512, 2048 // 1 MiB of one-byte items
	src := pattern(3 * rows * cols)
	dst := make([]byte, rows*cols)
	for _, c := range []struct {
		name    string
		strides []int
		offset  int
	}{
		{"contiguous", []int{cols, 1}, 9},
		{"rows of stride 1, every third row", []int{3 * cols, 1}, 2},
	} {
		var err error
		took := quickest(9, func() { err = CopyStrided(dst, src, 1, []int{rows, cols}, c.strides, c.offset) })
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if want := byIndex(src, 1, []int{rows, cols}, c.strides, c.offset); !bytes.Equal(dst, want) {
			t.Errorf("%s: %s", c.name, firstDifference(dst, want))
			continue
		}
		byGo := quickest(9, func() {
			for i := range rows {
				at := c.offset + i*c.strides[0]
				copy(dst[i*cols:(i+1)*cols], src[at:at+cols])
			}
		})
		t.Logf("%s: CopyStrided %v, Go's copy of the same rows %v", c.name, took, byGo)
		if took > 10*byGo {
			t.Errorf("%s: CopyStrided took %v, Go's copy of the same rows %v: over 10× slower: copy a whole run of bytes at a time, not item by item", c.name, took, byGo)
		}
	}
}

// BenchmarkCopyStrided compares the contiguous fast path with a transposed
// layout of the same 1000×1000 float32 matrix:
// go test -run '^$' -bench . -benchtime 20x
func BenchmarkCopyStrided(b *testing.B) {
	const n = 1000
	src, dst := make([]byte, 4*n*n), make([]byte, 4*n*n)
	for _, c := range []struct {
		name    string
		strides []int
	}{{"contiguous", []int{n, 1}}, {"transposed", []int{1, n}}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(dst)))
			for b.Loop() {
				if err := CopyStrided(dst, src, 4, []int{n, n}, c.strides, 0); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
