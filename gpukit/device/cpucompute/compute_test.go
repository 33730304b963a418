package cpucompute_test

import (
	"encoding/binary"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/gpumem/course/gpukit/device/backend"
	"github.com/gpumem/course/gpukit/device/computetest"
	"github.com/gpumem/course/gpukit/device/cpucompute"
	"github.com/gpumem/course/gpukit/dtypes"
	"github.com/gpumem/course/gpukit/ops"
)

func TestConformance(t *testing.T) {
	h := computetest.NewHeap()
	missing := computetest.Run(t, cpucompute.New("heap:0", h), h)
	for _, m := range missing {
		if m.Method != "Adam" || m.Dtype == dtypes.Float32 || m.Dtype == dtypes.Float64 {
			t.Errorf("lacks %v", m)
		}
	}
	if len(missing) != len(computetest.Dtypes)-2 {
		t.Errorf("lacks %v, want Adam outside float32 and float64", missing)
	}
}

// TestOperandsOutsideMemory: an address range that is not the device's is
// the package's error, never a panic or a write elsewhere.
func TestOperandsOutsideMemory(t *testing.T) {
	h := computetest.NewHeap()
	c := cpucompute.New("heap:0", h)
	a, _ := h.Malloc(16)
	tests := []struct {
		name string
		err  error
	}{
		{"Fill past the end", c.Fill(0, []int{5}, backend.Strided{Addr: a, Dtype: dtypes.Float32, Strides: []int{1}}, 1)},
		{"Fill at address 0", c.Fill(0, []int{1}, backend.Strided{Dtype: dtypes.Float32, Strides: []int{1}}, 1)},
		{"Copy with too few strides", c.Copy(0, []int{2, 2}, backend.Strided{Addr: a, Dtype: dtypes.Float32, Strides: []int{1}}, backend.Strided{Addr: a, Dtype: dtypes.Float32, Strides: []int{2, 1}})},
		{"Unary negative stride", c.Unary(0, ops.Exp, []int{2}, backend.Strided{Addr: a, Dtype: dtypes.Float32, Strides: []int{-1}}, backend.Strided{Addr: a, Dtype: dtypes.Float32, Strides: []int{1}})},
		{"Reduce unknown memory", c.Reduce(0, ops.ReduceSum, dtypes.Float32, a, 0x999999, 1, 4, 1)},
		{"Gemm short leading dimension", c.Gemm(0, dtypes.Float32, false, false, 2, 2, 2, 1, a, 1, a, 2, 0, a, 2)},
		{"NLLLoss float targets", c.NLLLoss(0, dtypes.Float32, a, a, a, dtypes.Float32, 1, 1)},
	}
	for _, tc := range tests {
		if tc.err == nil || !strings.HasPrefix(tc.err.Error(), "cpucompute: ") {
			t.Errorf("%s: %v, want a cpucompute error", tc.name, tc.err)
		}
	}
	err := c.Adam(0, dtypes.Float16, a, a, a, a, 2, ops.AdamScalars{})
	var u *backend.UnsupportedError
	if !errors.As(err, &u) || u.Op != "Adam" || u.Backend != "heap:0" {
		t.Errorf("Adam of float16: %v, want an UnsupportedError", err)
	}
}

