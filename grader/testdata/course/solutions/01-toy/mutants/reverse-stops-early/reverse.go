// Mutant: the swaps stop one pair before the middle.

package toy

// Reverse reverses xs in place.
func Reverse(xs []int) error {
	for i, j := 0, len(xs)-1; i < j-1; i, j = i+1, j-1 {
		xs[i], xs[j] = xs[j], xs[i]
	}
	return nil
}
