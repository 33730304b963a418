package toy

// Sum returns the sum of xs.
func Sum(xs []int) (int, error) {
	total := 0
	for _, x := range xs {
		total += x
	}
	return total, nil
}
