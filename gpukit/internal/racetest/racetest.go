// Package racetest tells a test whether its binary was built with the race
// detector (go test -race), for the tests that are one goroutine's work on
// much data: the detector finds nothing there and makes them minutes long,
// so they skip themselves under it and make unit-gpukit runs their packages
// a second time without it.
package racetest

import "testing"

// Skip skips t when the race detector is on, with why as the reason.
func Skip(t testing.TB, why string) {
	t.Helper()
	if Enabled {
		t.Skip(why)
	}
}
