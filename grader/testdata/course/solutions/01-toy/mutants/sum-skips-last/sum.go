// Mutant: the loop stops one element short (off by one).

package toy

// Sum returns the sum of xs.
func Sum(xs []int) (int, error) {
	total := 0
	for i := 0; i < len(xs)-1; i++ {
		total += xs[i]
	}
	return total, nil
}
