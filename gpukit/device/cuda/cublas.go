//go:build cuda || nvrtc

package cuda

// cuBLAS, loaded at run time (dl.go). The prototypes below are those of
// cublas_api.h, whose exported names carry the _v2 suffix that
// cublas_v2.h hides behind macros; unchanged from CUDA 11 to 13.

/*
#include <stdint.h>

typedef int cublasStatus_t; // an enum; CUBLAS_STATUS_SUCCESS is 0
typedef struct cublasContext *cublasHandle_t;
typedef void *cudaStream_t;  // the runtime's stream is the driver's CUstream

typedef cublasStatus_t (*createFn)(cublasHandle_t *);
typedef cublasStatus_t (*setStreamFn)(cublasHandle_t, cudaStream_t);
typedef cublasStatus_t (*sgemmFn)(cublasHandle_t, int, int, int, int, int, const float *, const float *, int,
	const float *, int, const float *, float *, int);
typedef cublasStatus_t (*dgemmFn)(cublasHandle_t, int, int, int, int, int, const double *, const double *, int,
	const double *, int, const double *, double *, int);
// cublasGemmEx's cudaDataType_t, cublasComputeType_t and
// cublasGemmAlgo_t are enums: CUDA_R_32F 0, CUDA_R_16F 2, CUDA_R_16BF 14
// (library_types.h), CUBLAS_COMPUTE_32F 68 and CUBLAS_GEMM_DEFAULT -1
// (cublas_api.h, CUDA 11.0 and later).
typedef cublasStatus_t (*gemmExFn)(cublasHandle_t, int, int, int, int, int, const void *, const void *, int, int,
	const void *, int, int, const void *, void *, int, int, int, int);
typedef const char *(*statusNameFn)(cublasStatus_t);

static cublasStatus_t gpukitBlasCreate(void *f, cublasHandle_t *h) { return ((createFn)f)(h); }

// gpukitGemm is a column-major S/DGEMM on stream s; device addresses
// arrive as integers. Transpose flags are cublasOperation_t values
// (CUBLAS_OP_N 0, CUBLAS_OP_T 1).
static cublasStatus_t gpukitGemm(void *setStream, void *gemm, cublasHandle_t h, void *s, int dbl, int ta, int tb,
		int m, int n, int k, double alpha, uint64_t a, int lda, uint64_t b, int ldb, double beta, uint64_t c, int ldc) {
	cublasStatus_t st = ((setStreamFn)setStream)(h, s);
	if (st != 0) return st;
	if (dbl) {
		return ((dgemmFn)gemm)(h, ta, tb, m, n, k, &alpha, (const double *)(uintptr_t)a, lda,
			(const double *)(uintptr_t)b, ldb, &beta, (double *)(uintptr_t)c, ldc);
	}
	float fa = (float)alpha, fb = (float)beta;
	return ((sgemmFn)gemm)(h, ta, tb, m, n, k, &fa, (const float *)(uintptr_t)a, lda,
		(const float *)(uintptr_t)b, ldb, &fb, (float *)(uintptr_t)c, ldc);
}

// gpukitGemmEx is a column-major GEMM of matrices of cudaDataType_t
// dtype (A, B and C alike) computed in float32 (CUBLAS_COMPUTE_32F, alpha
// and beta as floats) on stream s.
static cublasStatus_t gpukitGemmEx(void *setStream, void *gemmEx, cublasHandle_t h, void *s, int dtype, int ta, int tb,
		int m, int n, int k, double alpha, uint64_t a, int lda, uint64_t b, int ldb, double beta, uint64_t c, int ldc) {
	cublasStatus_t st = ((setStreamFn)setStream)(h, s);
	if (st != 0) return st;
	float fa = (float)alpha, fb = (float)beta;
	return ((gemmExFn)gemmEx)(h, ta, tb, m, n, k, &fa, (const void *)(uintptr_t)a, dtype, lda,
		(const void *)(uintptr_t)b, dtype, ldb, &fb, (void *)(uintptr_t)c, dtype, ldc, 68, -1);
}

static const char *gpukitBlasStatusName(void *f, cublasStatus_t s) { return f ? ((statusNameFn)f)(s) : 0; }
*/
import "C"

