package toy

// Sum asks for 20 GB and touches it.
func Sum(xs []int) (int, error) {
	big := make([]byte, 20<<30)
	for i := 0; i < len(big); i += 4096 {
		big[i] = 1
	}
	return int(big[len(big)-1]), nil
}
