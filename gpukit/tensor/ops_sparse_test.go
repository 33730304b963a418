package tensor_test

import (
	"strings"
	"testing"

	"github.com/gpumem/course/gpukit/tensor"
)

// a = [[0 2 0], [0 0 0], [1 0 3]] in CSR form, times b = [[1 2], [3 4], [5 6]].
func TestSparseCSRMatmul(t *testing.T) {
	for _, index := range []tensor.Dtype{tensor.Int64, tensor.Int32} {
		for _, dt := range []tensor.Dtype{tensor.Float32, tensor.Float64} {
			dev := newDev(t)
			on := tensor.On(dev)
			vals := tensor.FromSlice([]float64{2, 1, 3}, []int{3}, on, dt)
			cols := tensor.FromSlice([]int64{1, 0, 2}, []int{3}, on, index)
			offs := tensor.FromSlice([]int64{0, 1, 1, 3}, []int{4}, on, index)
			b := tensor.FromSlice([]float64{1, 2, 3, 4, 5, 6}, []int{3, 2}, on, dt)
			before := dev.MemoryAllocated()
			got := tensor.SparseCSRMatmul(vals, cols, offs, 3, 3, b)
			want := []float64{6, 8, 0, 0, 16, 20}
			if g := got.Float64s(); !slicesEqual(g, want) || got.Dim() != 2 || got.Size(0) != 3 || got.Size(1) != 2 {
				t.Errorf("%s/%s: got %v of shape %v, want %v", index, dt, g, got.Shape(), want)
			}
			got.Release()
			if dev.MemoryAllocated() != before {
				t.Errorf("%s/%s: %d bytes left allocated", index, dt, dev.MemoryAllocated()-before)
			}
			// b transposed (not contiguous) gives the same.
			bt := tensor.FromSlice([]float64{1, 3, 5, 2, 4, 6}, []int{2, 3}, on, dt)
			btT := bt.T()
			again := tensor.SparseCSRMatmul(vals, cols, offs, 3, 3, btT)
			if g := again.Float64s(); !slicesEqual(g, want) {
				t.Errorf("%s/%s strided b: got %v, want %v", index, dt, g, want)
			}
		}
	}
}

func slicesEqual(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestSparseCSRMatmulBadInput(t *testing.T) {
	dev := newDev(t)
	on := tensor.On(dev)
	vals := tensor.FromSlice([]float32{2, 1, 3}, []int{3}, on)
	good := func() (c, o *tensor.Tensor) {
		return tensor.FromSlice([]int64{1, 0, 2}, []int{3}, on), tensor.FromSlice([]int64{0, 1, 1, 3}, []int{4}, on)
	}
	b := tensor.Ones([]int{3, 2}, on)
	for _, tc := range []struct {
		name string
		call func()
		want string
	}{
		{"column out of bounds", func() {
			_, o := good()
			tensor.SparseCSRMatmul(vals, tensor.FromSlice([]int64{1, 0, 3}, []int{3}, on), o, 3, 3, b)
		}, "column index 3 of entry 2 is out of bounds"},
		{"offsets decrease", func() {
			c, _ := good()
			tensor.SparseCSRMatmul(vals, c, tensor.FromSlice([]int64{0, 2, 1, 3}, []int{4}, on), 3, 3, b)
		}, "row offsets decrease at row 1"},
		{"offsets do not end at nnz", func() {
			c, _ := good()
			tensor.SparseCSRMatmul(vals, c, tensor.FromSlice([]int64{0, 1, 1, 2}, []int{4}, on), 3, 3, b)
		}, "from 0 to the number of values (3)"},
		{"wrong number of offsets", func() {
			c, o := good()
			tensor.SparseCSRMatmul(vals, c, o, 2, 3, b)
		}, "needs 3 row offsets"},
		{"b of the wrong shape", func() {
			c, o := good()
			tensor.SparseCSRMatmul(vals, c, o, 3, 3, tensor.Ones([]int{2, 2}, on))
		}, "it needs shape [3, n]"},
		{"mixed index dtypes", func() {
			c, _ := good()
			tensor.SparseCSRMatmul(vals, c, tensor.FromSlice([]int32{0, 1, 1, 3}, []int{4}, on), 3, 3, b)
		}, "use one index dtype"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				r := recover()
				if r == nil {
					t.Fatal("no panic")
				}
				if msg := r.(error).Error(); !strings.HasPrefix(msg, "tensor: ") || !strings.Contains(msg, tc.want) {
					t.Fatalf("panic %q, want it to contain %q", msg, tc.want)
				}
			}()
			tc.call()
		})
	}
}

// The gradients of the values and of b are those of the dense product
// with the same matrix: the dense weight's gradient at the entries, and
// the same gradient for b. The values are small integers and halves, so
// every sum is exact in float64 and the comparison is bitwise.
func TestSparseCSRMatmulBackward(t *testing.T) {
	for _, index := range []tensor.Dtype{tensor.Int64, tensor.Int32} {
		dev := newDev(t)
		on := tensor.On(dev)
		// a = [[0 2 0], [0 0 0], [1 0 3]]
		vals := tensor.FromSlice([]float64{2, 1, 3}, []int{3}, on, tensor.Float64, tensor.RequiresGrad())
		cols := tensor.FromSlice([]int64{1, 0, 2}, []int{3}, on, index)
		offs := tensor.FromSlice([]int64{0, 1, 1, 3}, []int{4}, on, index)
		b := tensor.FromSlice([]float64{1, 2, 3, 4, 5, 6}, []int{3, 2}, on, tensor.Float64, tensor.RequiresGrad())
		g := tensor.FromSlice([]float64{0.5, -1, 2, 3, 1, 1.5}, []int{3, 2}, on, tensor.Float64)
		y := tensor.SparseCSRMatmul(vals, cols, offs, 3, 3, b)
		if y.GradFn() != "SparseCSRMatmulBackward0" {
			t.Fatalf("grad_fn %q", y.GradFn())
		}
		y.Backward(tensor.WithGradient(g))

		a := tensor.FromSlice([]float64{0, 2, 0, 0, 0, 0, 1, 0, 3}, []int{3, 3}, on, tensor.Float64, tensor.RequiresGrad())
		bd := tensor.FromSlice([]float64{1, 2, 3, 4, 5, 6}, []int{3, 2}, on, tensor.Float64, tensor.RequiresGrad())
		a.Matmul(bd).Backward(tensor.WithGradient(g))
		ag := a.Grad().Float64s()
		wantVals := []float64{ag[1], ag[6], ag[8]} // the entries' positions
		if got := vals.Grad().Float64s(); !slicesEqual(got, wantVals) {
			t.Errorf("%s: values' gradient %v, want %v", index, got, wantVals)
		}
		if got, want := b.Grad().Float64s(), bd.Grad().Float64s(); !slicesEqual(got, want) {
			t.Errorf("%s: b's gradient %v, want %v", index, got, want)
		}
	}
}