// A bad CSR structure is the package's error, not an index out of range
// in the kernel.
func TestCSRStructureErrors(t *testing.T) {
	h := computetest.NewHeap()
	c := cpucompute.New("heap:0", h)
	put := func(v ...int64) uint64 {
		a, _ := h.Malloc(int64(8 * len(v)))
		b := h.Bytes(a, int64(8*len(v)))
		for i, x := range v {
			dtypes.Store(dtypes.Int64, b, i, float64(x))
		}
		return a
	}
	vals, dense, out := put(0, 0), put(0, 0, 0, 0, 0, 0), put(0, 0, 0, 0, 0, 0)
	csr := func(cols, offs uint64) backend.CSR {
		return backend.CSR{Values: vals, ColIndices: cols, RowOffsets: offs, Index: dtypes.Int64, Rows: 2, Cols: 3, NNZ: 2}
	}
	for _, tc := range []struct {
		name, want string
		err        error
	}{
		{"column out of range", "column index 3 of entry 1 is out of bounds for 3 columns", c.CSRMatmul(0, dtypes.Float64, csr(put(0, 3), put(0, 1, 2)), dense, out, 2)},
		{"negative column", "column index -1 of entry 0", c.CSRMatmulT(0, dtypes.Float64, csr(put(-1, 0), put(0, 1, 2)), dense, out, 2)},
		{"offsets decrease", "row offsets decrease at row 1 (2 after 3)", c.CSRSampledDot(0, dtypes.Float64, csr(put(0, 1), put(0, 3, 2)), dense, dense, out, 2)},
		{"offsets end short", "row offsets must run from 0 to the number of entries (2), got 0 to 1", c.CSRMatmul(0, dtypes.Float64, csr(put(0, 1), put(0, 1, 1)), dense, out, 2)},
		{"float indices", "indices of float32", c.CSRMatmul(0, dtypes.Float64, backend.CSR{Index: dtypes.Float32}, dense, out, 2)},
		{"negative size", "negative size", c.CSRMatmul(0, dtypes.Float64, backend.CSR{Index: dtypes.Int64, Rows: -1}, dense, out, 2)},
		{"offsets outside memory", "is not memory of this device", c.CSRMatmul(0, dtypes.Float64, backend.CSR{Index: dtypes.Int64, RowOffsets: 0x999999, Rows: 1}, dense, out, 2)},
	} {
		if tc.err == nil || !strings.HasPrefix(tc.err.Error(), "cpucompute: ") || !strings.Contains(tc.err.Error(), tc.want) {
			t.Errorf("%s: %v, want a cpucompute error with %q", tc.name, tc.err, tc.want)
		}
	}
	var u *backend.UnsupportedError
	if err := c.CSRMatmulT(0, dtypes.Float16, backend.CSR{Index: dtypes.Int64}, dense, out, 2); !errors.As(err, &u) || u.Op != "CSRMatmulT" {
		t.Errorf("CSRMatmulT of float16: %v, want an UnsupportedError", err)
	}
}

// TestNewRefusesNilMemory: a Compute without a Memory is refused at once
// with the package's message, not a nil dereference at its first kernel.
func TestNewRefusesNilMemory(t *testing.T) {
	assert.PanicsWithValue(t, "cpucompute: New: nil Memory for dev:0", func() { cpucompute.New("dev:0", nil) })
	var h *computetest.Heap // a typed nil is a nil Memory too
	assert.Panics(t, func() { cpucompute.New("dev:0", h) })
}

// TestNLLLossTargetOutOfBounds: a target outside [0, classes), however
// large, is the package's error for every pair of dtypes, never an index
// out of range.
func TestNLLLossTargetOutOfBounds(t *testing.T) {
	h := computetest.NewHeap()
	c := cpucompute.New("heap:0", h)
	const rows, n = 3, 4
	for _, dt := range []dtypes.Dtype{dtypes.Float32, dtypes.Float64} {
		for _, tdt := range []dtypes.Dtype{dtypes.Int64, dtypes.Int32} {
			bads := []int64{-1, n, 1<<31 - 1}
			if tdt == dtypes.Int64 {
				bads = append(bads, 1<<40, -1<<62)
			}
			for _, bad := range bads {
				lp, _ := h.Malloc(int64(rows * n * dt.Size()))
				tg, _ := h.Malloc(int64(rows * tdt.Size()))
				out, _ := h.Malloc(int64(dt.Size()))
				targets := h.Bytes(tg, int64(rows*tdt.Size()))
				for i := range rows {
					v := int64(i % n)
					if i == rows-1 {
						v = bad
					}
					if tdt == dtypes.Int64 {
						binary.LittleEndian.PutUint64(targets[8*i:], uint64(v))
					} else {
						binary.LittleEndian.PutUint32(targets[4*i:], uint32(int32(v)))
					}
				}
				err := c.NLLLoss(0, dt, out, lp, tg, tdt, rows, n)
				if err == nil || !strings.Contains(err.Error(), "out of bounds for 4 classes") {
					t.Errorf("%s with %s target %d: %v, want out of bounds", dt, tdt, bad, err)
				}
			}
		}
	}
}

