//go:build !purego

package kernels

// arithVVAVX is implemented in binary_amd64.s.
//
//go:noescape
func arithVVAVX(op int, d, a, b *float32, n int, stream int)

// arithVSAVX is implemented in binary_amd64.s.
//
//go:noescape
func arithVSAVX(op int, d, a *float32, s float32, n int, stream int)
