//go:build nvrtc

package cuda

// These tests need the NVRTC library and headers but no GPU (NVRTC is a
// compiler; only loading the result needs a device), so CI runs them:
//
//	go test -tags nvrtc ./gpukit/device/cuda/
//
// They compile every kernel specialisation the backend can ask for, which
// also checks with static_assert that the C argument structs have the size
// of their Go twins.

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/gpumem/course/gpukit/device/backend"
	"github.com/gpumem/course/gpukit/dtypes"
	"github.com/gpumem/course/gpukit/ops"
)

// oldestArch is the oldest compute capability the tests compile for:
// Turing, the oldest that CUDA 13 still targets (it dropped Maxwell, Pascal
// and Volta), so that the tests pass with NVRTC 11 to 13.
const oldestArch = 75

func TestKernelsCompileWithNVRTC(t *testing.T) {
	for _, p := range allPrograms() {
		t.Run(p.String(), func(t *testing.T) {
			t.Parallel()
			src, entries, err := p.source()
			if err != nil {
				t.Fatal(err)
			}
			ptx, log, err := nvrtcCompileCached(p.String()+".cu", src, compileOptions(oldestArch))
			if err != nil || strings.Contains(log, "warning") {
				t.Fatalf("NVRTC: %v\n%s", err, log)
			}
			for _, e := range entries {
				if !strings.Contains(ptx, ".entry "+e+"(") {
					t.Errorf("PTX has no entry %s", e)
				}
			}
		})
	}
}

// nvrtcCompileCached is nvrtcCompile through the emulation binaries'
// cache (emu_test.go): PTX is a function of NVRTC (its version and library
// file), the options and the source, which holds the Go twins' field
// offsets and sizes, so a program NVRTC compiled before without an error
// or a warning is not compiled again. TestKernelsCompileWithNVRTC's
// programs took 24 s of CPU at every run; a change of any input is a
// miss. GPUKIT_EMU_CACHE=off compiles every time.
func nvrtcCompileCached(name, src string, options []string) (ptx, log string, err error) {
	key := nvrtcCacheKey(name, src, options)
	if data, ok := cacheHit(key); ok {
		return string(data), "", nil
	}
	ptx, log, err = nvrtcCompile(name, src, options)
	if err == nil && key != "" && !strings.Contains(log, "warning") {
		cacheStore(key, []byte(ptx), 0o644)
	}
	return ptx, log, err
}

// nvrtcCacheKey is the cache path of the PTX of src, or "" without a
// cache.
func nvrtcCacheKey(name, src string, options []string) string {
	dir, nvrtc := emuCacheDir(), nvrtcIdentity()
	if dir == "" || nvrtc == "" {
		return ""
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%q\x00%s\x00", nvrtc, options, name)
	io.WriteString(h, src)
	return filepath.Join(dir, hex.EncodeToString(h.Sum(nil))+".ptx")
}

// nvrtcIdentity is the loaded NVRTC, once per run: its version and its
// library file (libnvrtc.so.*, which its builtins ship with) by path, size
// and time; "" when it cannot be said.
var nvrtcIdentity = sync.OnceValue(func() string {
	major, minor, _, err := nvrtcVersion() // loads the library
	libs := mappedFiles("libnvrtc.so")
	if err != nil || len(libs) == 0 {
		return ""
	}
	id := fmt.Sprintf("nvrtc %d.%d", major, minor)
	for _, lib := range libs {
		fi, err := os.Stat(lib)
		if err != nil {
			return ""
		}
		id += fmt.Sprintf("\x00%s\x00%d\x00%d", lib, fi.Size(), fi.ModTime().UnixNano())
	}
	return id
})

// TestNVRTCCacheKeysEveryInput: a change of the source, the name or an
// option is another cache entry, and the cached PTX is NVRTC's.
func TestNVRTCCacheKeysEveryInput(t *testing.T) {
	p := program{fam: famSoftmax, out: dtypes.Float32, in: dtypes.Float32}
	src, _, err := p.source()
	if err != nil {
		t.Fatal(err)
	}
	opts := compileOptions(oldestArch)
	key := nvrtcCacheKey("a.cu", src, opts)
	if key == "" {
		t.Skip("no cache here (GPUKIT_EMU_CACHE=off, or no /proc/self/maps)")
	}
	others := []string{
		nvrtcCacheKey("b.cu", src, opts),
		nvrtcCacheKey("a.cu", src+"\n", opts),
		nvrtcCacheKey("a.cu", src, append(slices.Clone(opts), "-lineinfo")),
	}
	for i, k := range others {
		if k == key {
			t.Errorf("change %d has the same key", i)
		}
	}
	want, _, err := nvrtcCompile("a.cu", src, opts)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 { // the second a hit
		got, _, err := nvrtcCompileCached("a.cu", src, opts)
		if err != nil || got != want {
			t.Fatalf("cached PTX differs from NVRTC's (err %v)", err)
		}
	}
	if _, err := os.Stat(key); err != nil {
		t.Errorf("no cache entry: %v", err)
	}
}

// mappedFiles lists, sorted, the files this process has mapped whose names
// begin with prefix (the libraries dlopen loaded), from /proc/self/maps;
// none without /proc (no cache then).
func mappedFiles(prefix string) []string {
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return nil
	}
	var files []string
	for line := range strings.Lines(string(maps)) {
		fields := strings.Fields(line)
		if len(fields) == 6 && strings.HasPrefix(filepath.Base(fields[5]), prefix) && !slices.Contains(files, fields[5]) {
			files = append(files, fields[5])
		}
	}
	slices.Sort(files)
	return files
}

