package toy

// sample is a given helper: the student does not edit it.
func sample() []int { return []int{3, 1, 4, 1, 5} }
