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

static void sgemm_nn(int m, int n, int k, float alpha, const float *a, const float *b, float beta, float *c) {
	cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, alpha, a, k, b, n, beta, c, n);
}
*/
import "C"

import "unsafe"

// haveOpenBLAS reports whether this binary was built with -tags openblas.
const haveOpenBLAS = true

// openblasSgemm computes C = A·B (row-major, no transposes) with cblas_sgemm.
func openblasSgemm(m, n, k int, a, b, c []float32) {
	C.sgemm_nn(C.int(m), C.int(n), C.int(k), 1,
		(*C.float)(unsafe.Pointer(&a[0])), (*C.float)(unsafe.Pointer(&b[0])), 0,
		(*C.float)(unsafe.Pointer(&c[0])))
}

// openblasInfo describes the OpenBLAS build and the kernel it selected.
func openblasInfo() string {
	return C.GoString(C.openblas_get_config()) + " core=" + C.GoString(C.openblas_get_corename())
}
