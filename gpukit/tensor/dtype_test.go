package tensor

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/gpumem/course/gpukit/dtypes"
)

func TestViewStridesMatchesPyTorch(t *testing.T) {
	tests := []struct {
		shape, strides, to, want []int
		ok                       bool
	}{
		{[]int{2, 3}, []int{3, 1}, []int{6}, []int{1}, true},
		{[]int{2, 3}, []int{1, 2}, []int{6}, nil, false},                 // transposed
		{[]int{2, 3}, []int{1, 2}, []int{2, 3, 1}, []int{1, 2, 2}, true}, // as torch.empty(3,2).t().view(2,3,1).stride()
		{[]int{4, 6}, []int{6, 1}, []int{2, 2, 3, 2}, []int{12, 6, 2, 1}, true},
		{[]int{2, 3, 4}, []int{12, 1, 3}, []int{6, 4}, nil, false},
		{[]int{2, 3, 4}, []int{12, 1, 3}, []int{2, 3, 2, 2}, []int{12, 1, 6, 3}, true},
	}
	for _, tc := range tests {
		got, ok := viewStrides(tc.shape, tc.strides, tc.to)
		assert.Equal(t, tc.ok, ok, "%v %v → %v", tc.shape, tc.strides, tc.to)
		if ok {
			assert.Equal(t, tc.want, got)
		}
	}
}

// TestDtypesMatchBackend: a tensor dtype converts to the Compute dtype of
// the same number, so both lists must keep one order.
func TestDtypesMatchBackend(t *testing.T) {
	pairs := []struct {
		d    Dtype
		want dtypes.Dtype
	}{
		{Float32, dtypes.Float32}, {Float64, dtypes.Float64}, {Float16, dtypes.Float16},
		{BFloat16, dtypes.BFloat16}, {Int64, dtypes.Int64}, {Int32, dtypes.Int32}, {Bool, dtypes.Bool},
	}
	for _, p := range pairs {
		if dtypes.Dtype(p.d) != p.want {
			t.Errorf("%s is backend dtype %d, want %d (%s)", p.d, dtypes.Dtype(p.d), p.want, p.want)
		}
	}
	if Dtype(len(pairs)).valid() {
		t.Errorf("Dtype(%d) is valid: a new dtype needs a dtypes.Dtype and a row here", len(pairs))
	}
}
