package tensor

import (
	"errors"
	"runtime"
	"slices"

	"github.com/gpumem/course/gpukit/alloc"
	"github.com/gpumem/course/gpukit/device/backend"
	"github.com/gpumem/course/gpukit/dtypes"
	"github.com/gpumem/course/gpukit/ops"
)

// This file is the compute seam: every kernel of every op calls the
// Compute of the memory its tensors live on (memory.compute), one route
// for every device. On sim and host memory that is the CPU kernels of
// gpukit/kernels (gpukit/device/cpucompute: float32 and float64 on the
// fast paths, the 16-bit types in float32, the integer types in float64);
// on cuda the GPU's; on meta no-ops, so ops there compute shapes and
// allocate but write no values. The modelled cost of an op is charged by
// the op (charge), once, on every device, whatever its Compute does.
// Kernels that no Compute method expresses are in compute_hostonly.go.

// charge records the modelled cost of an op that wrote out and read the
// given inputs: flops as given, bytes = everything read plus written.
func (t *Tensor) charge(name string, flops int64, inputs ...*Tensor) {
	bytes := t.Nbytes()
	for _, in := range inputs {
		if in != nil {
			bytes += in.Nbytes()
		}
	}
	k := kernelCost{name: name, flops: flops, bytes: bytes, half: t.dtype == Float16 || t.dtype == BFloat16}
	if b := observer.Load(); b != nil {
		launchObserved(b, t, k, inputs)
		return
	}
	t.st.core.mem.launch(k)
}

// kern is the Compute and stream of the memory t lives on.
func kern(op string, t *Tensor) (backend.Compute, alloc.Stream) {
	c, s := t.st.core.mem.compute()
	if c == nil {
		panicf("%s: %s does not compute (its backend implements no device.Compute)", op, t.DeviceName())
	}
	return c, s
}

// addr is the device address of t's first element.
func addr(t *Tensor) uint64 { return t.st.addr + uint64(t.offset*t.dtype.Size()) }

// optAddr is addr, 0 for an absent (nil) tensor.
func optAddr(t *Tensor) uint64 {
	if t == nil {
		return 0
	}
	return addr(t)
}

// cdt is t's dtype as a Compute dtype (same order).
func cdt(t *Tensor) dtypes.Dtype { return dtypes.Dtype(t.dtype) }

// arg is t as a Compute operand with t's own strides.
func arg(t *Tensor) backend.Strided {
	return backend.Strided{Addr: addr(t), Dtype: cdt(t), Strides: t.strides}
}

// optArg is arg, the zero operand (absent) for nil.
func optArg(t *Tensor) backend.Strided {
	if t == nil {
		return backend.Strided{}
	}
	return arg(t)
}

// done turns the error of a Compute call on the tensors ts (ts[0] names
// the device and dtype) into the package's panic, and keeps the tensors,
// and so the memory the call used, reachable until the call is over.
func done(op string, err error, ts ...*Tensor) {
	for _, t := range ts {
		runtime.KeepAlive(t)
	}
	if err == nil {
		return
	}
	t := ts[0]
	var u *backend.UnsupportedError
	if errors.As(err, &u) {
		panicf("%s: %s has no %s kernel for %s tensors yet; move the tensors to sim with To(\"sim:0\") (or ToDtype) for this op", op, t.DeviceName(), u.Op, u.Dtype)
	}
	panicf("%s on %s: %v", op, t.DeviceName(), err)
}

// unsupported reports whether err says that the backend lacks the kernel.
func unsupported(err error) bool {
	var u *backend.UnsupportedError
	return errors.As(err, &u)
}

// valueless reports whether t lives on a meta device: its Compute writes
// nothing, so the kernels there skip the contiguous copies and scratch
// tensors that they make for real values (which would change the meta
// device's memory statistics, as they never have).
func valueless(t *Tensor) bool {
	return t.st.data == nil && !t.st.core.mem.hasBytes() && !t.deviceOnly()
}

// scratch is a contiguous temporary on t's memory for a backend that
// lacks a strided kernel (release it when the work is queued: later work
// on the one stream runs after it).
func scratch(t *Tensor, shape []int, dt Dtype) *Tensor { return empty(t.st.core.mem, shape, dt) }

