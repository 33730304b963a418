//go:build nvrtc

package cuda

// Loading cuBLAS and NVRTC needs their libraries but no GPU, so these run
// in CI with the nvrtc tag (see nvrtc_test.go).

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCUBLASIsLoadedAtRunTime(t *testing.T) {
	a, err := loadCUBLAS()
	if err != nil {
		t.Fatal(err)
	}
	if a.create == nil || a.setStream == nil || a.sgemm == nil || a.dgemm == nil || a.gemmEx == nil {
		t.Errorf("cuBLAS entry points missing: %+v", a)
	}
	t.Logf("cuBLAS from %s", a.lib.path)
}

func TestOpenLibraryNamesWhatIsMissing(t *testing.T) {
	// A folder on the search path holding a file of the right name that is
	// not a shared library: its dlopen error is part of the message.
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "lib64"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "lib64", "libgpukit-none.so.2"), []byte("not ELF"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("CUDA_PATH", dir)
	lib := library{name: "Nothing", sonames: []string{"libgpukit-none.so.3", "libgpukit-none.so.2"}}
	_, err := openLibrary(lib)
	if err == nil {
		t.Fatal("a missing library opened")
	}
	for _, want := range []string{"cuda: Nothing not found", "libgpukit-none.so.3", filepath.Join(dir, "lib64"), "libgpukit-none.so.2: "} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}