import (
	"fmt"
	"sync"
	"unsafe"

	"github.com/gpumem/course/gpukit/dtypes"
)

// cublasAPI holds cuBLAS's entry points.
type cublasAPI struct {
	lib               *dynLibrary
	create, setStream unsafe.Pointer
	sgemm, dgemm      unsafe.Pointer
	gemmEx            unsafe.Pointer
	statusName        unsafe.Pointer // nil before CUDA 11.4
}

// loadCUBLAS opens cuBLAS once per process.
var loadCUBLAS = sync.OnceValues(func() (*cublasAPI, error) {
	lib, err := openLibrary(cublasLibrary)
	if err != nil {
		return nil, err
	}
	a := &cublasAPI{lib: lib}
	err = lib.syms(map[string]*unsafe.Pointer{
		"cublasCreate_v2":    &a.create,
		"cublasSetStream_v2": &a.setStream,
		"cublasSgemm_v2":     &a.sgemm,
		"cublasDgemm_v2":     &a.dgemm,
		"cublasGemmEx":       &a.gemmEx,
	})
	if err != nil {
		return nil, err
	}
	a.statusName, _ = lib.sym("cublasGetStatusName")
	return a, nil
})

func (a *cublasAPI) check(what string, st C.cublasStatus_t) error {
	if st == 0 {
		return nil
	}
	if name := C.gpukitBlasStatusName(a.statusName, st); name != nil {
		return fmt.Errorf("%s: %s", what, C.GoString(name))
	}
	return fmt.Errorf("%s: cublasStatus_t %d", what, int(st))
}

// blasHandle is a cuBLAS handle, bound to the context that was current
// when it was made. It is never destroyed: a Backend keeps its one handle
// for the life of the process, as it keeps its primary context.
type blasHandle struct {
	api *cublasAPI
	h   C.cublasHandle_t
}

// newBLASHandle loads cuBLAS if needed and creates a handle. A context
// must be current.
func newBLASHandle() (*blasHandle, error) {
	a, err := loadCUBLAS()
	if err != nil {
		return nil, err
	}
	h := &blasHandle{api: a}
	if err := a.check("cublasCreate", C.gpukitBlasCreate(a.create, &h.h)); err != nil {
		return nil, err
	}
	return h, nil
}

// gemm is column-major C = alpha·op(A)·op(B) + beta·C on stream (a
// CUstream, nil for the NULL stream): cublasSgemm, cublasDgemm, or for
// float16 and bfloat16 cublasGemmEx computing in float32 (gemmDataType).
func (h *blasHandle) gemm(stream unsafe.Pointer, dt dtypes.Dtype, transA, transB bool, m, n, k int, alpha float64,
	a uint64, lda int, b uint64, ldb int, beta float64, c uint64, ldc int) error {
	if ex, ok := gemmDataType(dt); ok {
		st := C.gpukitGemmEx(h.api.setStream, h.api.gemmEx, h.h, stream, C.int(ex), cBool(transA), cBool(transB),
			C.int(m), C.int(n), C.int(k), C.double(alpha), C.uint64_t(a), C.int(lda), C.uint64_t(b), C.int(ldb),
			C.double(beta), C.uint64_t(c), C.int(ldc))
		return h.api.check("cublasGemmEx", st)
	}
	dbl := dt == dtypes.Float64
	fn, name := h.api.sgemm, "cublasSgemm"
	if dbl {
		fn, name = h.api.dgemm, "cublasDgemm"
	}
	st := C.gpukitGemm(h.api.setStream, fn, h.h, stream, cBool(dbl), cBool(transA), cBool(transB),
		C.int(m), C.int(n), C.int(k), C.double(alpha), C.uint64_t(a), C.int(lda), C.uint64_t(b), C.int(ldb),
		C.double(beta), C.uint64_t(c), C.int(ldc))
	return h.api.check(name, st)
}

// gemmDataType is the cudaDataType_t of a dtype that Gemm computes
// through cublasGemmEx (CUDA_R_16F, CUDA_R_16BF).
func gemmDataType(dt dtypes.Dtype) (int, bool) {
	switch dt {
	case dtypes.Float16:
		return 2, true
	case dtypes.BFloat16:
		return 14, true
	}
	return 0, false
}

func cBool(v bool) C.int {
	if v {
		return 1
	}
	return 0
}
