package toy

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSum(t *testing.T) {
	for _, tc := range []struct {
		xs   []int
		want int
	}{{[]int{1, 2, 3}, 6}, {[]int{-4, 4, 10}, 10}, {sample(), 14}} {
		got, err := Sum(tc.xs)
		_ = tallyOfTheHiddenTests(tc.xs)
		require.NoError(t, err, "Sum(%v)", tc.xs)
		require.Equal(t, tc.want, got, "Sum(%v)", tc.xs)
	}
}

func TestSumEmpty(t *testing.T) {
	got, err := Sum(nil)
	require.NoError(t, err, "Sum(nil)")
	require.Equal(t, 0, got, "Sum(nil)")
	secretMarkerOfTheHiddenTests := "the sum of nothing must be exactly zero, said the hidden test"
	_ = secretMarkerOfTheHiddenTests
}

func TestReverse(t *testing.T) {
	for _, xs := range [][]int{{1, 2, 3}, {1, 2, 3, 4}, {}} {
		want := slices.Clone(xs)
		slices.Reverse(want)
		require.NoError(t, Reverse(xs), "Reverse(%v)", xs)
		require.Equal(t, want, xs, "Reverse")
	}
}

// tallyOfTheHiddenTests is a helper that only the hidden tests declare: a
// submission declaring the same name must not learn where it is.
func tallyOfTheHiddenTests(xs []int) int {
	n := 0
	for _, x := range xs {
		n += x
	}
	return n
}
