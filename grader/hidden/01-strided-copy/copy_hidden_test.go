package strided

import (
	"bytes"
	"math"
	"runtime"
	"testing"

	"github.com/gpumem/course/gpukit/device/simtest"
	"github.com/gpumem/course/gpukit/tensor"
	"github.com/gpumem/course/gpukit/tensor/tensortest"
)

func TestCopyStridedBasics(t *testing.T) {
	tensortest.NoCollector(t)
	src := randomBytes(12, 1)
	for _, c := range []struct {
		name           string
		shape, strides []int
		offset         int
	}{
		{"contiguous", []int{3, 4}, []int{4, 1}, 0},
		{"transpose", []int{4, 3}, []int{1, 4}, 0},
		{"rows 1-2, every other column from 1", []int{2, 2}, []int{4, 2}, 5},
	} {
		want := reference(src, 1, c.shape, c.strides, c.offset)
		dst := make([]byte, len(want))
		if err := CopyStrided(dst, src, 1, c.shape, c.strides, c.offset); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !bytes.Equal(dst, want) {
			t.Errorf("%s: got %v, want %v", c.name, dst, want)
		}
	}
}

// 0-d layouts, dimensions of size 0, stride 0, permutations of 4-d arrays
// with offsets, and items of 1, 2, 4 and 8 bytes.
func TestEdgeLayouts(t *testing.T) {
	tensortest.NoCollector(t)
	for _, c := range []struct {
		name           string
		itemsize       int
		shape, strides []int
		offset, srcLen int // srcLen in items
	}{
		{"0-d", 4, []int{}, []int{}, 5, 6},
		{"0-d at 0", 8, nil, nil, 0, 1},
		{"one element", 2, []int{1, 1, 1}, []int{7, 3, 99}, 2, 3},
		{"expanded rows (stride 0)", 4, []int{5, 3}, []int{0, 1}, 2, 5},
		{"expanded columns (stride 0)", 8, []int{3, 6}, []int{1, 0}, 0, 3},
		{"all stride 0", 1, []int{2, 3, 4}, []int{0, 0, 0}, 9, 10},
		{"4-d permutation", 4, []int{5, 2, 4, 3}, []int{1, 60, 15, 5}, 0, 120},
		{"4-d permutation, offset", 2, []int{3, 4, 5, 2}, []int{2, 30, 6, 1}, 17, 17 + 120},
		{"sliced with steps and offset", 8, []int{2, 3, 2}, []int{40, 9, 3}, 4, 4 + 40 + 18 + 3 + 1},
		{"contiguous with offset", 4, []int{4, 5}, []int{5, 1}, 11, 31},
		{"contiguous but for size-1 dims", 4, []int{4, 1, 5}, []int{5, 77, 1}, 0, 20},
		{"size-1 inner dimension, strided outer", 4, []int{3, 1}, []int{2, 7}, 1, 8},
		{"overlapping rows, inner strides contiguous", 4, []int{2, 3, 4}, []int{3, 4, 1}, 0, 15},
		{"inner stride 1 inside strided rows", 1, []int{3, 4}, []int{10, 1}, 3, 27},
		// src goes on after the layout: a copy bounded by src, not by the
		// layout, writes past the result
		{"contiguous with offset, more src after it", 4, []int{4, 5}, []int{5, 1}, 11, 40},
		{"strided rows of stride 1, more src after them", 1, []int{3, 4}, []int{10, 1}, 3, 40},
		{"10-d, every stride reversed", 1, []int{2, 2, 2, 2, 2, 2, 2, 2, 2, 2}, []int{1, 2, 4, 8, 16, 32, 64, 128, 256, 512}, 0, 1024},
	} {
		src := randomBytes(c.srcLen*c.itemsize, 7)
		want := reference(src, c.itemsize, c.shape, c.strides, c.offset)
		dst := make([]byte, len(want)+c.itemsize) // one spare item, which must stay untouched
		for i := range dst {
			dst[i] = 0xAB
		}
		if err := CopyStrided(dst, src, c.itemsize, c.shape, c.strides, c.offset); err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if !bytes.Equal(dst[:len(want)], want) {
			t.Errorf("%s: got %v, want %v", c.name, dst[:len(want)], want)
		}
		for _, b := range dst[len(want):] {
			if b != 0xAB {
				t.Errorf("%s: wrote past the layout's %d bytes", c.name, len(want))
				break
			}
		}
	}
	// Size-0 dimensions: nothing to copy, nothing to read, no error.
	for _, shape := range [][]int{{0}, {3, 0, 2}, {0, 5}} {
		strides := make([]int, len(shape))
		for k := range strides {
			strides[k] = 1000
		}
		if err := CopyStrided(nil, nil, 4, shape, strides, 50); err != nil {
			t.Errorf("shape %v: %v, want no error (no elements)", shape, err)
		}
	}
	// Steps that reach exactly the largest int fit: with no elements there
	// is still nothing to read.
	for _, c := range []struct{ shape, strides []int }{
		{[]int{0, 3}, []int{1, math.MaxInt / 2}},
		{[]int{0, 2}, []int{1, math.MaxInt}},
	} {
		if err := CopyStrided(nil, nil, 4, c.shape, c.strides, 0); err != nil {
			t.Errorf("shape %v, strides %v: %v, want no error (no elements, nothing overflows)", c.shape, c.strides, err)
		}
	}
}

