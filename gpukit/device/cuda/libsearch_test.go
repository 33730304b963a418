package cuda

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func fakeEnv(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

// fakeGlob matches a pattern against a fixed list of folders.
func fakeGlob(present ...string) func(string) ([]string, error) {
	return func(pattern string) ([]string, error) {
		var out []string
		for _, p := range present {
			if ok, _ := filepath.Match(pattern, p); ok {
				out = append(out, p)
			}
		}
		return out, nil
	}
}

func TestSearchDirs(t *testing.T) {
	tests := []struct {
		name    string
		lib     library
		env     map[string]string
		sites   []string
		want    []string
		notWant []string
	}{
		{
			name:    "unset variables are left out",
			lib:     cublasLibrary,
			env:     map[string]string{},
			want:    []string{"/usr/local/cuda/lib64", "/usr/lib/x86_64-linux-gnu"},
			notWant: []string{"/lib64", "lib64"},
		},
		{
			name: "CUDA 13 and 12 wheels under a pip site-packages",
			lib:  nvrtcLibrary,
			env:  map[string]string{"CUDA_PATH": "/opt/cuda-13.0/"},
			sites: []string{
				"/usr/local/lib/python3.12/dist-packages",
			},
			want: []string{
				"/opt/cuda-13.0/lib64",
				"/usr/local/lib/python3.12/dist-packages/nvidia/cu13/lib",
				"/usr/local/lib/python3.12/dist-packages/nvidia/cuda_nvrtc/lib",
			},
			notWant: []string{"/usr/local/lib/python3.12/dist-packages/nvidia/cublas/lib"},
		},
		{
			name:  "a virtual environment",
			lib:   cublasLibrary,
			env:   map[string]string{"VIRTUAL_ENV": "/home/ada/venv"},
			sites: []string{"/home/ada/venv/lib/python3.11/site-packages"},
			want: []string{
				"/home/ada/venv/lib/python3.11/site-packages/nvidia/cu13/lib",
				"/home/ada/venv/lib/python3.11/site-packages/nvidia/cublas/lib",
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dirs := tc.lib.searchDirs(fakeEnv(tc.env), fakeGlob(tc.sites...))
			for _, w := range tc.want {
				assert.Contains(t, dirs, w)
			}
			for _, w := range tc.notWant {
				assert.NotContains(t, dirs, w)
			}
			seen := map[string]bool{}
			for _, d := range dirs {
				assert.False(t, seen[d], "%s listed twice", d)
				seen[d] = true
			}
		})
	}
}

func TestCandidatesNewestFirst(t *testing.T) {
	dirs := []string{"/a", "/b"}
	present := map[string]bool{"/b/libcublas.so.12": true, "/a/libcublas.so.11": true, "/b/libcublas.so.11": true}
	got := cublasLibrary.candidates(dirs, func(p string) bool { return present[p] })
	assert.Equal(t, []string{
		"libcublas.so.13",
		"libcublas.so.12", "/b/libcublas.so.12",
		"libcublas.so.11", "/a/libcublas.so.11", "/b/libcublas.so.11",
	}, got)
}

func TestSonamesCoverDebianAndWheels(t *testing.T) {
	// Debian bookworm's nvidia-cuda-dev (CUDA 11.8) ships libnvrtc.so.11.2
	// and libcublas.so.11; PyTorch's CUDA 12 and 13 wheels .12 and .13.
	for _, so := range []string{"libnvrtc.so.11.2", "libnvrtc.so.12", "libnvrtc.so.13"} {
		assert.Contains(t, nvrtcLibrary.sonames, so)
	}
	for _, so := range []string{"libcublas.so.11", "libcublas.so.12", "libcublas.so.13"} {
		assert.Contains(t, cublasLibrary.sonames, so)
	}
}

func TestNotFoundErrorNamesWhatIsMissing(t *testing.T) {
	t.Setenv("LD_LIBRARY_PATH", "")
	msg := nvrtcLibrary.notFoundError([]string{"/usr/local/cuda/lib64"}, []string{"/x/libnvrtc.so.12: libnvrtc-builtins.so.12: cannot open"})
	for _, want := range []string{"cuda: NVRTC not found", "libnvrtc.so.13", "libnvrtc.so.11.2", `LD_LIBRARY_PATH=""`, "/usr/local/cuda/lib64", "libnvrtc-builtins", "add its folder to LD_LIBRARY_PATH"} {
		assert.True(t, strings.Contains(msg, want), "message lacks %q:\n%s", want, msg)
	}
}
