//go:build race

package snapshot

// raceEnabled: this test binary was built with -race.
const raceEnabled = true