// Invalid layouts are errors, never panics, and write nothing; layouts
// that just fit are copied.
func TestInvalidLayouts(t *testing.T) {
	tensortest.NoCollector(t)
	src := randomBytes(48, 3)
	for _, c := range []struct {
		name           string
		shape, strides []int
		offset         int
	}{
		{"dst and src exactly full", []int{3, 4}, []int{4, 1}, 0},
		{"the last element of src", []int{2}, []int{11}, 0},
		{"offset to the last element", []int{}, []int{}, 11},
	} {
		want := reference(src, 4, c.shape, c.strides, c.offset)
		dst := make([]byte, len(want))
		if err := CopyStrided(dst, src, 4, c.shape, c.strides, c.offset); err != nil {
			t.Errorf("%s: %v, want a copy: the layout fits", c.name, err)
		} else if !bytes.Equal(dst, want) {
			t.Errorf("%s: got %v, want %v", c.name, dst, want)
		}
	}
	for _, c := range []struct {
		name           string
		dstLen         int
		itemsize       int
		shape, strides []int
		offset         int
	}{
		{"item size 0", 48, 0, []int{2}, []int{1}, 0},
		{"sizes and strides differ in length", 48, 4, []int{2, 3}, []int{1}, 0},
		{"negative stride", 48, 4, []int{3}, []int{-1}, 2},
		{"negative size", 48, 4, []int{-3}, []int{1}, 0},
		{"negative size, stride 0", 48, 4, []int{-3}, []int{0}, 0},
		{"negative size after a size-0 dimension", 48, 4, []int{0, -2}, []int{1, 1}, 0},
		{"negative stride after a size-0 dimension", 48, 4, []int{0, 3}, []int{1, -1}, 0},
		{"negative stride of a size-1 dimension", 48, 4, []int{1}, []int{-5}, 2},
		{"negative offset", 48, 4, []int{3}, []int{1}, -1},
		{"dst too small", 11, 4, []int{3}, []int{1}, 0},
		{"reads past src", 48, 4, []int{3, 4}, []int{4, 1}, 1},
		{"stride reaches past src", 48, 4, []int{2}, []int{12}, 0},
		{"element count overflows", 48, 4, []int{math.MaxInt / 2, 4}, []int{0, 0}, 0},
		{"last element overflows", 48, 1, []int{3}, []int{math.MaxInt / 2}, 0},
		{"a stride's step overflows", 48, 1, []int{3}, []int{math.MaxInt/2 + 1}, 0},
		{"offset plus steps overflow", 48, 1, []int{2, 2}, []int{math.MaxInt / 2, 2}, math.MaxInt / 2},
		{"the copy's bytes overflow", 48, 8, []int{math.MaxInt/8 + 1}, []int{0}, 0},
		{"the last element's byte overflows", 48, 8, []int{}, []int{}, math.MaxInt / 8},
	} {
		dst := make([]byte, c.dstLen)
		var err error
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("%s: panicked (%v), want an error", c.name, r)
					err = nil
				}
			}()
			err = CopyStrided(dst, src, c.itemsize, c.shape, c.strides, c.offset)
		}()
		if err == nil {
			t.Errorf("%s: got no error", c.name)
		}
		if !bytes.Equal(dst, make([]byte, c.dstLen)) {
			t.Errorf("%s: wrote into dst although the layout is invalid", c.name)
		}
	}
}

