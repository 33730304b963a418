package tensor

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// An operand already of the op's shape is its own layout: no handle is
// made for it (most operands of most ops); a broadcast one gets stride 0
// where it is expanded.
func TestLayoutAs(t *testing.T) {
	st := &Storage{}
	x := view(st, 3, []int{2, 1, 4}, []int{4, 4, 1})
	same := []int{2, 1, 4}
	assert.Same(t, x, x.layoutAs(same))
	assert.Zero(t, testing.AllocsPerRun(100, func() { _ = x.layoutAs(same) }))

	b := x.layoutAs([]int{3, 2, 5, 4})
	assert.NotSame(t, x, b)
	assert.Equal(t, []int{3, 2, 5, 4}, b.shape)
	assert.Equal(t, []int{0, 4, 0, 1}, b.strides)
	assert.Equal(t, 3, b.offset)
	assert.Same(t, st, b.st)
	assert.Nil(t, b.ref, "a layout owns nothing")
}
