//go:build cuda || nvrtc

package cuda

// NVRTC, loaded at run time (dl.go). The prototypes below are NVRTC's
// (nvrtc.h, unchanged from CUDA 11 to 13), declared here so that the build
// needs no NVRTC header or library.

/*
#include <stddef.h>
#include <stdlib.h>

typedef int nvrtcResult; // an enum in nvrtc.h; NVRTC_SUCCESS is 0
typedef struct _nvrtcProgram *nvrtcProgram;

typedef nvrtcResult (*createFn)(nvrtcProgram *, const char *, const char *, int, const char *const *, const char *const *);
typedef nvrtcResult (*compileFn)(nvrtcProgram, int, const char *const *);
typedef nvrtcResult (*sizeFn)(nvrtcProgram, size_t *);
typedef nvrtcResult (*textFn)(nvrtcProgram, char *);
typedef nvrtcResult (*destroyFn)(nvrtcProgram *);
typedef const char *(*errorStringFn)(nvrtcResult);
typedef nvrtcResult (*versionFn)(int *, int *);

static nvrtcResult gpukitNvrtcCreate(void *f, nvrtcProgram *p, const char *src, const char *name) {
	return ((createFn)f)(p, src, name, 0, NULL, NULL);
}
static nvrtcResult gpukitNvrtcCompile(void *f, nvrtcProgram p, int n, char **opts) {
	return ((compileFn)f)(p, n, (const char *const *)opts);
}
static nvrtcResult gpukitNvrtcSize(void *f, nvrtcProgram p, size_t *n) { return ((sizeFn)f)(p, n); }
static nvrtcResult gpukitNvrtcText(void *f, nvrtcProgram p, char *out) { return ((textFn)f)(p, out); }
static nvrtcResult gpukitNvrtcDestroy(void *f, nvrtcProgram *p) { return ((destroyFn)f)(p); }
static const char *gpukitNvrtcErrorString(void *f, nvrtcResult r) { return ((errorStringFn)f)(r); }
static nvrtcResult gpukitNvrtcVersion(void *f, int *major, int *minor) { return ((versionFn)f)(major, minor); }
*/
import "C"

import (
	"fmt"
	"sync"
	"unsafe"
)

// nvrtcAPI holds NVRTC's entry points.
type nvrtcAPI struct {
	lib                                         *dynLibrary
	create, compile, ptxSize, ptx, logSize, log unsafe.Pointer
	destroy, errorString, version               unsafe.Pointer
}

// loadNVRTC opens NVRTC once per process.
var loadNVRTC = sync.OnceValues(func() (*nvrtcAPI, error) {
	lib, err := openLibrary(nvrtcLibrary)
	if err != nil {
		return nil, err
	}
	a := &nvrtcAPI{lib: lib}
	err = lib.syms(map[string]*unsafe.Pointer{
		"nvrtcCreateProgram":     &a.create,
		"nvrtcCompileProgram":    &a.compile,
		"nvrtcGetPTXSize":        &a.ptxSize,
		"nvrtcGetPTX":            &a.ptx,
		"nvrtcGetProgramLogSize": &a.logSize,
		"nvrtcGetProgramLog":     &a.log,
		"nvrtcDestroyProgram":    &a.destroy,
		"nvrtcGetErrorString":    &a.errorString,
		"nvrtcVersion":           &a.version,
	})
	if err != nil {
		return nil, err
	}
	return a, nil
})

func (a *nvrtcAPI) check(what string, r C.nvrtcResult) error {
	if r == 0 {
		return nil
	}
	return fmt.Errorf("%s: %s (nvrtcResult %d)", what, C.GoString(C.gpukitNvrtcErrorString(a.errorString, r)), int(r))
}

// nvrtcVersion returns the loaded NVRTC's version and the file it came
// from.
func nvrtcVersion() (major, minor int, path string, err error) {
	a, err := loadNVRTC()
	if err != nil {
		return 0, 0, "", err
	}
	var ma, mi C.int
	if err := a.check("nvrtcVersion", C.gpukitNvrtcVersion(a.version, &ma, &mi)); err != nil {
		return 0, 0, "", err
	}
	return int(ma), int(mi), a.lib.path, nil
}

// nvrtcCompile compiles the CUDA C source src (named name in messages)
// with options and returns the PTX and NVRTC's log. A compilation error
// returns the log too.
func nvrtcCompile(name, src string, options []string) (ptx, log string, err error) {
	a, err := loadNVRTC()
	if err != nil {
		return "", "", err
	}
	csrc, cname := C.CString(src), C.CString(name)
	defer C.free(unsafe.Pointer(csrc))
	defer C.free(unsafe.Pointer(cname))
	var prog C.nvrtcProgram
	if err := a.check("nvrtcCreateProgram", C.gpukitNvrtcCreate(a.create, &prog, csrc, cname)); err != nil {
		return "", "", err
	}
	defer C.gpukitNvrtcDestroy(a.destroy, &prog)

	// The options as a C array of C strings (cgo forbids passing Go
	// memory that holds pointers).
	copts := (**C.char)(C.malloc(C.size_t(max(len(options), 1)) * C.size_t(unsafe.Sizeof((*C.char)(nil)))))
	defer C.free(unsafe.Pointer(copts))
	optSlice := unsafe.Slice(copts, max(len(options), 1))
	for i, o := range options {
		optSlice[i] = C.CString(o)
		defer C.free(unsafe.Pointer(optSlice[i]))
	}
	compileErr := a.check("nvrtcCompileProgram", C.gpukitNvrtcCompile(a.compile, prog, C.int(len(options)), copts))

	log, err = a.text(prog, a.logSize, a.log, "nvrtcGetProgramLog")
	if err != nil {
		return "", "", err
	}
	if compileErr != nil {
		return "", log, compileErr
	}
	ptx, err = a.text(prog, a.ptxSize, a.ptx, "nvrtcGetPTX")
	return ptx, log, err
}

// text reads the program's log or PTX: sizeFn gives its size with the
// terminating NUL, textFn copies it.
func (a *nvrtcAPI) text(prog C.nvrtcProgram, sizeFn, textFn unsafe.Pointer, what string) (string, error) {
	var n C.size_t
	if err := a.check(what+"Size", C.gpukitNvrtcSize(sizeFn, prog, &n)); err != nil {
		return "", err
	}
	if n <= 1 {
		return "", nil
	}
	buf := (*C.char)(C.malloc(n))
	defer C.free(unsafe.Pointer(buf))
	if err := a.check(what, C.gpukitNvrtcText(textFn, prog, buf)); err != nil {
		return "", err
	}
	return C.GoStringN(buf, C.int(n-1)), nil
}
