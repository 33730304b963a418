//go:build openblas

package bench

/*
#cgo LDFLAGS: -lopenblas
#include <cblas.h>

// openblas_config is declared by OpenBLAS's own header; re-declared here so
// the harness also compiles against the generic Debian cblas.h.
char* openblas_get_config(void);
char* openblas_get_corename(void);
int openblas_get_num_threads(void);

static void sgemm_rm(int ta, int tb, int m, int n, int k, const float *a, const float *b, float *c) {
	cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
		m, n, k, 1, a, ta ? m : k, b, tb ? k : n, 0, c, n);
}
*/
import "C"

import "unsafe"

// haveOpenBLAS reports whether this binary was built with -tags openblas.
const haveOpenBLAS = true

// openblasSgemm computes C = op(A)·op(B) (row-major, packed operands) with
// cblas_sgemm.
func openblasSgemm(tA, tB bool, m, n, k int, a, b, c []float32) {
	C.sgemm_rm(cbool(tA), cbool(tB), C.int(m), C.int(n), C.int(k),
		(*C.float)(unsafe.Pointer(&a[0])), (*C.float)(unsafe.Pointer(&b[0])),
		(*C.float)(unsafe.Pointer(&c[0])))
}

func cbool(b bool) C.int {
	if b {
		return 1
	}
	return 0
}

// openblasInfo describes the OpenBLAS build and the kernel it selected.
func openblasInfo() string {
	return C.GoString(C.openblas_get_config()) + " core=" + C.GoString(C.openblas_get_corename())
}