// fillKernel sets every element of t to v.
func fillKernel(t *Tensor, v float64) {
	if t.Numel() == 0 {
		return
	}
	c, s := kern("Fill", t)
	done("Fill", c.Fill(s, t.shape, arg(t), v), t)
}

// copyKernel copies src into dst elementwise (same shape; src may have
// stride-0 broadcast dimensions), converting dtypes.
func copyKernel(dst, src *Tensor) {
	if dst.Numel() == 0 {
		return
	}
	c, s := kern("Copy", dst)
	done("Copy", c.Copy(s, dst.shape, arg(dst), arg(src)), dst, src)
}

// unaryKernel computes out = op(a); a has out's shape (possibly with
// stride-0 dimensions) and dtype.
func unaryKernel(op ops.Unary, out, a *Tensor) {
	if out.Numel() == 0 {
		return
	}
	c, s := kern(op.String(), out)
	done(op.String(), c.Unary(s, op, out.shape, arg(out), arg(a)), out, a)
}

// binaryKernel computes out = op(a, b); a and b already have out's shape
// (broadcast dimensions have stride 0). b == nil means the scalar s;
// scalarFirst puts the scalar on the left (s op a).
func binaryKernel(op ops.Binary, out, a, b *Tensor, sc float64, scalarFirst bool) {
	if out.Numel() == 0 {
		return
	}
	c, s := kern(op.String(), out)
	if b == nil {
		done(op.String(), c.BinaryScalar(s, op, out.shape, arg(out), arg(a), sc, scalarFirst), out, a)
		return
	}
	done(op.String(), c.Binary(s, op, out.shape, arg(out), arg(a), arg(b)), out, a, b)
}

// whereKernel writes out = cond ? a : b; cond (Bool), a and b have out's
// shape (stride 0 where broadcast), a and b out's dtype.
func whereKernel(out, cond, a, b *Tensor) {
	if out.Numel() == 0 {
		return
	}
	c, s := kern("Where", out)
	done("Where", c.Where(s, out.shape, arg(out), arg(cond), arg(a), arg(b)), out, cond, a, b)
}

// inRangeKernel writes the Bool mask = lo ≤ a ≤ hi (NaN: false); a has
// mask's shape.
func inRangeKernel(mask, a *Tensor, lo, hi float64) {
	if mask.Numel() == 0 {
		return
	}
	c, s := kern("InRange", mask)
	done("InRange", c.InRange(s, mask.shape, arg(mask), arg(a), lo, hi), mask, a)
}

// maskScaleKernel writes out = mask ? a·scale : +0 (dropout's forward and
// backward) into the fresh out; mask is Bool, all three have one shape.
// It takes three elementwise calls and no temporary: out = mask (1 or 0
// in out's dtype), out = a where out > 0 else +0 (ThresholdBackward),
// out = out·scale, a product rounded in out's compute dtype as
// PyTorch's input.mul(mask).mul_(scale).
func maskScaleKernel(out, a, mask *Tensor, scale float64) {
	copyKernel(out, mask)
	binaryKernel(ops.ThresholdBackward, out, a, out, 0, false)
	binaryKernel(ops.Mul, out, out, nil, scale, false)
}

// sumKernel writes into out (a's shape with the reduced dimensions set to
// 1) the sum of a over those dimensions, accumulating in float64; mean
// divides by the number of summed elements. A contiguous float a whose
// reduced dimensions are one run reads as [outer, n, inner] for Reduce
// (in parallel); any other layout or dtype takes ReduceStrided, and a
// backend without that (cuda) reduces a contiguous copy with the reduced
// dimensions moved last.
func sumKernel(out, a *Tensor, mean bool) {
	if out.Numel() == 0 {
		return
	}
	op, name := ops.ReduceSum, "Sum"
	if mean {
		op, name = ops.ReduceMean, "Mean"
	}
	c, s := kern(name, out)
	mask := make([]bool, len(a.shape))
	for d := range mask {
		mask[d] = out.shape[d] == 1 && a.shape[d] != 1
	}
	if a.IsContiguous() && out.IsContiguous() && out.dtype == a.dtype && (a.dtype == Float32 || a.dtype == Float64) {
		if outer, n, inner, ok := reduceRun(a.shape, mask); ok {
			done(name, c.Reduce(s, op, cdt(a), addr(out), addr(a), outer, n, inner), out, a)
			return
		}
	}
	dst := arg(out)
	dst.Strides = slices.Clone(out.strides)
	for d, m := range mask {
		if m {
			dst.Strides[d] = 0
		}
	}
	err := c.ReduceStrided(s, op, a.shape, dst, arg(a))
	if unsupported(err) && out.dtype == a.dtype {
		sumByCopy(c, s, name, op, out, a, mask)
		return
	}
	done(name, err, a, out)
}

