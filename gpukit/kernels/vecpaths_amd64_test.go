//go:build !purego

package kernels

import (
	"os"
	"testing"
)

// forEachVecPath runs f once per loop of the assembly this CPU can run:
// "avx512" (useAVX512Math: sixteen lanes a step, then the AVX2 loop on a
// last block of eight) where it has AVX-512F, then "avx2" (the AVX2 loop
// alone), so that the tests comparing the assembly with the Go functions
// check both.
func forEachVecPath(t *testing.T, f func(t *testing.T)) {
	saved := useAVX512Math
	defer func() { useAVX512Math = saved }()
	if saved {
		t.Run("avx512", f)
	}
	useAVX512Math = false
	t.Run("avx2", f)
}

// GPUKIT_AVX512=0 runs the tests and benchmarks of this binary on the
// AVX2 loops alone, to time the two against each other:
//
//	go test -c -o k.test ./gpukit/kernels/
//	GPUKIT_AVX512=0 ./k.test -test.run '^$' -test.bench 'MemBound(Gelu|GeluGrad|Softmax)$'
//	./k.test -test.run '^$' -test.bench 'MemBound(Gelu|GeluGrad|Softmax)$'
func init() {
	if os.Getenv("GPUKIT_AVX512") == "0" {
		useAVX512Math = false
	}
}
