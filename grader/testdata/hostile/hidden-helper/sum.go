package toy

// Sum calls a helper that only the hidden tests declare: reaching the
// hidden tests' code (or learning that a name exists) must not compile.
func Sum(xs []int) (int, error) { return tallyOfTheHiddenTests(xs), nil }
