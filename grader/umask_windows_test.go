package grader

// umask: Windows has none.
func umask(mask int) int { return 0 }
