package alloc

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// A pool whose only cached block is taken and given back at every step (a
// training loop's) makes no leaf each time: the emptied leaf is kept.
func TestFreeSetReusesItsEmptiedLeaf(t *testing.T) {
	var s freeSet
	n := &node{addr: 1 << 20, size: 2 << 20}
	allocs := testing.AllocsPerRun(100, func() {
		s.insert(n)
		s.remove(n)
	})
	require.Zero(t, allocs, "allocations per insert and remove of the only block")
	require.NoError(t, checkSet(&s))
}

// Leaves split and merge through the spare, and the set stays ordered,
// counted and free of stale nodes at every step.
func TestFreeSetSplitsAndMergesThroughTheSpare(t *testing.T) {
	var s freeSet
	var nodes []*node
	for i := range 4 * leafMax {
		n := &node{addr: uint64(i) << 20, size: int64(1+i%7) << 20}
		nodes = append(nodes, n)
		s.insert(n)
		require.NoError(t, checkSet(&s), "after inserting %d", i)
	}
	// Remove every other, then the rest: leaves shrink, merge and empty.
	for _, start := range []int{0, 1} {
		for i := start; i < len(nodes); i += 2 {
			s.remove(nodes[i])
			require.NoError(t, checkSet(&s), "after removing %d", i)
		}
	}
	require.Zero(t, s.len())
	require.NotNil(t, s.spare, "the last leaf to empty is kept")
	for _, n := range nodes[:leafMax+1] { // one split, its right half in the spare
		s.insert(n)
		require.NoError(t, checkSet(&s))
	}
	require.Len(t, s.leaves, 2)
}
