// Extra: helpers named like the hidden tests' helper and like a package they import.

package toy

// Sum returns the sum of xs.
func Sum(xs []int) (int, error) {
	total := tallyOfTheHiddenTests(xs)
	return total, require(len(xs) >= 0, "a length is never negative")
}

// tallyOfTheHiddenTests: the hidden tests declare a helper of this name.
func tallyOfTheHiddenTests(xs []int) int {
	n := 0
	for _, x := range xs {
		n += x
	}
	return n
}

// require: the hidden tests import testify's require.
func require(ok bool, why string) error {
	if !ok {
		panic(why)
	}
	return nil
}

// slices: the hidden tests import the slices package.
const slices = "slices"
