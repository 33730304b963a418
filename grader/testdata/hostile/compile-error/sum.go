package toy

// Sum uses a name that does not exist.
func Sum(xs []int) (int, error) {
	return totalOf(xs), nil
}
