package tensor

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// view is a tensor of one storage with only the fields the overlap
// checks read: no memory behind it.
func view(st *Storage, offset int, shape, strides []int) *Tensor {
	return &Tensor{st: st, offset: offset, shape: shape, strides: strides, dtype: Float32}
}

// c10's is_non_overlapping_and_dense on the layouts gpukit's views make.
func TestNonOverlappingAndDense(t *testing.T) {
	tests := []struct {
		name           string
		shape, strides []int
		want           bool
	}{
		{"0-d", []int{}, []int{}, true},
		{"vector", []int{4}, []int{1}, true},
		{"stepped vector", []int{4}, []int{2}, false},
		{"one element, any stride", []int{1}, []int{5}, true},
		{"contiguous", []int{2, 3}, []int{3, 1}, true},
		{"transposed", []int{3, 2}, []int{1, 3}, true},
		{"permuted", []int{2, 2, 2}, []int{4, 1, 2}, true},
		{"size-1 dimension, any stride", []int{2, 1, 3}, []int{3, 99, 1}, true},
		{"rows of a wider matrix", []int{2, 3}, []int{6, 1}, false},
		{"expanded", []int{3, 2}, []int{0, 1}, false},
		{"two dimensions, one stride", []int{2, 2}, []int{1, 1}, false},
		{"empty expanded", []int{0, 3}, []int{0, 0}, true},
		{"rank 10", []int{2, 2, 2, 2, 2, 2, 2, 2, 2, 2}, []int{512, 256, 128, 64, 32, 16, 8, 4, 2, 1}, true},
	}
	for _, tc := range tests {
		assert.Equal(t, tc.want, nonOverlappingAndDense(tc.shape, tc.strides), tc.name)
	}
}

// PyTorch's has_internal_overlap and get_overlap_status
// (aten/src/ATen/MemoryOverlap.cpp), case by case.
func TestOverlapStatusFollowsMemoryOverlapCpp(t *testing.T) {
	st, other := new(Storage), new(Storage)
	internal := []struct {
		name           string
		shape, strides []int
		want           internalOverlap
	}{
		{"dense", []int{3}, []int{1}, internalNo},
		{"expanded", []int{3}, []int{0}, internalYes},
		{"expanded rows", []int{3, 2}, []int{0, 1}, internalYes},
		{"stepped", []int{3}, []int{2}, internalTooHard},
		{"empty expanded", []int{0, 3}, []int{0, 0}, internalNo},
		{"size-1 dimension with stride 0", []int{1, 3}, []int{0, 1}, internalNo},
	}
	for _, tc := range internal {
		assert.Equal(t, tc.want, hasInternalOverlap(view(st, 0, tc.shape, tc.strides)), tc.name)
	}

	y := view(st, 0, []int{6}, []int{1})
	sq := view(st, 0, []int{2, 2}, []int{2, 1})
	pairs := []struct {
		name string
		a, b *Tensor
		want overlapStatus
	}{
		{"same tensor", y, y, overlapFull},
		{"same elements, another handle", y, view(st, 0, []int{6}, []int{1}), overlapFull},
		{"another storage", y, view(other, 0, []int{6}, []int{1}), overlapNo},
		{"disjoint", view(st, 0, []int{3}, []int{1}), view(st, 3, []int{3}, []int{1}), overlapNo},
		{"shifted", view(st, 1, []int{4}, []int{1}), view(st, 0, []int{4}, []int{1}), overlapPartial},
		{"contained", y, view(st, 2, []int{1}, []int{1}), overlapPartial},
		{"same bytes, transposed", sq, view(st, 0, []int{2, 2}, []int{1, 2}), overlapPartial},
		{"same bytes, other rank", view(st, 0, []int{1, 4}, []int{4, 1}), view(st, 0, []int{4}, []int{1}), overlapPartial},
		{"empty", y, view(st, 2, []int{0}, []int{1}), overlapNo},
		{"stepped, sharing elements", view(st, 0, []int{3}, []int{2}), view(st, 1, []int{3}, []int{1}), overlapTooHard},
		{"stepped, on another storage", view(st, 0, []int{3}, []int{2}), view(other, 0, []int{3}, []int{1}), overlapTooHard},
		{"expanded, sharing elements", view(st, 0, []int{3}, []int{0}), y, overlapTooHard},
		{"byte ranges, not element offsets", y, &Tensor{st: st, offset: 3, shape: []int{1}, strides: []int{1}, dtype: Float64}, overlapNo},
	}
	for _, tc := range pairs {
		assert.Equal(t, tc.want, getOverlapStatus(tc.a, tc.b), tc.name)
	}
}

// The checks look at shapes and strides, never at elements, and allocate
// nothing when they pass.
func TestOverlapChecksAllocateNothing(t *testing.T) {
	st := new(Storage)
	shape, strides := []int{2, 3, 4, 5, 6, 7, 8, 9}, make([]int, 8)
	s := 1
	for i := len(shape) - 1; i >= 0; i-- {
		strides[i], s = s, s*shape[i]
	}
	out := view(st, 0, shape, strides)
	in := view(st, 0, shape, strides)
	stepped := view(st, 0, []int{1 << 20}, []int{2})
	allocs := testing.AllocsPerRun(100, func() {
		checkNoInternalOverlap("test", out)
		checkNoInternalOverlap("test", stepped)
		checkNoPartialOverlap("test", out, in, "in")
		checkNoPartialOverlap("test", stepped, in, "in")
		_ = sameView(out, in)
	})
	assert.Zero(t, allocs)
}