// sumByCopy reduces a into out through Reduce for a backend without
// ReduceStrided: a is copied with its kept dimensions first and its
// reduced ones last, so that it reads as [kept, reduced, 1].
func sumByCopy(c backend.Compute, s alloc.Stream, name string, op ops.Reduce, out, a *Tensor, mask []bool) {
	var kept, reduced []int
	for i, n := range a.shape {
		switch {
		case n == 1:
		case mask[i]:
			reduced = append(reduced, i)
		default:
			kept = append(kept, i)
		}
	}
	perm := append(slices.Clone(kept), reduced...)
	shape, strides := make([]int, len(perm)), make([]int, len(perm))
	for i, p := range perm {
		shape[i], strides[i] = a.shape[p], a.strides[p]
	}
	tmp := scratch(a, shape, a.dtype)
	defer tmp.Release()
	done(name, c.Copy(s, shape, arg(tmp), backend.Strided{Addr: addr(a), Dtype: cdt(a), Strides: strides}), a, tmp)
	outer := 1
	for _, k := range kept {
		outer *= a.shape[k]
	}
	n := a.Numel() / max(outer, 1)
	dst := out
	if !out.IsContiguous() {
		dst = scratch(out, out.shape, out.dtype)
		defer dst.Release()
	}
	done(name, c.Reduce(s, op, cdt(a), addr(dst), addr(tmp), outer, n, 1), a, tmp, dst)
	if dst != out {
		done(name, c.Copy(s, out.shape, arg(out), arg(dst)), out, dst)
	}
}

// argReduceKernel writes, for every line of a along dim, the index of its
// largest (isMax) or smallest element into idx (Int64) and that element
// into vals (a's dtype); both have a's shape with dim set to 1. Ties go to
// the lowest index and NaN wins, as in PyTorch.
func argReduceKernel(vals, idx, a *Tensor, dim int, isMax bool) {
	name := "ArgMin"
	if isMax {
		name = "ArgMax"
	}
	if idx.Numel() == 0 {
		return
	}
	if !vals.IsContiguous() || !idx.IsContiguous() || idx.dtype != Int64 || vals.dtype != a.dtype {
		panicf("internal error: %s wants contiguous outputs of %s and int64", name, a.dtype)
	}
	c, s := kern(name, a)
	n, outer, inner := 1, 1, 1
	if len(a.shape) > 0 {
		n, outer, inner = a.shape[dim], numel(a.shape[:dim]), numel(a.shape[dim+1:])
	}
	if !a.IsContiguous() {
		// Strided: outputs through strides 0 along dim; a backend without
		// the strided kernel reads a contiguous copy.
		kept := slices.Clone(a.shape)
		kept[dim] = 1
		iv, vv := arg(idx), arg(vals)
		iv.Strides, vv.Strides = contiguousStrides(kept), contiguousStrides(kept)
		iv.Strides[dim], vv.Strides[dim] = 0, 0
		err := c.ArgReduceStrided(s, isMax, a.shape, dim, iv, vv, arg(a))
		if !unsupported(err) {
			done(name, err, a, idx, vals)
			return
		}
		src := scratch(a, a.shape, a.dtype)
		defer src.Release()
		done(name, c.Copy(s, a.shape, arg(src), arg(a)), a, src)
		a = src
	}
	done(name, c.ArgReduce(s, isMax, cdt(a), addr(idx), addr(vals), addr(a), outer, n, inner), a, idx, vals)
}

