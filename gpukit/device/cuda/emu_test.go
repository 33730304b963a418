//go:build nvrtc

package cuda

// An emulation of the kernels on the CPU, so that their logic is tested
// where there is no GPU: the program's CUDA C source (the very text NVRTC
// compiles) is compiled by the host C++ compiler with a shim that makes
// each block BLOCK std::threads meeting at a std::barrier for
// __syncthreads (in a program without __syncthreads, the block's threads
// one after another), blocks one after another (so __shared__ variables
// can be function statics), and device addresses host pointers. A plan's
// arguments go to the program with the addresses of their buffers
// relocated; the buffers come back. The host compiler also checks every
// Args field's offset against its Go twin (GO_FIELD), which NVRTC cannot.
//
// What it cannot show: the device's own math library (expf, log, ... are
// the host's here), warp scheduling, memory coalescing and speed.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"
)

const emuShim = `
#include <cmath>
#include <cstring>
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <barrier>
#include <thread>
#include <vector>
#include <string>
struct gpukit_dim3 { unsigned x, y, z; };
thread_local gpukit_dim3 threadIdx, blockIdx;
gpukit_dim3 blockDim, gridDim;
std::barrier<> *gpukit_barrier;
#define __global__
#define __device__
#define __forceinline__ inline
#define __shared__ static
inline void __syncthreads() { gpukit_barrier->arrive_and_wait(); }
inline double __longlong_as_double(unsigned long long v) { double d; std::memcpy(&d, &v, 8); return d; }
inline float __uint_as_float(unsigned v) { float f; std::memcpy(&f, &v, 4); return f; }
inline unsigned __float_as_uint(float f) { unsigned v; std::memcpy(&v, &f, 4); return v; }
using std::exp; using std::log; using std::sqrt; using std::fma; using std::fabs; using std::sin; using std::cos;
using std::tanh; using std::erf; using std::erfc; using std::pow;
`

const emuMain = `
template <typename F> static void gpukit_launch(unsigned grid, unsigned block, bool barriers, F kernel) {
    gridDim = {grid, 1, 1};
    blockDim = {block, 1, 1};
    if (!barriers) { // no __syncthreads: the threads of a block run one after another
        for (unsigned b = 0; b < grid; b++) {
            for (unsigned t = 0; t < block; t++) { blockIdx = {b, 0, 0}; threadIdx = {t, 0, 0}; kernel(); }
        }
        return;
    }
    // One thread per thread of a block, made once per launch: each runs its
    // part of every block in turn, and none starts the next block before
    // all have ended this one (its __shared__ memory is the next block's).
    // The blocks' end is a barrier of its own: a thread that skips a
    // __syncthreads still hangs the others there (the CUDA C++ Programming
    // Guide, Synchronization Functions: a __syncthreads that not every
    // thread of the block reaches is "likely to hang or produce unintended
    // side effects"; here it always hangs). A thread made per block and per
    // thread had cost about a third of this package's test CPU time on a
    // machine whose thread starts are dear.
    std::barrier<> bar(block), ended(block);
    gpukit_barrier = &bar;
    std::vector<std::thread> ts;
    for (unsigned t = 0; t < block; t++) {
        ts.emplace_back([=, &ended] {
            for (unsigned b = 0; b < grid; b++) {
                blockIdx = {b, 0, 0}; threadIdx = {t, 0, 0};
                kernel();
                ended.arrive_and_wait();
            }
        });
    }
    for (auto &t : ts) t.join();
}
static long long gpukit_get() { long long v; if (fread(&v, 8, 1, stdin) != 1) exit(2); return v; }
int main() {
    Args args;
    if (gpukit_get() != (long long)sizeof(Args)) return 3;
    if (fread(&args, sizeof(Args), 1, stdin) != 1) return 2;
    std::vector<std::vector<char>> bufs(gpukit_get());
    for (auto &b : bufs) { b.resize(gpukit_get() + 1); if (b.size() > 1 && fread(b.data(), b.size() - 1, 1, stdin) != 1) return 2; }
    long long nrel = gpukit_get();
    for (long long i = 0; i < nrel; i++) {
        long long at = gpukit_get(), buf = gpukit_get(), off = gpukit_get();
        unsigned long long p = (unsigned long long)(bufs[buf].data() + off);
        std::memcpy((char *)&args + at, &p, 8);
    }
    long long nsteps = gpukit_get();
    for (long long i = 0; i < nsteps; i++) {
        std::string name(gpukit_get(), ' ');
        if (fread(name.data(), name.size(), 1, stdin) != 1) return 2;
        unsigned grid = (unsigned)gpukit_get();
        bool found = false;
%s
        if (!found) return 4;
    }
    for (auto &b : bufs) fwrite(b.data(), 1, b.size() - 1, stdout);
    return 0;
}
`

// emuBase is the address of buffer 0 in a test's arguments; buffer k is at
// emuBase·(k+1).
const emuBase = uint64(1) << 40

func emuAddr(k int) uint64 { return emuBase * uint64(k+1) }

var emuBuilds sync.Map // program -> *emuBuild

