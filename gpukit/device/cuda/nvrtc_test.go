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
	"slices"
	"strings"
	"testing"

	"github.com/gpumem/course/gpukit/device/backend"
	"github.com/gpumem/course/gpukit/kernels"
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
			ptx, log, err := nvrtcCompile(p.String()+".cu", src, compileOptions(oldestArch))
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

func TestAllProgramsCoverTheOps(t *testing.T) {
	n := 0
	for _, p := range allPrograms() {
		if p.fam == famUnary && p.in == p.out && p.out == backend.Float32 {
			n++
		}
	}
	if n != 14 { // kernels.Identity ... kernels.Gelu
		t.Errorf("%d unary ops have kernels, want 14", n)
	}
	if len(binaryExpr) != 10 || len(reduceMacro) != 4 {
		t.Errorf("binary ops %d (want 10), reductions %d (want 4)", len(binaryExpr), len(reduceMacro))
	}
	if _, _, err := (program{fam: famBinary, op: uint8(kernels.Add), out: backend.Float32, in: backend.Float64}).source(); err == nil {
		t.Error("a converting binary kernel was accepted")
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
