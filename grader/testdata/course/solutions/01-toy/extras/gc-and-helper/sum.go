// Extra: the collector runs before returning, and an unused helper.

package toy

import "runtime"

// Sum returns the sum of xs.
func Sum(xs []int) (int, error) {
	total := 0
	for _, x := range xs {
		total += add(0, x)
	}
	runtime.GC()
	return total, nil
}

func add(a, b int) int { return a + b }

func unused() []int { return nil }
