package tensor

import (
	"slices"

	"github.com/gpumem/course/gpukit/device"
	"github.com/gpumem/course/gpukit/kernels"
)

// This file routes the kernels of compute.go to devices that compute on
// their own memory (device.Compute: the cuda backend), whose bytes the host
// cannot see. Each backendX function returns false at once for tensors
// with host-visible bytes (sim, host) and for meta tensors, and the kernel
// in compute.go goes on as before; otherwise it queues the work on the
// device's default stream and returns true. Kernels that are not routed
// reach noBytes, which panics for such tensors (unsupportedOnDevice)
// instead of leaving the output unwritten.
//
// Only float32 and float64 compute there; temporaries (contiguous copies
// for layouts a kernel cannot read) come from the device's caching
// allocator and go back to it as soon as their work is queued, which is
// safe because all of it runs in order on one stream.

// devCompute returns the Compute of the device that the tensors live on, or
// nil when they have host-visible bytes or their device does not compute.
func devCompute(ts ...*Tensor) (device.Compute, *device.Device) {
	t := ts[0]
	if t == nil || t.st.data != nil {
		return nil, nil
	}
	m, ok := t.st.core.mem.(deviceMemory)
	if !ok {
		return nil, nil
	}
	c, ok := m.d.Backend().(device.Compute)
	if !ok {
		return nil, nil
	}
	for _, u := range ts[1:] {
		if u != nil && u.st.core.mem != t.st.core.mem {
			panicf("internal error: a kernel mixes tensors on %s and %s", t.DeviceName(), u.DeviceName())
		}
	}
	return c, m.d
}

// unsupportedOnDevice panics when t is on a computing device: the kernel
// that asked has no device version, and must not silently do nothing.
func unsupportedOnDevice(t *Tensor) {
	if c, _ := devCompute(t); c != nil && t.Numel() > 0 {
		panicf("this operation has no kernel on %s yet (there: fill, copy, unary and binary ops, Sum, Mean, Max, Min, ArgMax, ArgMin and Matmul of float32/float64); move the tensor to sim with To", t.DeviceName())
	}
}

// devDtype is t's dtype as a Compute element type.
func devDtype(op string, t *Tensor) device.Dtype {
	switch t.dtype {
	case Float32:
		return device.Float32
	case Float64:
		return device.Float64
	}
	panicf("%s: %s tensors do not compute on %s yet (float32 and float64 do); convert with ToDtype on sim first", op, t.dtype, t.DeviceName())
	return 0
}

// devOperand is t as a Compute operand with t's own strides.
func devOperand(op string, t *Tensor) device.Strided {
	return device.Strided{Addr: t.DataPtr(), Dtype: devDtype(op, t), Strides: t.strides}
}

// devMust panics with a tensor error when a device kernel could not be queued.
func devMust(op string, t *Tensor, err error) {
	if err != nil {
		panicf("%s on %s: %v", op, t.DeviceName(), err)
	}
}

// devTemp is a contiguous scratch tensor on t's device.
func devTemp(t *Tensor, shape []int, dt Dtype) *Tensor {
	return empty(t.st.core.mem, shape, dt)
}

// devContiguous returns t when it is contiguous, else a contiguous
// copy (release it with release, which does nothing for t itself).
func devContiguous(c device.Compute, d *device.Device, t *Tensor) (ct *Tensor, release func()) {
	if t.IsContiguous() {
		return t, func() {}
	}
	tmp := devTemp(t, t.shape, t.dtype)
	devMust("Contiguous", t, c.Copy(d.DefaultStream(), t.shape, devOperand("Contiguous", tmp), devOperand("Contiguous", t)))
	return tmp, tmp.Release
}

func backendFill(t *Tensor, v float64) bool {
	c, d := devCompute(t)
	if c == nil {
		return false
	}
	if t.Numel() > 0 {
		devMust("Fill", t, c.Fill(d.DefaultStream(), t.shape, devOperand("Fill", t), v))
	}
	return true
}

