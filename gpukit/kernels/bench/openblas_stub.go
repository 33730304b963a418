//go:build !openblas

package bench

const haveOpenBLAS = false

func openblasSgemm(tA, tB bool, m, n, k int, a, b, c []float32) {
	panic("built without -tags openblas")
}

func openblasInfo() string { return "" }
