package tensor

import (
	"strings"
	"testing"
)

// A released node must never run: if one were reached (a bug in the
// counting), backward says so instead of using freed saved tensors.
func TestBackwardRefusesAReleasedNode(t *testing.T) {
	x := Randn([]int{3}, OnHost(false), RequiresGrad())
	y := x.Exp()
	loss := y.Sum()
	exp := y.gradFn
	y.Release()
	if got := exp.refs.Load(); got != 1 {
		t.Fatalf("ExpBackward0 has %d references, want 1 (SumBackward0's edge)", got)
	}
	exp.drop() // simulate a lost reference
	err := Try(func() { loss.Backward() })
	if err == nil || !strings.Contains(err.Error(), "ExpBackward0 was released") {
		t.Fatalf("got %v, want an error naming the released ExpBackward0", err)
	}
	exp.refs.Store(1) // give back the simulated reference, for loss's release
	loss.Release()
}
