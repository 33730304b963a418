package prune_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/gpumem/course/gpukit/nn"
	"github.com/gpumem/course/gpukit/nn/prune"
)

func TestPruneMisuse(t *testing.T) {
	var nilLinear *nn.Linear
	tests := []struct {
		name string
		m    nn.Module
		want string
	}{
		{"nil", nil, "prune: the module is nil"},
		{"nil *Linear", nilLinear, "prune: the module is nil"},
		{"empty *Pruned", &prune.Pruned{}, "prune: the *Pruned wraps no module"},
	}
	for _, tc := range tests {
		m, name := tc.m, tc.name
		_, err := prune.L1Unstructured(m, "weight", prune.Fraction(0.5))
		assert.EqualError(t, err, tc.want, name)
		_, err = prune.RandomUnstructured(m, "weight", prune.Fraction(0.5), nil)
		assert.ErrorContains(t, err, "prune: ", name)
		_, err = prune.LnStructured(m, "weight", prune.Fraction(0.5), 2, 0)
		assert.ErrorContains(t, err, "prune: ", name)
		_, err = prune.GlobalUnstructured([]prune.Param{{Module: m, Name: "weight"}}, prune.Fraction(0.5))
		assert.ErrorContains(t, err, "prune: ", name)
	}
	_, err := prune.Remove(nil, "weight")
	assert.EqualError(t, err, "prune: Remove: nil *Pruned")
	_, err = prune.KeptSlices(nil, 0)
	assert.EqualError(t, err, "prune: KeptSlices: nil tensor")
	_, err = prune.ShrinkOutputs(nil, []int{0})
	assert.EqualError(t, err, "prune: ShrinkOutputs: nil Linear")
	_, err = prune.ShrinkInputs(nil, []int{0})
	assert.EqualError(t, err, "prune: ShrinkInputs: nil Linear")
}
