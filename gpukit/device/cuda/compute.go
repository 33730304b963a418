//go:build cuda

package cuda

/*
#cgo LDFLAGS: -lcuda
#cgo linux LDFLAGS: -L/usr/local/cuda/lib64 -L/usr/lib/x86_64-linux-gnu
#cgo linux CFLAGS: -I/usr/local/cuda/include -I/usr/include
#include <stdint.h>
#include <stdlib.h>
#include <cuda.h>

static const char *gpukitCUName(CUresult r) {
	const char *s = 0;
	if (cuGetErrorName(r, &s) != CUDA_SUCCESS || s == 0) return "unknown CUresult";
	return s;
}

static CUresult gpukitLoad(const char *ptx, CUmodule *m) {
	return cuModuleLoadData(m, ptx);
}

static CUresult gpukitFunction(CUmodule m, const char *name, CUfunction *f) {
	return cuModuleGetFunction(f, m, name);
}

// gpukitLaunch launches f with one by-value struct argument; the driver
// copies *arg before returning.
static CUresult gpukitLaunch(CUfunction f, unsigned grid, unsigned block, CUstream s, void *arg) {
	void *params[1] = { arg };
	return cuLaunchKernel(f, grid, 1, 1, block, 1, 1, 0, s, params, 0);
}

*/
import "C"

import (
	"fmt"
	"math"
	"strings"
	"sync"
	"unsafe"

	"gorgonia.org/cu"

	"github.com/gpumem/course/gpukit/alloc"
	"github.com/gpumem/course/gpukit/device/backend"
	"github.com/gpumem/course/gpukit/dtypes"
	"github.com/gpumem/course/gpukit/ops"
)

var _ backend.Compute = (*Backend)(nil)

// computeState is the compute part of a Backend: compiled kernels and the
// cuBLAS handle.
type computeState struct {
	// mu guards arch and modules. It is taken before b.mu, never while
	// holding it, so a compilation does not block copies and allocations.
	mu      sync.Mutex
	arch    int // compute capability, such as 86; 0 until first needed
	modules map[program]*module

	// blas is created on first use (cublas.go); guarded by b.mu (it is
	// bound to the device's context and used inside b.do).
	blas *blasHandle
}

// module is one loaded NVRTC program and its entry points.
type module struct {
	fns map[string]C.CUfunction
}

func cuError(what string, r C.CUresult) error {
	if r == C.CUDA_SUCCESS {
		return nil
	}
	return fmt.Errorf("%s: %s (CUresult %d)", what, C.GoString(C.gpukitCUName(r)), int(r))
}

// cStream is the driver handle of s (nil for the NULL stream).
func cStream(s cu.Stream) C.CUstream {
	return C.CUstream(unsafe.Pointer(s.C()))
}