// opCount is the number of ops of a kernels op type: the first value
// whose String is the fallback "UnaryOp(n)" (or "BinaryOp(n)").
func opCount[Op ~uint8](fallback string) int {
	for op := range Op(255) {
		if strings.HasPrefix(fmt.Sprint(op), fallback+"(") {
			return int(op)
		}
	}
	return 255
}

// TestAllProgramsCoverTheOps checks that every op kernels defines, up to
// their counts, has an entry point in the programs of every dtype that
// computes, so that an op added to kernels cannot go without a kernel.
func TestAllProgramsCoverTheOps(t *testing.T) {
	nu, nb := opCount[ops.Unary]("UnaryOp"), opCount[ops.Binary]("BinaryOp")
	if nu < 20 || nb < 13 || len(unaryExpr) != nu || len(binaryExpr) != nb {
		t.Fatalf("%d unary ops (%d expressions), %d binary ops (%d expressions)", nu, len(unaryExpr), nb, len(binaryExpr))
	}
	entries := map[program][]string{}
	for _, p := range allPrograms() {
		if _, dup := entries[p]; dup {
			t.Errorf("%v is listed twice", p)
		}
		_, es, err := p.source()
		if err != nil {
			t.Fatalf("%v: %v", p, err)
		}
		entries[p] = es
	}
	for _, dt := range allDtypes {
		has := func(p program, e string) {
			t.Helper()
			if !slices.Contains(entries[p], e) {
				t.Errorf("%v has no entry %s (entries %v)", p, e, entries[p])
			}
		}
		conv := program{fam: famConvert, out: dt, in: dt}
		has(conv, "fill")
		for _, from := range allDtypes {
			has(conv, copyEntry(from))
		}
		has(program{fam: famWhere, out: dt, in: dt}, "where")
		has(program{fam: famInRange, out: dtypes.Bool, in: dt}, "in_range")
		if dt == dtypes.Bool {
			continue
		}
		for op := range ops.Unary(nu) {
			has(program{fam: famUnary, out: dt, in: dt}, unaryEntry(op))
		}
		for op := range ops.Binary(nb) {
			has(program{fam: famBinary, out: dt, in: dt}, binaryEntry(op))
			if op.Comparison() {
				has(program{fam: famBinary, out: dtypes.Bool, in: dt}, binaryEntry(op))
			} else if slices.Contains(entries[program{fam: famBinary, out: dtypes.Bool, in: dt}], binaryEntry(op)) {
				t.Errorf("%v writes bool", op)
			}
		}
	}
	// Every row family is compiled (so the NVRTC test cannot skip one),
	// and the sparse products for both float and both index dtypes.
	for f, rf := range rowFamilies {
		if !slices.ContainsFunc(allPrograms(), func(p program) bool { return p.fam == f }) {
			t.Errorf("no program of family %s", rf.name)
		}
	}
	for _, dt := range []dtypes.Dtype{dtypes.Float32, dtypes.Float64} {
		for _, idx := range []dtypes.Dtype{dtypes.Int64, dtypes.Int32} {
			for _, e := range csrEntry {
				has := entries[program{fam: famCSR, out: dt, in: idx}]
				if !slices.Contains(has, e) {
					t.Errorf("csr %v/%v has no entry %s (entries %v)", dt, idx, e, has)
				}
			}
		}
	}
	for _, bad := range []program{
		{fam: famBinary, out: dtypes.Float32, in: dtypes.Float64},
		{fam: famCSR, out: dtypes.Float32, in: dtypes.Float32},
		{fam: famBinary, out: dtypes.Bool, in: dtypes.Bool},
		{fam: famUnary, out: dtypes.Float32, in: dtypes.Float16},
		{fam: famUnary, out: dtypes.Bool, in: dtypes.Bool},
		{fam: famReduce, out: dtypes.Int64, in: dtypes.Int64},
		{fam: famConvert, out: dtypes.Dtype(99), in: dtypes.Dtype(99)},
	} {
		if _, _, err := bad.source(); err == nil {
			t.Errorf("%+v was accepted", bad)
		}
	}
}

