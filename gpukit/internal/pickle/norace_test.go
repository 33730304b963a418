//go:build !race

package pickle

// raceEnabled: this test binary was built with -race.
const raceEnabled = false
