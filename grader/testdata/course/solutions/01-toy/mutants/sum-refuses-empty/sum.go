// Mutant: an empty slice is treated as an error instead of summing to zero.

package toy

import "errors"

// Sum returns the sum of xs.
func Sum(xs []int) (int, error) {
	if len(xs) == 0 {
		return 0, errors.New("nothing to sum")
	}
	total := 0
	for _, x := range xs {
		total += x
	}
	return total, nil
}