// TestScatterAddLargeMatchesInOrder: a ScatterAdd large enough to run its
// lines on several goroutines gives every destination element its
// additions in index order, bit for bit what one loop gives: one target a
// row (a loss's backward), several a row with repeats (float32 sums
// whose order shows), and a destination whose rows overlap (one loop).
func TestScatterAddLargeMatchesInOrder(t *testing.T) {
	const rows = 8192
	tests := []struct {
		name         string
		k, classes   int // index columns, destination columns
		dstRowStride int
	}{
		{"one target a row", 1, 1000, 1000},
		{"repeats in a row", 5, 3, 3},
		{"rows overlap", 2, 4, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := computetest.NewHeap()
			c := cpucompute.New("heap:0", h)
			n := rows * tt.k
			dstLen := (rows-1)*tt.dstRowStride + tt.classes
			dst, _ := h.Malloc(int64(4 * dstLen))
			src, _ := h.Malloc(int64(4 * n))
			idx, _ := h.Malloc(int64(8 * n))
			want := make([]float32, dstLen)
			d, sv, iv := h.Bytes(dst, int64(4*dstLen)), h.Bytes(src, int64(4*n)), h.Bytes(idx, int64(8*n))
			for i := range dstLen {
				want[i] = float32(i%7) * 0.1
				binary.LittleEndian.PutUint32(d[4*i:], math.Float32bits(want[i]))
			}
			for e := range n {
				j := (e*7919 + e/tt.k) % tt.classes
				v := float32(e%13) * 1.0e-3
				binary.LittleEndian.PutUint64(iv[8*e:], uint64(j))
				binary.LittleEndian.PutUint32(sv[4*e:], math.Float32bits(v))
				at := (e/tt.k)*tt.dstRowStride + j
				want[at] = float32(float64(want[at]) + float64(v))
			}
			shape := []int{rows, tt.k}
			err := c.ScatterAdd(0, shape, 1,
				backend.Strided{Addr: dst, Dtype: dtypes.Float32, Strides: []int{tt.dstRowStride, 1}},
				backend.Strided{Addr: idx, Dtype: dtypes.Int64, Strides: []int{tt.k, 1}},
				backend.Strided{Addr: src, Dtype: dtypes.Float32, Strides: []int{tt.k, 1}})
			if err != nil {
				t.Fatal(err)
			}
			for i := range dstLen {
				if got := math.Float32frombits(binary.LittleEndian.Uint32(d[4*i:])); got != want[i] {
					t.Fatalf("element %d = %v, want %v", i, got, want[i])
				}
			}
		})
	}
}

// TestGatherScatterNegativeIndex: a negative index is the package's error,
// not an index out of range (the tensor package checks indices first; a
// backend's caller may not).
func TestGatherScatterNegativeIndex(t *testing.T) {
	h := computetest.NewHeap()
	c := cpucompute.New("heap:0", h)
	for _, idt := range []dtypes.Dtype{dtypes.Int64, dtypes.Int32} {
		for _, bad := range []int64{-1, -1 << 30} {
			data, _ := h.Malloc(4 * 8)
			out, _ := h.Malloc(4 * 4)
			idx, _ := h.Malloc(int64(4 * idt.Size()))
			iv := h.Bytes(idx, int64(4*idt.Size()))
			for i, v := range []int64{0, 1, bad, 1} {
				if idt == dtypes.Int64 {
					binary.LittleEndian.PutUint64(iv[8*i:], uint64(v))
				} else {
					binary.LittleEndian.PutUint32(iv[4*i:], uint32(int32(v)))
				}
			}
			shape := []int{4, 1}
			along := backend.Strided{Addr: data, Dtype: dtypes.Float32, Strides: []int{2, 1}}
			other := backend.Strided{Addr: out, Dtype: dtypes.Float32, Strides: []int{1, 1}}
			index := backend.Strided{Addr: idx, Dtype: idt, Strides: []int{1, 1}}
			for name, call := range map[string]func() error{
				"Gather":     func() error { return c.Gather(0, shape, 1, other, along, index) },
				"ScatterAdd": func() error { return c.ScatterAdd(0, shape, 1, along, index, other) },
			} {
				var err error
				assert.NotPanics(t, func() { err = call() }, "%s with %s index %d", name, idt, bad)
				assert.ErrorContains(t, err, "is negative", "%s with %s index %d", name, idt, bad)
			}
		}
	}
}
