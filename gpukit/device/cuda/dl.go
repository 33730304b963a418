//go:build cuda || nvrtc

package cuda

// dlopen and dlsym, for the libraries that libsearch.go locates. The
// shims of cublas.go and nvrtc.go call what dlsym returns through small C
// trampolines: Go cannot call a C function pointer itself.

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdlib.h>

static void *gpukitDlopen(const char *path) { return dlopen(path, RTLD_NOW | RTLD_LOCAL); }

static const char *gpukitDlerror(void) { return dlerror(); }
*/
import "C"

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"unsafe"
)

// dynLibrary is an opened shared library. It is never closed: its
// functions live as long as the process.
type dynLibrary struct {
	lib    library
	path   string // what dlopen was given
	handle unsafe.Pointer
}

// dlMu serializes dlopen/dlerror pairs: dlerror's message is per thread,
// and the calls may land on different threads otherwise.
var dlMu sync.Mutex

// openLibrary opens the newest version of l that dlopen accepts, looking
// where libsearch.go says.
func openLibrary(l library) (*dynLibrary, error) {
	dirs := l.searchDirs(os.Getenv, filepath.Glob)
	var failures []string
	for _, c := range l.candidates(dirs, fileExists) {
		h, err := dlopen(c)
		if err == nil {
			return &dynLibrary{lib: l, path: c, handle: h}, nil
		}
		// A bare soname that the loader does not find is the usual case;
		// a file that exists and does not open (a missing dependency, the
		// wrong architecture) is worth reporting.
		if filepath.IsAbs(c) {
			failures = append(failures, err.Error())
		}
	}
	return nil, fmt.Errorf("%s", l.notFoundError(dirs, failures))
}

func dlopen(path string) (unsafe.Pointer, error) {
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	dlMu.Lock()
	defer dlMu.Unlock()
	h := C.gpukitDlopen(cpath)
	if h == nil {
		return nil, fmt.Errorf("%s", C.GoString(C.gpukitDlerror()))
	}
	return h, nil
}

// sym returns the address of the function called name.
func (d *dynLibrary) sym(name string) (unsafe.Pointer, error) {
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	dlMu.Lock()
	defer dlMu.Unlock()
	p := C.dlsym(d.handle, cname)
	if p == nil {
		return nil, fmt.Errorf("cuda: %s (%s) has no function %s: %s", d.lib.name, d.path, name, C.GoString(C.gpukitDlerror()))
	}
	return p, nil
}

// syms fills each *dst with the address of the function it is mapped to.
func (d *dynLibrary) syms(want map[string]*unsafe.Pointer) error {
	for name, dst := range want {
		p, err := d.sym(name)
		if err != nil {
			return err
		}
		*dst = p
	}
	return nil
}
