package layout

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestBroadcastStrides(t *testing.T) {
	st, err := BroadcastStrides([]int{2, 3, 4}, []int{3, 1}, []int{1, 1})
	if err != nil || fmt.Sprint(st) != "[0 1 0]" {
		t.Fatalf("got %v, %v", st, err)
	}
	if _, err := BroadcastStrides([]int{2, 3}, []int{2}, []int{1}); err == nil {
		t.Fatal("want error for incompatible shapes")
	}
}

// TestIsContiguous: row-major without gaps, size-1 dimensions' strides
// ignored; strides that do not match the shape are the package's panic.
func TestIsContiguous(t *testing.T) {
	tests := []struct {
		shape, strides []int
		want           bool
	}{
		{nil, nil, true},
		{[]int{2, 3}, []int{3, 1}, true},
		{[]int{2, 3}, []int{1, 2}, false},
		{[]int{2, 1, 3}, []int{3, 99, 1}, true},
		{[]int{2, 3}, []int{4, 1}, false},
	}
	for _, tt := range tests {
		if got := IsContiguous(tt.shape, tt.strides); got != tt.want {
			t.Errorf("IsContiguous(%v, %v) = %v, want %v", tt.shape, tt.strides, got, tt.want)
		}
	}
	assert.PanicsWithValue(t, "layout: IsContiguous: 1 strides for 2 dimensions", func() { IsContiguous([]int{2, 3}, []int{1}) })
}
