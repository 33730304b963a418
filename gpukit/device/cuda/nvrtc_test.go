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
	"fmt"
	"slices"
	"strings"
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
