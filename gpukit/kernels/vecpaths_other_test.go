//go:build !amd64 || purego

package kernels

import "testing"

// forEachVecPath runs f once: outside amd64 (or with purego) the vector
// forms have a single path (vecpaths_amd64_test.go has two).
func forEachVecPath(t *testing.T, f func(t *testing.T)) { f(t) }