func backendCopy(dst, src *Tensor) bool {
	c, d := devCompute(dst, src)
	if c == nil {
		return false
	}
	if dst.Numel() > 0 {
		devMust("Copy", dst, c.Copy(d.DefaultStream(), dst.shape, devOperand("Copy", dst), devOperand("Copy", src)))
	}
	return true
}

func backendUnary(op kernels.UnaryOp, out, a *Tensor) bool {
	c, d := devCompute(out, a)
	if c == nil {
		return false
	}
	if out.Numel() > 0 {
		name := op.String()
		devMust(name, out, c.Unary(d.DefaultStream(), op, out.shape, devOperand(name, out), devOperand(name, a)))
	}
	return true
}

func backendBinary(op kernels.BinaryOp, out, a, b *Tensor, s float64, scalarFirst bool) bool {
	c, d := devCompute(out, a, b)
	if c == nil {
		return false
	}
	if out.Numel() == 0 {
		return true
	}
	name := op.String()
	if b == nil {
		devMust(name, out, c.BinaryScalar(d.DefaultStream(), op, out.shape, devOperand(name, out), devOperand(name, a), s, scalarFirst))
	} else {
		devMust(name, out, c.Binary(d.DefaultStream(), op, out.shape, devOperand(name, out), devOperand(name, a), devOperand(name, b)))
	}
	return true
}

// backendSum reduces a into out (a's shape with the reduced dimensions set
// to 1). A contiguous a whose reduced dimensions are one run is read as
// [outer, n, inner] in place; any other layout is first copied with the
// reduced dimensions moved last, so that it reads as [kept, reduced, 1].
func backendSum(out, a *Tensor, mean bool) bool {
	c, d := devCompute(out, a)
	if c == nil {
		return false
	}
	if out.Numel() == 0 {
		return true
	}
	op, name := kernels.ReduceSum, "Sum"
	if mean {
		op, name = kernels.ReduceMean, "Mean"
	}
	if out.dtype != a.dtype {
		panicf("%s: %s tensors do not sum on %s yet (float32 and float64 do)", name, a.dtype, a.DeviceName())
	}
	dt, s := devDtype(name, a), d.DefaultStream()
	var kept, reduced []int // dimensions of size > 1
	for i, n := range a.shape {
		switch {
		case n == 1:
		case out.shape[i] == 1:
			reduced = append(reduced, i)
		default:
			kept = append(kept, i)
		}
	}
	src, outer, n, inner := a, 0, 0, 0
	if len(reduced) == 0 {
		outer, n, inner = numel(a.shape), 1, 1 // nothing to reduce: a copy
	}
	// The reduced dimensions are one run when no kept one lies among them.
	first, last := 0, len(a.shape)-1
	if len(reduced) > 0 {
		first, last = reduced[0], reduced[len(reduced)-1]
	}
	run := !slices.ContainsFunc(kept, func(k int) bool { return k > first && k < last })
	switch {
	case len(reduced) == 0 && a.IsContiguous():
	case run && a.IsContiguous():
		outer, n, inner = numel(a.shape[:first]), numel(a.shape[first:last+1]), numel(a.shape[last+1:])
	default:
		perm := append(slices.Clone(kept), reduced...)
		shape, strides := make([]int, len(perm)), make([]int, len(perm))
		for i, p := range perm {
			shape[i], strides[i] = a.shape[p], a.strides[p]
		}
		tmp := devTemp(a, shape, a.dtype)
		defer tmp.Release()
		devMust(name, a, c.Copy(s, shape, devOperand(name, tmp), device.Strided{Addr: a.DataPtr(), Dtype: dt, Strides: strides}))
		src = tmp
		outer, inner = 1, 1
		for _, k := range kept {
			outer *= a.shape[k]
		}
		n = a.Numel() / max(outer, 1)
	}
	dst := out
	if !out.IsContiguous() {
		dst = devTemp(out, out.shape, out.dtype)
		defer dst.Release()
	}
	devMust(name, a, c.Reduce(s, op, dt, dst.DataPtr(), src.DataPtr(), outer, n, inner))
	if dst != out {
		devMust(name, out, c.Copy(s, out.shape, devOperand(name, out), devOperand(name, dst)))
	}
	return true
}

