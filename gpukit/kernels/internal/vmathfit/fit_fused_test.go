//go:build !amd64 || amd64.v3

package main

// The compiler fuses a*b + c into one FMA here (arm64 and the others;
// amd64 from GOAMD64=v3), which may move the last bit of a fitted
// coefficient: vmath_tables.go is generated, and checked, on amd64 up to
// v2.
const fitIsUnfused = false