// matmulKernel computes out[..., m, n] = a[..., m, k] @ b[..., k, n]; the
// batch dimensions of a and b are already broadcast to out's (stride 0)
// and their matrices are in layouts gemm reads (see blasOperand). The
// products go to GemmBatched in one call (spread over the cores on the
// CPU), or one Gemm each on a backend without it. A column-major output
// (MatmulOut into a transposed view) is computed as outᵀ = bᵀ @ aᵀ in
// place; an output gemm cannot write at all goes through a contiguous
// scratch tensor.
func matmulKernel(out, a, b *Tensor) {
	if out.Numel() == 0 {
		return
	}
	const name = "Matmul"
	if valueless(out) {
		return
	}
	if a.dtype != out.dtype || b.dtype != out.dtype {
		panicf("%s: dtypes %s @ %s -> %s", name, a.dtype, b.dtype, out.dtype)
	}
	c, s := kern(name, out)
	r := len(out.shape)
	m, n, k := out.shape[r-2], out.shape[r-1], a.shape[r-1]
	ta, lda, okA := gemmLayout(m, k, a.strides[r-2], a.strides[r-1])
	tb, ldb, okB := gemmLayout(k, n, b.strides[r-2], b.strides[r-1])
	if !okA || !okB {
		panic("tensor: internal error: gemm operand in a layout BLAS cannot read")
	}
	dst := out
	tc, ldc, okC := gemmLayout(m, n, out.strides[r-2], out.strides[r-1])
	if !okC {
		dst = scratch(out, out.shape, out.dtype)
		defer dst.Release()
		tc, ldc, _ = gemmLayout(m, n, dst.strides[r-2], dst.strides[r-1])
	}
	size := uint64(out.dtype.Size())
	nb := numel(out.shape[:r-2])
	ca, cb, cc := make([]uint64, 0, nb), make([]uint64, 0, nb), make([]uint64, 0, nb)
	forEachOffset(out.shape[:r-2], []int{dst.offset, a.offset, b.offset}, [][]int{dst.strides[:r-2], a.strides[:r-2], b.strides[:r-2]}, func(_ int, o []int) {
		cc = append(cc, dst.st.addr+uint64(o[0])*size)
		ca = append(ca, a.st.addr+uint64(o[1])*size)
		cb = append(cb, b.st.addr+uint64(o[2])*size)
	})
	if tc { // column-major C: Cᵀ = op(B)ᵀ·op(A)ᵀ, row-major
		m, n, ta, tb, lda, ldb, ca, cb = n, m, !tb, !ta, ldb, lda, cb, ca
	}
	dt := cdt(out)
	var err error
	if nb > 1 {
		err = c.GemmBatched(s, dt, ta, tb, m, n, k, 1, ca, lda, cb, ldb, 0, cc, ldc)
	}
	if nb == 1 || unsupported(err) {
		err = nil
		for i := range cc {
			if err = c.Gemm(s, dt, ta, tb, m, n, k, 1, ca[i], lda, cb[i], ldb, 0, cc[i], ldc); err != nil {
				break
			}
		}
	}
	done(name, err, out, a, b, dst)
	if dst != out {
		done(name, c.Copy(s, out.shape, arg(out), arg(dst)), out, dst)
	}
}

// softmaxKernel writes softmax(a) (or log-softmax when log) along dim into
// out (a's shape). Contiguous rows along the last dimension go to Compute's
// Softmax, other layouts to its SoftmaxStrided.
func softmaxKernel(out, a *Tensor, dim int, log bool) {
	if out.Numel() == 0 {
		return
	}
	c, s := kern("Softmax", out)
	if len(a.shape) > 0 && out.dtype == a.dtype && a.IsContiguous() && out.IsContiguous() && numel(a.shape[dim+1:]) == 1 {
		n := a.shape[dim]
		done("Softmax", c.Softmax(s, cdt(a), addr(out), addr(a), a.Numel()/n, n, log), out, a)
		return
	}
	done("Softmax", c.SoftmaxStrided(s, a.shape, dim, arg(out), arg(a), log), out, a)
}

