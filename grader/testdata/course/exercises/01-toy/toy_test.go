package toy

import "testing"

func TestSumSample(t *testing.T) {
	got, err := Sum(sample())
	if err != nil || got != 14 {
		t.Fatalf("Sum(sample()) = %d, %v; want 14, nil", got, err)
	}
}

func TestReverseSample(t *testing.T) {
	xs := sample()
	if err := Reverse(xs); err != nil || xs[0] != 5 {
		t.Fatalf("Reverse(sample()) gave %v, %v; want 5 first", xs, err)
	}
}