// emuDir holds the emulation's sources and binaries for one test run.
var emuDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "gpukit-emu-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	emuDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	emuCacheClean()
	os.Exit(code)
}

type emuBuild struct {
	once sync.Once
	bin  string
	err  error
}

// emuCompiler finds g++ and checks that it has C++20's <barrier> (GCC 11
// and later).
var emuCompiler = sync.OnceValues(func() (string, error) {
	cxx, err := exec.LookPath("g++")
	if err != nil {
		return "", err
	}
	src := filepath.Join(emuDir, "probe.cc")
	if err := os.WriteFile(src, []byte("#include <barrier>\nint main() { std::barrier<> b(1); b.arrive_and_wait(); }\n"), 0o644); err != nil {
		return "", err
	}
	if out, err := exec.Command(cxx, "-std=c++20", "-pthread", "-o", filepath.Join(emuDir, "probe"), src).CombinedOutput(); err != nil {
		return "", fmt.Errorf("%s has no std::barrier: %v\n%s", cxx, err, out)
	}
	return cxx, nil
})

// emuBinary compiles program p for the host, once per test run.
func emuBinary(t *testing.T, p program) string {
	t.Helper()
	cxx, err := emuCompiler()
	if err != nil {
		t.Skipf("no C++20 compiler to emulate the kernels on the CPU: %v", err)
	}
	v, _ := emuBuilds.LoadOrStore(p, &emuBuild{})
	b := v.(*emuBuild)
	b.once.Do(func() {
		src, entries, err := p.source()
		if err != nil {
			b.err = err
			return
		}
		// A program without __syncthreads needs no std::thread per
		// thread of a block (the elementwise ones): they run in turn.
		barriers := strings.Contains(src, "__syncthreads")
		var dispatch strings.Builder
		for _, e := range entries {
			fmt.Fprintf(&dispatch, "        if (name == %q) { found = true; gpukit_launch(grid, %d, %v, [&] { %s(args); }); }\n", e, blockSize, barriers, e)
		}
		cu := filepath.Join(emuDir, p.String()+".cc")
		text := []byte(emuShim + src + fmt.Sprintf(emuMain, dispatch.String()))
		if err := os.WriteFile(cu, text, 0o644); err != nil {
			b.err = err
			return
		}
		args := []string{"-std=c++20", "-O1", "-ffp-contract=off", "-pthread", "-w"}
		cached := emuCached(cxx, args, text)
		if cached != "" {
			if fi, err := os.Stat(cached); err == nil && fi.Mode().IsRegular() {
				now := time.Now()
				os.Chtimes(cached, now, now) // recently used: kept by emuCacheClean
				b.bin = cached
				return
			}
		}
		b.bin = filepath.Join(emuDir, p.String())
		out, err := exec.Command(cxx, append(args, "-o", b.bin, cu)...).CombinedOutput()
		if err != nil {
			b.err = fmt.Errorf("g++ %s: %v\n%s", p, err, out)
			return
		}
		emuCacheStore(b.bin, cached)
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.bin
}

// The emulation binaries are cached across test runs, ccache-like: g++
// takes most of this package's test time (about a minute of CPU for the
// programs), and a binary is a function of the compiler, its flags and the
// source alone; so is NVRTC's PTX (nvrtcCompileCached). The cache is
// $GPUKIT_EMU_CACHE, or gpukit/emu in the user's cache folder;
// GPUKIT_EMU_CACHE=off compiles every time. Entries unused for emuCacheAge
// are removed at the end of a run.
const emuCacheAge = 14 * 24 * time.Hour

// emuCacheDir is the cache folder, made once per run; "" without a cache.
var emuCacheDir = sync.OnceValue(func() string {
	dir := os.Getenv("GPUKIT_EMU_CACHE")
	if dir == "off" {
		return ""
	}
	if dir == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			return ""
		}
		dir = filepath.Join(base, "gpukit", "emu")
	}
	if os.MkdirAll(dir, 0o755) != nil {
		return ""
	}
	return dir
})

// emuCompilerVersion is what g++ --version prints: part of every cache key.
var emuCompilerVersion = sync.OnceValue(func() string {
	cxx, err := emuCompiler()
	if err != nil {
		return ""
	}
	out, err := exec.Command(cxx, "--version").Output()
	if err != nil {
		return ""
	}
	return string(out)
})