// gatherKernel writes out[i] = src[i with i[dim] replaced by index[i]] for
// every position i of index (out has index's shape). Indices are checked.
func gatherKernel(out, src *Tensor, dim int, index *Tensor) {
	if out.Numel() == 0 {
		return
	}
	c, s := kern("Gather", out)
	done("Gather", c.Gather(s, index.shape, dim, arg(out), arg(src), arg(index)), out, src, index)
}

// scatterAddKernel adds src[i] into dst[i with i[dim] replaced by
// index[i]] for every position i of index. Indices are checked.
func scatterAddKernel(dst *Tensor, dim int, index, src *Tensor) {
	if index.Numel() == 0 {
		return
	}
	c, s := kern("ScatterAdd", dst)
	done("ScatterAdd", c.ScatterAdd(s, index.shape, dim, arg(dst), arg(index), arg(src)), dst, index, src)
}

// indexSelectKernel copies slice idx[i] of src along dim into slice i of
// out, one strided copy per index.
func indexSelectKernel(out, src *Tensor, dim int, idx []int) {
	if out.Numel() == 0 {
		return
	}
	for i, j := range idx {
		copyKernel(out.selectLayout(dim, i), src.selectLayout(dim, j))
	}
}

// indexAddKernel adds slice i of src into slice idx[i] of dst along dim
// (index_add_, the backward of IndexSelect). Repeated indices accumulate.
func indexAddKernel(dst, src *Tensor, dim int, idx []int) {
	if dst.Numel() == 0 || src.Numel() == 0 {
		return
	}
	for i, j := range idx {
		d := dst.selectLayout(dim, j)
		binaryKernel(ops.Add, d, d, src.selectLayout(dim, i), 0, false)
	}
}

// gemmLayout tells how a rows×cols matrix with strides (rs, cs) can be
// passed to a row-major gemm: as is (trans false) or transposed, with its
// leading dimension. ok is false for layouts gemm cannot read.
func gemmLayout(rows, cols, rs, cs int) (trans bool, ld int, ok bool) {
	if cols == 1 {
		cs = 1
	}
	if cs == 1 && (rs >= cols || rows == 1) {
		return false, max(rs, cols, 1), true
	}
	if rows == 1 {
		rs = 1
	}
	if rs == 1 && cs >= rows {
		return true, max(cs, rows, 1), true
	}
	return false, 0, false
}

// ---- kernels for the nn, index and reduction ops ---------------------------

// inner is an internal, unreferenced layout on t's storage (like layoutAs):
// for kernels only, never returned to users, never released.
func (t *Tensor) inner(offset int, shape, strides []int) *Tensor {
	return &Tensor{st: t.st, offset: offset, shape: shape, strides: strides, dtype: t.dtype}
}

// selectLayout is the internal layout of t.Select(d, i).
func (t *Tensor) selectLayout(d, i int) *Tensor {
	return t.inner(t.offset+i*t.strides[d], slices.Delete(slices.Clone(t.shape), d, d+1), slices.Delete(slices.Clone(t.strides), d, d+1))
}

// narrowLayout is the internal layout of t.Narrow(d, start, n).
func (t *Tensor) narrowLayout(d, start, n int) *Tensor {
	shape := slices.Clone(t.shape)
	shape[d] = n
	return t.inner(t.offset+start*t.strides[d], shape, t.strides)
}

// reduceRun reports whether the reduced dimensions of shape (mask; size-1
// dimensions may go either way) form one run, so that a contiguous tensor
// reads as [outer, n, inner] for kernels.Reduce.
func reduceRun(shape []int, mask []bool) (outer, n, inner int, ok bool) {
	first, last := -1, -1
	for i, m := range mask {
		if m && shape[i] != 1 {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	if first < 0 {
		return numel(shape), 1, 1, true
	}
	for i := first; i <= last; i++ {
		if !mask[i] && shape[i] != 1 {
			return 0, 0, 0, false
		}
	}
	return numel(shape[:first]), numel(shape[first : last+1]), numel(shape[last+1:]), true
}