func TestMergeDims(t *testing.T) {
	for _, c := range []struct {
		shape   []int
		strides [][]int
		want    []int
		wantSt  [][]int
	}{
		{[]int{2, 3, 4}, [][]int{{12, 4, 1}, {12, 4, 1}}, []int{24}, [][]int{{1}, {1}}},
		{[]int{2, 3, 4}, [][]int{{12, 4, 1}, {0, 0, 1}}, []int{6, 4}, [][]int{{4, 1}, {0, 1}}}, // row broadcast
		{[]int{3, 4}, [][]int{{4, 1}, {1, 3}}, []int{3, 4}, [][]int{{4, 1}, {1, 3}}},           // transpose
		{[]int{1, 5, 1}, [][]int{{5, 1, 1}, {0, 2, 0}}, []int{5}, [][]int{{1}, {2}}},
		{[]int{}, [][]int{{}, {}}, []int{}, [][]int{{}, {}}},
		{[]int{1, 1}, [][]int{{1, 1}}, []int{}, [][]int{{}}},
		{[]int{2, 0, 3}, [][]int{{0, 3, 1}}, []int{0}, [][]int{{1}}}, // empty: any layout will do
	} {
		got, gotSt := mergeDims(c.shape, c.strides...)
		if !slices.Equal(got, c.want) || !slices.EqualFunc(gotSt, c.wantSt, slices.Equal) {
			t.Errorf("mergeDims(%v, %v) = %v %v, want %v %v", c.shape, c.strides, got, gotSt, c.want, c.wantSt)
		}
	}
}

func TestNewElementwiseArgs(t *testing.T) {
	shape := make([]int, 10)
	st := make([]int, 10)
	for i := range shape {
		shape[i], st[i] = 2, 1<<(2*(9-i)) // every dimension has a gap: nothing merges
	}
	if _, err := newElementwiseArgs(shape, backend.Strided{Strides: st}); err == nil {
		t.Error("10 unmergeable dimensions were accepted")
	}
	a, err := newElementwiseArgs([]int{4, 5}, backend.Strided{Addr: 100, Strides: []int{5, 1}}, backend.Strided{Addr: 200, Strides: []int{1, 0}})
	if err != nil {
		t.Fatal(err)
	}
	if a.out != 100 || a.a != 200 || a.n != 20 || a.l.ndim != 2 || a.l.shape[0] != 4 || a.l.strides[1][0] != 1 || a.l.strides[1][1] != 0 {
		t.Errorf("args %+v", a)
	}
	if _, err := newElementwiseArgs([]int{4}, backend.Strided{Strides: []int{-1}}); err == nil {
		t.Error("a negative stride was accepted")
	}
	five := make([]backend.Strided, 5)
	for i := range five {
		five[i].Strides = []int{1}
	}
	if _, err := newElementwiseArgs([]int{4}, five...); err == nil {
		t.Error("five operands were accepted")
	}
}

func TestNVRTCIsLoadedAtRunTime(t *testing.T) {
	major, minor, path, err := nvrtcVersion()
	if err != nil {
		t.Fatal(err)
	}
	if major < 11 || !strings.Contains(path, "libnvrtc.so.") {
		t.Errorf("NVRTC %d.%d from %q", major, minor, path)
	}
	t.Logf("NVRTC %d.%d from %s", major, minor, path)
}

func TestNVRTCCompileErrorKeepsTheLog(t *testing.T) {
	_, log, err := nvrtcCompile("broken.cu", "extern \"C\" __global__ void k() { undeclared(); }", compileOptions(oldestArch))
	if err == nil || !strings.Contains(err.Error(), "nvrtcCompileProgram") || !strings.Contains(log, "undeclared") {
		t.Errorf("err %v, log %q", err, log)
	}
}
