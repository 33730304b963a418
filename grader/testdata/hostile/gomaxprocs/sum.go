package toy

import "runtime"

// init raises GOMAXPROCS: with more than one thread a data race can tear
// an interface value and forge a pointer to any address, without unsafe.
// Sum itself is right: the verdict must still refuse a process the code
// has changed.
func init() {
	runtime.GOMAXPROCS(4)
}

// Sum returns the sum of xs.
func Sum(xs []int) (int, error) {
	total := 0
	for _, x := range xs {
		total += x
	}
	return total, nil
}