// function returns the entry point of program p, compiling it with NVRTC
// and loading it into the device's context the first time.
func (b *Backend) function(p program, entry string) (C.CUfunction, error) {
	c := &b.comp
	c.mu.Lock()
	defer c.mu.Unlock()
	if m, ok := c.modules[p]; ok {
		return m.fns[entry], nil
	}
	if c.arch == 0 {
		major, minor, err := b.dev.ComputeCapability()
		if err != nil {
			return nil, fmt.Errorf("cuda: %s: compute capability: %w", b.Name(), err)
		}
		c.arch = 10*major + minor
	}
	src, entries, err := p.source()
	if err != nil {
		return nil, err
	}
	ptx, err := compile(p, src, c.arch)
	if err != nil {
		return nil, fmt.Errorf("cuda: %s: %w", b.Name(), err)
	}
	m := &module{fns: map[string]C.CUfunction{}}
	err = b.call(func() error {
		cptx := C.CString(ptx)
		defer C.free(unsafe.Pointer(cptx))
		var mod C.CUmodule
		if err := cuError("cuModuleLoadData "+p.String(), C.gpukitLoad(cptx, &mod)); err != nil {
			return err
		}
		for _, e := range entries {
			name := C.CString(e)
			var f C.CUfunction
			r := C.gpukitFunction(mod, name, &f)
			C.free(unsafe.Pointer(name))
			if err := cuError("cuModuleGetFunction "+e, r); err != nil {
				return err
			}
			m.fns[e] = f
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("cuda: %s: %w", b.Name(), err)
	}
	if c.modules == nil {
		c.modules = map[program]*module{}
	}
	c.modules[p] = m
	return m.fns[entry], nil
}

// compile runs NVRTC on src for compute capability arch. An NVRTC older
// than the device does not know its architecture: PTX for the newest one
// it knows (compute_90 for CUDA 11.8) runs on newer devices through the
// driver's JIT, so compile retries with that.
func compile(p program, src string, arch int) (string, error) {
	ptx, log, err := compileFor(p, src, arch)
	if err != nil && arch > 90 && strings.Contains(log+err.Error(), "architecture") {
		ptx, log, err = compileFor(p, src, 90)
	}
	if err != nil {
		return "", fmt.Errorf("NVRTC compiling %s for compute_%d: %v\n%s", p, arch, err, log)
	}
	return ptx, nil
}

func compileFor(p program, src string, arch int) (ptx, log string, err error) {
	return nvrtcCompile(p.String()+".cu", src, compileOptions(arch))
}

// launch queues fn on stream s with the by-value argument *arg (a struct
// without Go pointers that mirrors the kernel's C struct).
func launch[A kernelArgs](b *Backend, s alloc.Stream, name string, fn C.CUfunction, grid int, arg *A) error {
	cs, err := b.stream(s)
	if err != nil {
		return err
	}
	err = b.do(func() error {
		return cuError("cuLaunchKernel "+name, C.gpukitLaunch(fn, C.uint(grid), C.uint(blockSize), cStream(cs), unsafe.Pointer(arg)))
	})
	if err != nil {
		return fmt.Errorf("cuda: %s: %w", b.Name(), err)
	}
	return nil
}

// run queues plan p: it compiles (or finds) the program's entry points,
// checks every span against the live allocations and launches the steps in
// order on stream s.
func run[A kernelArgs](b *Backend, s alloc.Stream, p plan[A]) error {
	if len(p.steps) == 0 {
		return nil
	}
	fns := make([]C.CUfunction, len(p.steps))
	for i, st := range p.steps {
		fn, err := b.function(p.prog, st.entry)
		if err != nil {
			return err
		}
		fns[i] = fn
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, sp := range p.spans {
		if sp.bytes > 0 && !b.ownsLocked(sp.addr, sp.bytes) {
			return b.rangeError(p.prog.String()+" "+sp.what, sp.addr, sp.bytes)
		}
	}
	for i, st := range p.steps {
		if err := launch(b, s, p.prog.String()+" "+st.entry, fns[i], st.grid, &p.args); err != nil {
			return err
		}
	}
	return nil
}

// Capabilities is the table of capabilities.go: what the dtype checks
// of the plans and of Reduce, ArgReduce and Gemm let through.
func (b *Backend) Capabilities() backend.Capabilities { return capabilities() }

// unsupported is the error of a Compute method that has no kernel for dt.
func (b *Backend) unsupported(op string, dt dtypes.Dtype) error {
	return &backend.UnsupportedError{Backend: b.Name(), Op: op, Dtype: dt}
}

// Fill sets every element of dst to v (any dtype).
func (b *Backend) Fill(s alloc.Stream, shape []int, dst backend.Strided, v float64) error {
	p, err := planFill(b.Name(), shape, dst, v)
	if err != nil {
		return err
	}
	return run(b, s, p)
}

// Copy copies src into dst, converting between any two dtypes.
func (b *Backend) Copy(s alloc.Stream, shape []int, dst, src backend.Strided) error {
	p, err := planCopy(b.Name(), shape, dst, src)
	if err != nil {
		return err
	}
	return run(b, s, p)
}

// Unary computes dst = op(src).
func (b *Backend) Unary(s alloc.Stream, op ops.Unary, shape []int, dst, src backend.Strided) error {
	p, err := planUnary(b.Name(), op, shape, dst, src)
	if err != nil {
		return err
	}
	return run(b, s, p)
}

// Binary computes dst = op(a, bb).
func (b *Backend) Binary(s alloc.Stream, op ops.Binary, shape []int, dst, a, bb backend.Strided) error {
	p, err := planBinary(b.Name(), op, shape, dst, a, &bb, 0, false)
	if err != nil {
		return err
	}
	return run(b, s, p)
}

// BinaryScalar computes dst = op(a, scalar), or op(scalar, a) when
// scalarFirst.
func (b *Backend) BinaryScalar(s alloc.Stream, op ops.Binary, shape []int, dst, a backend.Strided, scalar float64, scalarFirst bool) error {
	p, err := planBinary(b.Name(), op, shape, dst, a, nil, scalar, scalarFirst)
	if err != nil {
		return err
	}
	return run(b, s, p)
}

// Where writes dst = a where cond else b.
func (b *Backend) Where(s alloc.Stream, shape []int, dst, cond, a, bb backend.Strided) error {
	p, err := planWhere(b.Name(), shape, dst, cond, a, bb)
	if err != nil {
		return err
	}
	return run(b, s, p)
}

// InRange writes the Bool dst = lo ≤ src ≤ hi.
func (b *Backend) InRange(s alloc.Stream, shape []int, dst, src backend.Strided, lo, hi float64) error {
	p, err := planInRange(b.Name(), shape, dst, src, lo, hi)
	if err != nil {
		return err
	}
	return run(b, s, p)
}

// reduce launches a reduction program over [outer, n, inner].
func (b *Backend) reduce(s alloc.Stream, p program, args reduceArgs, dt dtypes.Dtype) error {
	if args.outer < 0 || args.n < 0 || args.innerSize < 0 {
		return fmt.Errorf("cuda: %s: %s: negative size [%d, %d, %d]", b.Name(), p, args.outer, args.n, args.innerSize)
	}
	lines := args.outer * args.innerSize
	if lines == 0 {
		return nil
	}
	entry, grid := "reduce_cols", gridFor(lines)
	if args.innerSize == 1 {
		entry, grid = "reduce_rows", int(min(args.outer, maxBlocks))
	}
	fn, err := b.function(p, entry)
	if err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	size := int64(dt.Size())
	if n := lines * args.n * size; n > 0 && !b.ownsLocked(args.src, n) {
		return b.rangeError(p.String()+" source", args.src, n)
	}
	if !b.ownsLocked(args.dst, lines*size) {
		return b.rangeError(p.String()+" destination", args.dst, lines*size)
	}
	if p.fam == famArgReduce && !b.ownsLocked(args.index, lines*8) {
		return b.rangeError(p.String()+" index", args.index, lines*8)
	}
	return launch(b, s, p.String(), fn, grid, &args)
}

// Reduce reduces src[outer, n, inner] over n into dst[outer, inner].
func (b *Backend) Reduce(s alloc.Stream, op ops.Reduce, dt dtypes.Dtype, dst, src uint64, outer, n, inner int) error {
	if !reducible(dt) {
		return b.unsupported("Reduce", dt)
	}
	p := program{fam: famReduce, op: uint8(op), out: dt, in: dt}
	return b.reduce(s, p, reduceArgs{dst: dst, src: src, outer: int64(outer), n: int64(n), innerSize: int64(inner)}, dt)
}

// ArgReduce writes the positions (int64) and values of the maxima
// (largest) or minima of src[outer, n, inner] over n.
func (b *Backend) ArgReduce(s alloc.Stream, largest bool, dt dtypes.Dtype, index, value, src uint64, outer, n, inner int) error {
	if !reducible(dt) {
		return b.unsupported("ArgReduce", dt)
	}
	p := program{fam: famArgReduce, out: dt, in: dt}
	if largest {
		p.op = 1
	}
	return b.reduce(s, p, reduceArgs{dst: value, index: index, src: src, outer: int64(outer), n: int64(n), innerSize: int64(inner)}, dt)
}

// Gemm computes C = alpha·op(A)·op(B) + beta·C for row-major matrices with
// cuBLAS: float32 and float64 with cublasSgemm and cublasDgemm, float16 and
// bfloat16 with cublasGemmEx computing in float32. cuBLAS is column-major,
// and a row-major matrix is its transpose read column-major, so it computes
// Cᵀ = op(B)ᵀ·op(A)ᵀ: the same call with A and B (and m and n) swapped and
// the same transpose flags.
func (b *Backend) Gemm(s alloc.Stream, dt dtypes.Dtype, transA, transB bool, m, n, k int, alpha float64, a uint64, lda int, bm uint64, ldb int, beta float64, c uint64, ldc int) error {
	if _, ex := gemmDataType(dt); !ex {
		if err := floatDtype(b.Name(), "Gemm", dt); err != nil {
			return err
		}
	}
	if m < 0 || n < 0 || k < 0 {
		return fmt.Errorf("cuda: %s: gemm: negative size m=%d n=%d k=%d", b.Name(), m, n, k)
	}
	if m == 0 || n == 0 {
		return nil
	}
	for _, v := range []int{m, n, k, lda, ldb, ldc} {
		if v > math.MaxInt32 {
			return fmt.Errorf("cuda: %s: gemm: size or leading dimension %d does not fit cuBLAS's int", b.Name(), v)
		}
	}
	// The matrices as stored (row-major rows × cols with row stride ld).
	ar, ac := m, k
	if transA {
		ar, ac = k, m
	}
	br, bc := k, n
	if transB {
		br, bc = n, k
	}
	if lda < max(1, ac) || ldb < max(1, bc) || ldc < max(1, n) {
		return fmt.Errorf("cuda: %s: gemm: leading dimensions lda=%d ldb=%d ldc=%d are too small for A %dx%d, B %dx%d, C %dx%d",
			b.Name(), lda, ldb, ldc, ar, ac, br, bc, m, n)
	}
	size := int64(dt.Size())
	b.mu.Lock()
	defer b.mu.Unlock()
	span := func(rows, cols, ld int) int64 { return (int64(rows-1)*int64(ld) + int64(cols)) * size }
	if k > 0 {
		if !b.ownsLocked(a, span(ar, ac, lda)) {
			return b.rangeError("gemm A", a, span(ar, ac, lda))
		}
		if !b.ownsLocked(bm, span(br, bc, ldb)) {
			return b.rangeError("gemm B", bm, span(br, bc, ldb))
		}
	}
	if !b.ownsLocked(c, span(m, n, ldc)) {
		return b.rangeError("gemm C", c, span(m, n, ldc))
	}
	cs, err := b.stream(s)
	if err != nil {
		return err
	}
	err = b.do(func() error {
		if b.comp.blas == nil {
			h, err := newBLASHandle()
			if err != nil {
				return err
			}
			b.comp.blas = h
		}
		return b.comp.blas.gemm(unsafe.Pointer(cStream(cs)), dt, transB, transA,
			n, m, k, alpha, bm, ldb, a, lda, beta, c, ldc)
	})
	if err != nil {
		return fmt.Errorf("cuda: %s: %w", b.Name(), err)
	}
	return nil
}

// ReduceStrided, ArgReduceStrided and GemmBatched have no cuda kernels:
// their UnsupportedError sends gpukit/tensor to the contiguous copy and
// Reduce or ArgReduce, or to one Gemm per product. They complete the
// Compute interface of the cpucompute work (these signatures), so that the
// cuda build still satisfies it once both are merged.

// ReduceStrided returns an UnsupportedError: no strided reduction kernel.
func (b *Backend) ReduceStrided(s alloc.Stream, op ops.Reduce, shape []int, dst, src backend.Strided) error {
	return b.unsupported("ReduceStrided", src.Dtype)
}

// ArgReduceStrided returns an UnsupportedError: no strided arg-reduction
// kernel.
func (b *Backend) ArgReduceStrided(s alloc.Stream, largest bool, shape []int, dim int, index, value, src backend.Strided) error {
	return b.unsupported("ArgReduceStrided", src.Dtype)
}

// GemmBatched returns an UnsupportedError: no cublasGemmBatchedEx yet.
func (b *Backend) GemmBatched(s alloc.Stream, dt dtypes.Dtype, transA, transB bool, m, n, k int, alpha float64, a []uint64, lda int, bm []uint64, ldb int, beta float64, c []uint64, ldc int) error {
	return b.unsupported("GemmBatched", dt)
}
