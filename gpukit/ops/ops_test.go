package ops_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/gpumem/course/gpukit/ops"
)

func TestNames(t *testing.T) {
	for _, op := range ops.Unaries() {
		assert.True(t, op.Valid())
		assert.NotContains(t, op.String(), "UnaryOp(", "unary op %d has no name", op)
	}
	for _, op := range ops.Binaries() {
		assert.NotContains(t, op.String(), "BinaryOp(", "binary op %d has no name", op)
	}
	for _, op := range ops.Reduces() {
		assert.NotContains(t, op.String(), "ReduceOp(", "reduce op %d has no name", op)
	}
	assert.Equal(t, "UnaryOp(200)", ops.Unary(200).String())
	assert.Equal(t, "BinaryOp(200)", ops.Binary(200).String())
	assert.Equal(t, "ReduceOp(200)", ops.Reduce(200).String())
	assert.False(t, ops.Binary(200).Comparison())
	assert.False(t, ops.Unary(200).Transcendental())
}

func TestProperties(t *testing.T) {
	var arithmetic, comparisons []ops.Binary
	for _, op := range ops.Binaries() {
		if op.Arithmetic() {
			arithmetic = append(arithmetic, op)
		}
		if op.Comparison() {
			comparisons = append(comparisons, op)
		}
	}
	assert.Equal(t, []ops.Binary{ops.Add, ops.Sub, ops.Mul, ops.Div}, arithmetic)
	assert.ElementsMatch(t, []ops.Binary{ops.Greater, ops.Less, ops.Equal, ops.GreaterEqual, ops.LessEqual}, comparisons)
	// The codes binary_amd64.s reads.
	assert.Equal(t, []int{0, 1, 2, 3}, []int{int(ops.Add), int(ops.Sub), int(ops.Mul), int(ops.Div)})
	for _, op := range []ops.Unary{ops.Identity, ops.Neg, ops.Abs, ops.Square, ops.Relu, ops.Sign} {
		assert.False(t, op.Transcendental(), op.String())
	}
	for _, op := range []ops.Unary{ops.Exp, ops.Log, ops.Tanh, ops.Gelu, ops.GeluDeriv} {
		assert.True(t, op.Transcendental(), op.String())
	}
	backward := map[ops.Binary]ops.Unary{}
	for _, op := range append(ops.Binaries(), ops.Binary(200)) {
		if d, ok := op.Derivative(); ok {
			backward[op] = d
		}
	}
	assert.Equal(t, map[ops.Binary]ops.Unary{
		ops.GeluBackward: ops.GeluDeriv, ops.GeluTanhBackward: ops.GeluTanhDeriv,
		ops.SigmoidBackward: ops.SigmoidDeriv, ops.TanhBackward: ops.TanhDeriv,
	}, backward)
}

func ExampleBinary_Derivative() {
	d, ok := ops.GeluBackward.Derivative()
	fmt.Println(d, ok)
	_, ok = ops.Mul.Derivative()
	fmt.Println(ok)
	// Output:
	// GeluDeriv true
	// false
}

func ExampleBinary_Comparison() {
	for _, op := range []ops.Binary{ops.Add, ops.GreaterEqual} {
		fmt.Println(op, op.Comparison())
	}
	// Output:
	// Add false
	// GreaterEqual true
}
