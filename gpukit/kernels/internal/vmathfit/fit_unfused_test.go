//go:build amd64 && !amd64.v3

package main

// fitIsUnfused: see fit_fused_test.go.
const fitIsUnfused = true