// backendArgReduce writes the values and Int64 positions of the maxima
// (isMax) or minima of a along dim; vals and idx are a's shape with dim set
// to 1, fresh and contiguous.
func backendArgReduce(vals, idx, a *Tensor, dim int, isMax bool) bool {
	c, d := devCompute(vals, idx, a)
	if c == nil {
		return false
	}
	if idx.Numel() == 0 {
		return true
	}
	name := "ArgMin"
	if isMax {
		name = "ArgMax"
	}
	if !vals.IsContiguous() || !idx.IsContiguous() || idx.dtype != Int64 || vals.dtype != a.dtype {
		panicf("internal error: %s on %s wants contiguous outputs of %s and int64", name, a.DeviceName(), a.dtype)
	}
	dt := devDtype(name, a)
	n, outer, inner := 1, 1, 1
	if len(a.shape) > 0 {
		n, outer, inner = a.shape[dim], numel(a.shape[:dim]), numel(a.shape[dim+1:])
	}
	src, release := devContiguous(c, d, a)
	defer release()
	devMust(name, a, c.ArgReduce(d.DefaultStream(), isMax, dt, idx.DataPtr(), vals.DataPtr(), src.DataPtr(), outer, n, inner))
	return true
}

// backendMatmul computes out[..., m, n] = a[..., m, k] @ b[..., k, n] with
// one Gemm per batch element (batch dimensions of a and b are already
// broadcast to out's). An operand that gemm cannot read in place (see
// gemmLayout) is made contiguous first; an output it cannot write is
// computed in a contiguous scratch tensor and copied.
func backendMatmul(out, a, b *Tensor) bool {
	c, d := devCompute(out, a, b)
	if c == nil {
		return false
	}
	if out.Numel() == 0 {
		return true
	}
	if a.dtype != out.dtype || b.dtype != out.dtype {
		panicf("Matmul: dtypes %s @ %s -> %s do not compute on %s", a.dtype, b.dtype, out.dtype, out.DeviceName())
	}
	dt, s := devDtype("Matmul", out), d.DefaultStream()
	r := len(out.shape)
	m, n, k := out.shape[r-2], out.shape[r-1], a.shape[r-1]
	ta, lda, okA := gemmLayout(m, k, a.strides[r-2], a.strides[r-1])
	if !okA {
		ca, release := devContiguous(c, d, a)
		defer release()
		a = ca
		ta, lda, _ = gemmLayout(m, k, a.strides[r-2], a.strides[r-1])
	}
	tb, ldb, okB := gemmLayout(k, n, b.strides[r-2], b.strides[r-1])
	if !okB {
		cb, release := devContiguous(c, d, b)
		defer release()
		b = cb
		tb, ldb, _ = gemmLayout(k, n, b.strides[r-2], b.strides[r-1])
	}
	dst := out
	tc, ldc, okC := gemmLayout(m, n, out.strides[r-2], out.strides[r-1])
	if !okC || tc {
		dst = devTemp(out, out.shape, out.dtype)
		defer dst.Release()
		_, ldc, _ = gemmLayout(m, n, dst.strides[r-2], dst.strides[r-1])
	}
	size := uint64(out.dtype.Size())
	offs := []int{dst.offset, a.offset, b.offset}
	strides := [][]int{dst.strides[:r-2], a.strides[:r-2], b.strides[:r-2]}
	forEachOffset(out.shape[:r-2], offs, strides, func(_ int, o []int) {
		devMust("Matmul", out, c.Gemm(s, dt, ta, tb, m, n, k, 1,
			a.st.addr+uint64(o[1])*size, lda, b.st.addr+uint64(o[2])*size, ldb, 0, dst.st.addr+uint64(o[0])*size, ldc))
	})
	if dst != out {
		devMust("Matmul", out, c.Copy(s, out.shape, devOperand("Matmul", out), devOperand("Matmul", dst)))
	}
	return true
}
