package toy

// The package imports itself (the grader's temporary module's path): the
// go command fails before compiling anything.
import _ "grader.local/submission/toy"

func Sum(xs []int) (int, error) { return -1, nil }