// emuCached is the cache path of the binary g++ makes from the source text
// src with args, or "" without a cache.
func emuCached(cxx string, args []string, src []byte) string {
	dir, version := emuCacheDir(), emuCompilerVersion()
	if dir == "" || version == "" {
		return ""
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%q\x00", cxx, version, args)
	h.Write(src)
	return filepath.Join(dir, hex.EncodeToString(h.Sum(nil))+".bin")
}

// emuCacheStore copies the binary bin to the cache path dst.
func emuCacheStore(bin, dst string) {
	if dst == "" {
		return
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		return
	}
	cacheStore(dst, data, 0o755)
}

// cacheStore writes data to the cache path dst: to a temporary in the
// cache folder, then renamed over dst unless dst is something other than a
// regular file.
func cacheStore(dst string, data []byte, mode os.FileMode) {
	if fi, err := os.Lstat(dst); err == nil && !fi.Mode().IsRegular() {
		return
	}
	tmp, err := os.CreateTemp(filepath.Dir(dst), ".tmp-*")
	if err != nil {
		return
	}
	_, werr := tmp.Write(data)
	cerr := tmp.Close()
	if werr != nil || cerr != nil || os.Chmod(tmp.Name(), mode) != nil || os.Rename(tmp.Name(), dst) != nil {
		os.Remove(tmp.Name())
	}
}

// cacheHit reads the cache entry path, a regular file, and marks it
// recently used (kept by emuCacheClean); ok is false when there is none.
func cacheHit(path string) (data []byte, ok bool) {
	if path == "" {
		return nil, false
	}
	if fi, err := os.Lstat(path); err != nil || !fi.Mode().IsRegular() {
		return nil, false
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, false
	}
	now := time.Now()
	os.Chtimes(path, now, now)
	return data, true
}

// emuCacheClean removes the cache's entries unused for emuCacheAge and the
// temporaries of runs that died (older than an hour).
func emuCacheClean() {
	dir := emuCacheDir()
	if dir == "" {
		return
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		fi, err := e.Info()
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		age := time.Since(fi.ModTime())
		entry := strings.HasSuffix(e.Name(), ".bin") || strings.HasSuffix(e.Name(), ".ptx")
		if (strings.HasPrefix(e.Name(), ".tmp-") && age > time.Hour) || (entry && age > emuCacheAge) {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}

// relocations lists the byte offset, buffer and offset in the buffer of
// every non-zero address (uint64 field) of the argument struct v.
func relocations(t *testing.T, v reflect.Value, base uintptr, nbufs int, out *[][3]int64) {
	t.Helper()
	for i := range v.NumField() {
		f, sf := v.Field(i), v.Type().Field(i)
		switch f.Kind() {
		case reflect.Struct:
			relocations(t, f, base+sf.Offset, nbufs, out)
		case reflect.Uint64:
			a := f.Uint()
			if a == 0 {
				continue
			}
			k := int(a/emuBase) - 1
			if k < 0 || k >= nbufs {
				t.Fatalf("field %s = 0x%x is not the address of a test buffer", sf.Name, a)
			}
			*out = append(*out, [3]int64{int64(base + sf.Offset), int64(k), int64(a - emuAddr(k))})
		}
	}
}

// emulate runs plan p on the CPU over the buffers bufs (buffer k at
// emuAddr(k)) and returns them. It checks first that every span of the
// plan lies inside one buffer, as run checks the live allocations.
func emulate[A kernelArgs](t *testing.T, p plan[A], bufs ...[]byte) [][]byte {
	t.Helper()
	for _, sp := range p.spans {
		if sp.bytes == 0 {
			continue
		}
		k := int(sp.addr/emuBase) - 1
		if k < 0 || k >= len(bufs) || int64(sp.addr-emuAddr(k))+sp.bytes > int64(len(bufs[k])) {
			t.Fatalf("span %s of %d bytes at 0x%x is outside the test buffers", sp.what, sp.bytes, sp.addr)
		}
	}
	if len(p.steps) == 0 {
		return bufs
	}
	bin := emuBinary(t, p.prog)
	var in bytes.Buffer
	put := func(v int64) { _ = binary.Write(&in, binary.LittleEndian, v) }
	size := unsafe.Sizeof(p.args)
	put(int64(size))
	in.Write(unsafe.Slice((*byte)(unsafe.Pointer(&p.args)), size))
	put(int64(len(bufs)))
	for _, b := range bufs {
		put(int64(len(b)))
		in.Write(b)
	}
	var rel [][3]int64
	relocations(t, reflect.ValueOf(p.args), 0, len(bufs), &rel)
	put(int64(len(rel)))
	for _, r := range rel {
		put(r[0])
		put(r[1])
		put(r[2])
	}
	put(int64(len(p.steps)))
	for _, st := range p.steps {
		put(int64(len(st.entry)))
		in.WriteString(st.entry)
		put(int64(st.grid))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a barrier a thread skips hangs
	defer cancel()
	cmd := exec.CommandContext(ctx, bin)
	cmd.Stdin = &in
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("emulating %s: %v\n%s", p.prog, err, stderr.String())
	}
	res := make([][]byte, len(bufs))
	for k, b := range bufs {
		if len(out) < len(b) {
			t.Fatalf("emulating %s: short output", p.prog)
		}
		res[k], out = out[:len(b)], out[len(b):]
	}
	return res
}

// asBytes and fromBytes view numbers as the bytes of a buffer.
func asBytes[T any](v []T) []byte {
	if len(v) == 0 {
		return []byte{}
	}
	return bytes.Clone(unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), len(v)*int(unsafe.Sizeof(v[0]))))
}

func fromBytes[T any](b []byte) []T {
	var z T
	n := len(b) / int(unsafe.Sizeof(z))
	out := make([]T, n)
	if n > 0 {
		copy(unsafe.Slice((*byte)(unsafe.Pointer(&out[0])), len(b)), b)
	}
	return out
}
