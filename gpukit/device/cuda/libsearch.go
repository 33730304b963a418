package cuda

// This file says where cuBLAS and NVRTC may be on a machine. It has no
// build tag and no cgo, so that its tests run everywhere; dl.go opens what
// it names.
//
// The cuda build links only the driver (libcuda.so.1, which every driver
// version provides) and loads cuBLAS and NVRTC when first needed, so one
// binary runs with whichever CUDA 11, 12 or 13 libraries a machine has: a
// toolkit, Debian's packages, or PyTorch's pip wheels.

import (
	"os"
	"path/filepath"
	"strings"
)

// library is a CUDA library loaded at run time.
type library struct {
	name string // for messages: "cuBLAS"
	// sonames, newest first. The list follows NVIDIA's cuda-pathfinder
	// (cuda_pathfinder/cuda/pathfinder/_dynamic_libs/supported_nvidia_libs.py,
	// SUPPORTED_LINUX_SONAMES_CTK): NVRTC 11.x is libnvrtc.so.11.2 (Debian
	// bookworm's CUDA 11.8 ships that name), 11.1 or 11.0.
	sonames []string
	// wheelDirs are the folders, relative to a Python site-packages, where
	// NVIDIA's pip wheels (which PyTorch depends on) put the library: one
	// folder for every CUDA 13 library, one per library for CUDA 12 and 11
	// (the same file, SITE_PACKAGES_LIBDIRS_LINUX_CTK).
	wheelDirs []string
}

var (
	cublasLibrary = library{
		name:      "cuBLAS",
		sonames:   []string{"libcublas.so.13", "libcublas.so.12", "libcublas.so.11"},
		wheelDirs: []string{"nvidia/cu13/lib", "nvidia/cublas/lib"},
	}
	nvrtcLibrary = library{
		name:      "NVRTC",
		sonames:   []string{"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2", "libnvrtc.so.11.1", "libnvrtc.so.11.0"},
		wheelDirs: []string{"nvidia/cu13/lib", "nvidia/cuda_nvrtc/lib"},
	}
)

// sitePackagesGlobs are where Python packages usually live: Debian's and
// Ubuntu's pip (dist-packages), upstream Python, user installs, virtual
// environments and conda.
var sitePackagesGlobs = []string{
	"$VIRTUAL_ENV/lib/python3*/site-packages",
	"$CONDA_PREFIX/lib/python3*/site-packages",
	"$HOME/.local/lib/python3*/site-packages",
	"/usr/local/lib/python3*/dist-packages",
	"/usr/local/lib/python3*/site-packages",
	"/usr/lib/python3/dist-packages",
	"/usr/lib/python3*/site-packages",
	"/opt/conda/lib/python3*/site-packages",
}

// toolkitDirs are where CUDA toolkits and distributions put the libraries
// when the loader's cache does not list them.
var toolkitDirs = []string{
	"$CUDA_PATH/lib64",
	"$CUDA_HOME/lib64",
	"/usr/local/cuda/lib64",
	"/usr/local/cuda/targets/x86_64-linux/lib",
	"/usr/lib/x86_64-linux-gnu",
	"/usr/lib64",
}

// searchDirs returns the folders to look in after the loader's own search
// (which covers LD_LIBRARY_PATH and /etc/ld.so.cache): the toolkit folders,
// then the library's folders under every site-packages that exists. getenv
// and glob are os.Getenv and filepath.Glob outside tests. A folder whose
// variable is unset is left out, and none appears twice.
func (l library) searchDirs(getenv func(string) string, glob func(string) ([]string, error)) []string {
	var dirs []string
	seen := map[string]bool{}
	add := func(d string) {
		if d != "" && !seen[d] {
			seen[d] = true
			dirs = append(dirs, d)
		}
	}
	expand := func(pattern string) (string, bool) {
		unset := false
		s := os.Expand(pattern, func(v string) string {
			val := getenv(v)
			if val == "" {
				unset = true
			}
			return val
		})
		return s, !unset
	}
	for _, d := range toolkitDirs {
		if s, ok := expand(d); ok {
			add(filepath.Clean(s))
		}
	}
	for _, g := range sitePackagesGlobs {
		s, ok := expand(g)
		if !ok {
			continue
		}
		matches, _ := glob(s)
		for _, site := range matches {
			for _, w := range l.wheelDirs {
				add(filepath.Join(site, w))
			}
		}
	}
	return dirs
}

// candidates returns what to pass to dlopen, in order: for each soname,
// newest first, the bare name (the loader's search) and then the file in
// each of dirs that exists (exists is a stat outside tests).
func (l library) candidates(dirs []string, exists func(string) bool) []string {
	var out []string
	for _, so := range l.sonames {
		out = append(out, so)
		for _, d := range dirs {
			if p := filepath.Join(d, so); exists(p) {
				out = append(out, p)
			}
		}
	}
	return out
}

// notFoundError is the message when no candidate opened: what was looked
// for, where, and why the files that exist did not open.
func (l library) notFoundError(dirs []string, failures []string) string {
	var b strings.Builder
	b.WriteString("cuda: " + l.name + " not found: looked for " + strings.Join(l.sonames, ", "))
	b.WriteString(" on the loader's path (LD_LIBRARY_PATH=" + quoteEmpty(os.Getenv("LD_LIBRARY_PATH")) + ", /etc/ld.so.cache)")
	if len(dirs) > 0 {
		b.WriteString(" and in " + strings.Join(dirs, ", "))
	}
	for _, f := range failures {
		b.WriteString("; " + f)
	}
	b.WriteString(". Install " + l.name + " from CUDA 11, 12 or 13 (a toolkit, your distribution's package or PyTorch's nvidia-* wheels) or add its folder to LD_LIBRARY_PATH")
	return b.String()
}

func quoteEmpty(s string) string {
	if s == "" {
		return `""`
	}
	return s
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}