func TestContiguousTensor(t *testing.T) {
	tensortest.NoCollector(t)
	dev := newDevice(t)
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
	want := tr.Contiguous()
	if !equalValues(c, want) {
		t.Error("the values differ from tr.Contiguous()")
	}
}

func equalValues(a, b *tensor.Tensor) bool {
	if a.Dtype() != b.Dtype() || len(a.Shape()) != len(b.Shape()) {
		return false
	}
	for k := range a.Shape() {
		if a.Shape()[k] != b.Shape()[k] {
			return false
		}
	}
	return bytes.Equal(elementBytes(a), elementBytes(b))
}

// elementBytes is the bytes of a contiguous tensor's elements.
func elementBytes(t *tensor.Tensor) []byte {
	start := t.StorageOffset() * t.Dtype().Size()
	return t.Storage().Bytes()[start : start+int(t.Nbytes())]
}

// One allocation of exactly the result's (rounded) size, for every dtype
// and layout; the input is not modified; misuse is an error.
func TestContiguousAllocations(t *testing.T) {
	tensortest.NoCollector(t)
	dev := newDevice(t)
	f64 := tensor.Randn([]int{6, 7, 8}, tensor.On(dev), tensor.Float64)
	i64 := tensor.Randint(-50, 50, []int{9, 10}, tensor.On(dev), tensor.WithGenerator(tensor.NewGenerator(3)))
	bools := i64.Gt(0)
	row := tensor.Randn([]int{1, 300}, tensor.On(dev))
	for _, c := range []struct {
		name string
		t    *tensor.Tensor
	}{
		{"float64 permuted", f64.Permute(2, 0, 1)},
		{"float64 narrowed (offset)", f64.Narrow(1, 2, 4)},
		{"float64 selected: contiguous with an offset", f64.Select(0, 5)},
		{"int64 transposed", i64.T()},
		{"bool sliced with step 3", bools.Slice(1, 1, 10, 3)},
		{"float32 expanded (stride 0)", row.Expand(500, 300)},
		{"0-d", f64.Select(0, 1).Select(0, 2).Select(0, 3)},
	} {
		allocations, allocated, version := dev.Stats()["allocation.all.allocated"], dev.MemoryAllocated(), c.t.Version()
		kernels := &kernelLog{}
		previous := tensor.SetObserver(kernels)
		out, err := Contiguous(c.t)
		tensor.SetObserver(previous)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if n := dev.Stats()["allocation.all.allocated"] - allocations; n != 1 {
			t.Errorf("%s: %d allocations, want 1", c.name, n)
		}
		if got, want := dev.MemoryAllocated()-allocated, block(c.t.Nbytes()); got != want {
			t.Errorf("%s: allocated %d bytes, want %d (the result's block)", c.name, got, want)
		}
		if out.Device() != dev || out.Dtype() != c.t.Dtype() || !out.IsContiguous() || out.SameStorage(c.t) {
			t.Errorf("%s: the result must be a contiguous %v tensor of its own on %s", c.name, c.t.Dtype(), dev)
		}
		if read := kernels.reading(c.t); len(read) > 0 {
			t.Errorf("%s: device kernels %v read the input: the copy must be CopyStrided's, from the storage's bytes (not Clone, Contiguous or another op)", c.name, read)
		}
		ref := c.t.Contiguous()
		if !equalValues(out, ref) {
			t.Errorf("%s: values differ from Contiguous()", c.name)
		}
		if c.t.Version() != version {
			t.Errorf("%s: the input was modified", c.name)
		}
		ref.Release()
		out.Release()
	}
	if _, err := Contiguous(nil); err == nil {
		t.Error("Contiguous(nil): got no error")
	}
	gone := tensor.Ones([]int{3}, tensor.On(dev))
	gone.Release()
	if _, err := Contiguous(gone); err == nil {
		t.Error("Contiguous of a released tensor: got no error")
	}
	// A meta device has no bytes to read: an error, and nothing left
	// allocated on it.
	meta := simtest.Card(t, simtest.Meta())
	shadow := tensor.Empty([]int{40, 30}, tensor.On(meta))
	allocated := meta.MemoryAllocated()
	if _, err := Contiguous(shadow.T()); err == nil {
		t.Error("Contiguous of a meta tensor: got no error, want one (no bytes to read)")
	}
	if got := meta.MemoryAllocated(); got != allocated {
		t.Errorf("Contiguous of a meta tensor: allocated memory %d after the error, %d before: release what you allocated", got, allocated)
	}
	runtime.KeepAlive(shadow)
	// The measured tensors stay alive until here: the collector must not
	// free them (and change allocated memory) during a measurement.
	runtime.KeepAlive(f64)
	runtime.KeepAlive(i64)
	runtime.KeepAlive(bools)
	runtime.KeepAlive(row)
}

