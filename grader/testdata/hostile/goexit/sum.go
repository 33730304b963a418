package toy

import "runtime"

// Sum ends the test's goroutine, which testing must not count as a pass.
func Sum(xs []int) (int, error) {
	runtime.Goexit()
	return -1, nil
}
