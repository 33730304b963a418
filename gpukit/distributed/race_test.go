//go:build race

package distributed_test

// raceEnabled: this test binary was built with -race.
const raceEnabled = true