// The copy itself allocates nothing on the Go heap, whatever the layout:
// no index slice per element or per call.
func TestNoGoAllocations(t *testing.T) {
	tensortest.NoCollector(t)
	src := randomBytes(4*8*16*4*32, 5)
	dst := make([]byte, len(src))
	for _, c := range []struct {
		name           string
		shape, strides []int
	}{
		{"contiguous", []int{8, 16, 4, 32}, []int{2048, 128, 32, 1}},
		{"permuted", []int{32, 4, 16, 8}, []int{1, 32, 128, 2048}},
		{"inner runs", []int{16, 8, 4, 32}, []int{128, 2048, 32, 1}},
	} {
		shape, strides := c.shape, c.strides
		var err error
		allocs := testing.AllocsPerRun(5, func() { err = CopyStrided(dst, src, 4, shape, strides, 0) })
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if allocs != 0 {
			t.Errorf("%s: %.0f Go allocations per copy, want 0", c.name, allocs)
		}
		if !bytes.Equal(dst, reference(src, 4, shape, strides, 0)) {
			t.Errorf("%s: wrong values", c.name)
		}
	}
}

// The fast paths: a contiguous layout, and rows whose innermost stride is
// 1, are copied a run of bytes at a time, not item by item: within 10× the
// time of Go's copy of the same runs (the best of 9 runs of each; the
// reference takes about 1×, an item-by-item copy of one-byte items 60 to
// 250×). The collector stays on (no tensor is made here): an answer that
// gathers into a buffer made per call, which TestNoGoAllocations fails,
// then reuses its pages and takes 2 to 6× every run; with the collector
// off each call faulted in fresh pages, 12 to 18× on a quiet machine and
// under 10× on a loaded one, and it passed or failed this test by chance.
func TestFastPaths(t *testing.T) {
	const rows, cols = 256, 4096 // 1 MiB of one-byte items
	src := randomBytes(2*rows*cols, 11)
	dst := make([]byte, rows*cols)
	for _, c := range []struct {
		name    string
		strides []int
		offset  int
	}{
		{"contiguous", []int{cols, 1}, 3},
		{"rows of stride 1, every other row", []int{2 * cols, 1}, 5},
	} {
		var err error
		copied := fastest(9, func() { err = CopyStrided(dst, src, 1, []int{rows, cols}, c.strides, c.offset) })
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !bytes.Equal(dst, reference(src, 1, []int{rows, cols}, c.strides, c.offset)) {
			t.Errorf("%s: wrong values", c.name)
			continue
		}
		byGo := fastest(9, func() {
			for i := range rows {
				at := c.offset + i*c.strides[0]
				copy(dst[i*cols:(i+1)*cols], src[at:at+cols])
			}
		})
		if copied > 10*byGo {
			t.Errorf("%s: CopyStrided took %v, Go's copy of the same rows %v: over 10× slower: copy a run of bytes at a time, not item by item", c.name, copied, byGo)
		}
	}
}
