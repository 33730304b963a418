package tensor

import (
	"math"
	"slices"

	"github.com/gpumem/course/gpukit/kernels"
)

// This file is the compute seam: the only place that runs element loops.
// float32 and float64 go to gpukit/kernels; other dtypes (float16 and
// bfloat16, computed in float32, and the integer types) take the generic
// loops below. Every kernel does nothing on a meta tensor (no bytes):
// ops there compute shapes and allocate, but no values.

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

func noBytes(ts ...*Tensor) bool {
	for _, t := range ts {
		if t != nil && t.st.data == nil {
			unsupportedOnDevice(t) // panics on cuda: no device kernel
			return true
		}
	}
	return false
}

func s32(t *Tensor) kernels.Strided[float32] {
	return kernels.Strided[float32]{Data: f32s(t.st.data), Offset: t.offset, Strides: t.strides}
}

func s64(t *Tensor) kernels.Strided[float64] {
	return kernels.Strided[float64]{Data: f64s(t.st.data), Offset: t.offset, Strides: t.strides}
}

func sameDtype(dt Dtype, ts ...*Tensor) bool {
	for _, t := range ts {
		if t.dtype != dt {
			return false
		}
	}
	return true
}

// roundTo rounds a float64 result to what dtype dt computes in (float32
// for the half types).
func computeIn(dt Dtype) Dtype {
	if dt == Float16 || dt == BFloat16 {
		return Float32
	}
	return dt
}

// fillKernel sets every element of t to v.
func fillKernel(t *Tensor, v float64) {
	if backendFill(t, v) { // device.Compute (cuda), see compute_backend.go
		return
	}
	if t.Numel() == 0 || noBytes(t) {
		return
	}
	if t.IsContiguous() {
		switch t.dtype {
		case Float32:
			d := f32s(t.st.data)[t.offset : t.offset+t.Numel()]
			for i := range d {
				d[i] = float32(v)
			}
			return
		case Float64:
			d := f64s(t.st.data)[t.offset : t.offset+t.Numel()]
			for i := range d {
				d[i] = v
			}
			return
		}
	}
	forEachOffset(t.shape, []int{t.offset}, [][]int{t.strides}, func(_ int, o []int) {
		store(t.dtype, t.st.data, o[0], v)
	})
}

// copyKernel copies src into dst elementwise (same shape; src may have
// stride-0 broadcast dimensions), converting dtypes.
func copyKernel(dst, src *Tensor) {
	if backendCopy(dst, src) { // device.Compute (cuda), see compute_backend.go
		return
	}
	if dst.Numel() == 0 || noBytes(dst, src) {
		return
	}
	if dst.dtype == src.dtype {
		// A dense destination in its own storage, from a source without
		// broadcast dimensions: kernels.Copy streams rows or, for a
		// transposed source, copies in cache-blocked tiles.
		if dst.IsContiguous() && dst.st != src.st && !hasBroadcast(src) {
			n := dst.Numel()
			switch dst.dtype {
			case Float32:
				kernels.Copy(dst.shape, f32s(dst.st.data)[dst.offset:dst.offset+n], s32(src))
				return
			case Float64:
				kernels.Copy(dst.shape, f64s(dst.st.data)[dst.offset:dst.offset+n], s64(src))
				return
			}
		}
		switch dst.dtype {
		case Float32:
			kernels.UnaryStrided(kernels.Identity, dst.shape, s32(dst), s32(src))
			return
		case Float64:
			kernels.UnaryStrided(kernels.Identity, dst.shape, s64(dst), s64(src))
			return
		}
		// Same-size raw copy for the other types: exact, no conversion.
		sz := dst.dtype.Size()
		forEachOffset(dst.shape, []int{dst.offset, src.offset}, [][]int{dst.strides, src.strides}, func(_ int, o []int) {
			copy(dst.st.data[o[0]*sz:o[0]*sz+sz], src.st.data[o[1]*sz:o[1]*sz+sz])
		})
		return
	}
	forEachOffset(dst.shape, []int{dst.offset, src.offset}, [][]int{dst.strides, src.strides}, func(_ int, o []int) {
		store(dst.dtype, dst.st.data, o[0], load(src.dtype, src.st.data, o[1]))
	})
}

// hasBroadcast reports whether t reads some element more than once
// (a stride-0 dimension of size > 1).
func hasBroadcast(t *Tensor) bool {
	for d, s := range t.strides {
		if s == 0 && t.shape[d] > 1 {
			return true
		}
	}
	return false
}

// unaryKernel computes out = op(a); a has out's shape (possibly with
// stride-0 dimensions) and dtype.
func unaryKernel(op kernels.UnaryOp, out, a *Tensor) {
	if backendUnary(op, out, a) { // device.Compute (cuda), see compute_backend.go
		return
	}
	if out.Numel() == 0 || noBytes(out, a) {
		return
	}
	switch {
	case sameDtype(Float32, out, a):
		kernels.UnaryStrided(op, out.shape, s32(out), s32(a))
	case sameDtype(Float64, out, a):
		kernels.UnaryStrided(op, out.shape, s64(out), s64(a))
	case halfUnary(op, out, a):
	default:
		f32 := computeIn(out.dtype) == Float32
		forEachOffset(out.shape, []int{out.offset, a.offset}, [][]int{out.strides, a.strides}, func(_ int, o []int) {
			x := load(a.dtype, a.st.data, o[1])
			var r float64
			if f32 {
				r = float64(kernels.ApplyUnary(op, float32(x)))
			} else {
				r = kernels.ApplyUnary(op, x)
			}
			store(out.dtype, out.st.data, o[0], r)
		})
	}
}

// binaryKernel computes out = op(a, b); a and b already have out's shape
// (broadcast dimensions have stride 0). b == nil means the scalar s;
// scalarFirst puts the scalar on the left (s op a).
func binaryKernel(op kernels.BinaryOp, out, a, b *Tensor, s float64, scalarFirst bool) {
	if backendBinary(op, out, a, b, s, scalarFirst) { // device.Compute (cuda), see compute_backend.go
		return
	}
	if out.Numel() == 0 || noBytes(out, a, b) {
		return
	}
	zeros := make([]int, len(out.shape))
	switch {
	case b != nil && sameDtype(Float32, out, a, b):
		kernels.BinaryStrided(op, out.shape, s32(out), s32(a), s32(b))
	case b != nil && sameDtype(Float64, out, a, b):
		kernels.BinaryStrided(op, out.shape, s64(out), s64(a), s64(b))
	case b == nil && sameDtype(Float32, out, a):
		sc := kernels.Strided[float32]{Data: []float32{float32(s)}, Strides: zeros}
		if scalarFirst {
			kernels.BinaryStrided(op, out.shape, s32(out), sc, s32(a))
		} else {
			kernels.BinaryStrided(op, out.shape, s32(out), s32(a), sc)
		}
	case b == nil && sameDtype(Float64, out, a):
		sc := kernels.Strided[float64]{Data: []float64{s}, Strides: zeros}
		if scalarFirst {
			kernels.BinaryStrided(op, out.shape, s64(out), sc, s64(a))
		} else {
			kernels.BinaryStrided(op, out.shape, s64(out), s64(a), sc)
		}
	case halfBinary(op, out, a, b):
	default:
		f32 := computeIn(out.dtype) == Float32
		bOff, bStr := 0, zeros
		if b != nil {
			bOff, bStr = b.offset, b.strides
		}
		forEachOffset(out.shape, []int{out.offset, a.offset, bOff}, [][]int{out.strides, a.strides, bStr}, func(_ int, o []int) {
			x := load(a.dtype, a.st.data, o[1])
			y := s
			if b != nil {
				y = load(b.dtype, b.st.data, o[2])
			}
			if scalarFirst {
				x, y = y, x
			}
			var r float64
			if f32 {
				r = float64(kernels.Apply(op, float32(x), float32(y)))
			} else {
				r = kernels.Apply(op, x, y)
			}
			store(out.dtype, out.st.data, o[0], r)
		})
	}
}

// sumKernel writes into out (a's shape with the reduced dimensions set to
// 1) the sum of a over those dimensions, accumulating in float64; mean
// divides by the number of summed elements.
func sumKernel(out, a *Tensor, mean bool) {
	if backendSum(out, a, mean) { // device.Compute (cuda), see compute_backend.go
		return
	}
	if out.Numel() == 0 || noBytes(out, a) {
		return
	}
	// Fast path: a contiguous float tensor whose reduced dimensions are one
	// run reads as [outer, n, inner]; kernels.Reduce does it in parallel.
	if a.IsContiguous() && out.IsContiguous() && out.dtype == a.dtype && (a.dtype == Float32 || a.dtype == Float64) {
		mask := make([]bool, len(a.shape))
		for d := range mask {
			mask[d] = out.shape[d] == 1 && a.shape[d] != 1
		}
		if outer, n, inner, ok := reduceRun(a.shape, mask); ok {
			op := kernels.ReduceSum
			if mean {
				op = kernels.ReduceMean
			}
			if a.dtype == Float32 {
				kernels.Reduce(op, f32s(out.st.data)[out.offset:out.offset+out.Numel()], f32s(a.st.data)[a.offset:a.offset+a.Numel()], outer, n, inner)
			} else {
				kernels.Reduce(op, f64s(out.st.data)[out.offset:out.offset+out.Numel()], f64s(a.st.data)[a.offset:a.offset+a.Numel()], outer, n, inner)
			}
			return
		}
	}
	acc := make([]float64, out.Numel())
	// Read out's element positions through strides that are 0 on the
	// reduced dimensions of a, in a dense accumulator.
	accStr := contiguousStrides(out.shape)
	for d := range accStr {
		if out.shape[d] == 1 && a.shape[d] != 1 {
			accStr[d] = 0
		}
	}
	if a.dtype == Float32 {
		data := f32s(a.st.data)
		forEachOffset(a.shape, []int{0, a.offset}, [][]int{accStr, a.strides}, func(_ int, o []int) {
			acc[o[0]] += float64(data[o[1]])
		})
	} else {
		forEachOffset(a.shape, []int{0, a.offset}, [][]int{accStr, a.strides}, func(_ int, o []int) {
			acc[o[0]] += load(a.dtype, a.st.data, o[1])
		})
	}
	div := 1.0
	if mean {
		div = float64(a.Numel()) / float64(max(out.Numel(), 1))
	}
	forEachOffset(out.shape, []int{0, out.offset}, [][]int{contiguousStrides(out.shape), out.strides}, func(_ int, o []int) {
		store(out.dtype, out.st.data, o[1], acc[o[0]]/div)
	})
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

// gemmBatch runs gemm on every matrix of a batched product whose output
// is row-major and whose operands' matrices BLAS reads (matmulInto copies
// any other operand contiguous first).
func gemmBatch[F float32 | float64](gemm func(ta, tb bool, m, n, k int, alpha F, a []F, lda int, b []F, ldb int, beta F, c []F, ldc int),
	cd, ad, bd []F, out, a, b *Tensor, m, n, k int, offs []int, strides [][]int) {
	r := len(out.shape)
	_, ldc, _ := gemmLayout(m, n, out.strides[r-2], out.strides[r-1])
	ta, lda, okA := gemmLayout(m, k, a.strides[r-2], a.strides[r-1])
	tb, ldb, okB := gemmLayout(k, n, b.strides[r-2], b.strides[r-1])
	if !okA || !okB {
		panic("tensor: internal error: gemm operand in a layout BLAS cannot read")
	}
	if c32, ok := any(cd).([]float32); ok && r > 2 {
		// float32: the whole batch in one call, which spreads the
		// products over the cores when there are enough of them.
		nb := numel(out.shape[:r-2])
		oc, oa, ob := make([]int, 0, nb), make([]int, 0, nb), make([]int, 0, nb)
		forEachOffset(out.shape[:r-2], offs, strides, func(_ int, o []int) {
			oc, oa, ob = append(oc, o[0]), append(oa, o[1]), append(ob, o[2])
		})
		kernels.SgemmOffsets(ta, tb, m, n, k, 1, any(ad).([]float32), lda, oa, any(bd).([]float32), ldb, ob, 0, c32, ldc, oc)
		return
	}
	forEachOffset(out.shape[:r-2], offs, strides, func(_ int, o []int) {
		gemm(ta, tb, m, n, k, 1, ad[o[1]:], lda, bd[o[2]:], ldb, 0, cd[o[0]:], ldc)
	})
}

// matmulKernel computes out[..., m, n] = a[..., m, k] @ b[..., k, n]; the
// batch dimensions of a and b are already broadcast to out's (stride 0).
func matmulKernel(out, a, b *Tensor) {
	if backendMatmul(out, a, b) { // device.Compute (cuda), see compute_backend.go
		return
	}
	if out.Numel() == 0 || noBytes(out, a, b) {
		return
	}
	r := len(out.shape)
	m, n, k := out.shape[r-2], out.shape[r-1], a.shape[r-1]
	batch := out.shape[:r-2]
	tc, _, okC := gemmLayout(m, n, out.strides[r-2], out.strides[r-1])
	offs := []int{out.offset, a.offset, b.offset}
	strides := [][]int{out.strides[:r-2], a.strides[:r-2], b.strides[:r-2]}
	switch {
	case okC && !tc && sameDtype(Float32, out, a, b):
		gemmBatch(kernels.Sgemm, f32s(out.st.data), f32s(a.st.data), f32s(b.st.data), out, a, b, m, n, k, offs, strides)
	case okC && !tc && sameDtype(Float64, out, a, b):
		gemmBatch(kernels.Dgemm, f64s(out.st.data), f64s(a.st.data), f64s(b.st.data), out, a, b, m, n, k, offs, strides)
	default:
		f32 := computeIn(out.dtype) == Float32
		forEachOffset(batch, offs, strides, func(_ int, o []int) {
			for i := range m {
				for j := range n {
					var s float64
					for p := range k {
						x := load(a.dtype, a.st.data, o[1]+i*a.strides[r-2]+p*a.strides[r-1])
						y := load(b.dtype, b.st.data, o[2]+p*b.strides[r-2]+j*b.strides[r-1])
						if f32 {
							s = float64(float32(s) + float32(x)*float32(y))
						} else {
							s += x * y
						}
					}
					store(out.dtype, out.st.data, o[0]+i*out.strides[r-2]+j*out.strides[r-1], s)
				}
			}
		})
	}
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

// lines calls fn once for every 1-d line of the tensors ts (all of one
// shape) along dimension dim, with each tensor's offset of the line's first
// element. The line has n elements, step strides[dim] apart in each tensor.
// A 0-d tensor is one line of one element.
func lines(dim int, ts []*Tensor, fn func(offs []int)) (n int) {
	shape := slices.Clone(ts[0].shape)
	offs := make([]int, len(ts))
	strides := make([][]int, len(ts))
	for i, t := range ts {
		offs[i], strides[i] = t.offset, t.strides
	}
	if len(shape) == 0 {
		fn(offs)
		return 1
	}
	n = shape[dim]
	shape[dim] = 1
	forEachOffset(shape, offs, strides, func(_ int, o []int) { fn(o) })
	return n
}

// lineStride is t's step along dim (0 for a 0-d tensor).
func lineStride(t *Tensor, dim int) int {
	if len(t.shape) == 0 {
		return 0
	}
	return t.strides[dim]
}

// softmaxKernel writes softmax(a) (or log-softmax when log) along dim into
// out (a's shape), computing each line in float64 after subtracting its
// maximum, so large logits do not overflow.
func softmaxKernel(out, a *Tensor, dim int, log bool) {
	if out.Numel() == 0 || noBytes(out, a) || softmaxRows(out, a, dim, log) {
		return
	}
	n := 1
	if len(a.shape) > 0 {
		n = a.shape[dim]
	}
	buf := make([]float64, n)
	so, sa := lineStride(out, dim), lineStride(a, dim)
	lines(dim, []*Tensor{out, a}, func(o []int) {
		m := math.Inf(-1)
		for i := range n {
			buf[i] = load(a.dtype, a.st.data, o[1]+i*sa)
			m = max(m, buf[i])
		}
		if math.IsInf(m, -1) {
			m = 0 // an all -Inf line: avoid -Inf - -Inf = NaN in the shift
		}
		var sum float64
		for i := range n {
			sum += math.Exp(buf[i] - m)
		}
		lse := m + math.Log(sum)
		for i := range n {
			v := buf[i] - lse
			if !log {
				v = math.Exp(buf[i]-m) / sum
			}
			store(out.dtype, out.st.data, o[0]+i*so, v)
		}
	})
}

// mapKernel computes out = f(a) elementwise for functions that have no
// kernels.UnaryOp (derivatives, masks). f must be safe for concurrent use.
func mapKernel(out, a *Tensor, f func(float64) float64) {
	if out.Numel() == 0 || noBytes(out, a) {
		return
	}
	n := out.Numel()
	switch {
	case out.IsContiguous() && a.IsContiguous() && sameDtype(Float32, out, a):
		kernels.Map(func(x float32) float32 { return float32(f(float64(x))) }, f32s(out.st.data)[out.offset:out.offset+n], f32s(a.st.data)[a.offset:a.offset+n])
	case out.IsContiguous() && a.IsContiguous() && sameDtype(Float64, out, a):
		kernels.Map(f, f64s(out.st.data)[out.offset:out.offset+n], f64s(a.st.data)[a.offset:a.offset+n])
	default:
		forEachOffset(out.shape, []int{out.offset, a.offset}, [][]int{out.strides, a.strides}, func(_ int, o []int) {
			store(out.dtype, out.st.data, o[0], f(load(a.dtype, a.st.data, o[1])))
		})
	}
}

// compareKernel writes the Bool out = cmp(a, b) (b == nil: the scalar s);
// a and b have out's shape (stride 0 where broadcast) and any dtypes.
func compareKernel(out, a, b *Tensor, s float64, cmp func(x, y float64) bool) {
	if out.Numel() == 0 || noBytes(out, a, b) {
		return
	}
	bOff, bStr := 0, make([]int, len(out.shape))
	if b != nil {
		bOff, bStr = b.offset, b.strides
	}
	forEachOffset(out.shape, []int{out.offset, a.offset, bOff}, [][]int{out.strides, a.strides, bStr}, func(_ int, o []int) {
		y := s
		if b != nil {
			y = load(b.dtype, b.st.data, o[2])
		}
		out.st.data[o[0]] = 0
		if cmp(load(a.dtype, a.st.data, o[1]), y) {
			out.st.data[o[0]] = 1
		}
	})
}

// whereKernel writes out = cond ? a : b; cond (Bool), a and b have out's
// shape (stride 0 where broadcast).
func whereKernel(out, cond, a, b *Tensor) {
	if out.Numel() == 0 || noBytes(out, cond, a, b) {
		return
	}
	forEachOffset(out.shape, []int{out.offset, cond.offset, a.offset, b.offset}, [][]int{out.strides, cond.strides, a.strides, b.strides}, func(_ int, o []int) {
		src, i := b, o[3]
		if cond.st.data[o[1]] != 0 {
			src, i = a, o[2]
		}
		store(out.dtype, out.st.data, o[0], load(src.dtype, src.st.data, i))
	})
}

// maskScaleKernel writes out = mask ? a·scale : 0 (dropout's forward and
// backward); mask is Bool, all three have one shape.
func maskScaleKernel(out, a, mask *Tensor, scale float64) {
	if out.Numel() == 0 || noBytes(out, a, mask) {
		return
	}
	n := out.Numel()
	if out.IsContiguous() && a.IsContiguous() && mask.IsContiguous() {
		m := mask.st.data[mask.offset : mask.offset+n]
		switch {
		case sameDtype(Float32, out, a):
			d, x, s := f32s(out.st.data)[out.offset:out.offset+n], f32s(a.st.data)[a.offset:a.offset+n], float32(scale)
			for i := range d {
				d[i] = 0
				if m[i] != 0 {
					d[i] = x[i] * s
				}
			}
			return
		case sameDtype(Float64, out, a):
			d, x := f64s(out.st.data)[out.offset:out.offset+n], f64s(a.st.data)[a.offset:a.offset+n]
			for i := range d {
				d[i] = 0
				if m[i] != 0 {
					d[i] = x[i] * scale
				}
			}
			return
		}
	}
	forEachOffset(out.shape, []int{out.offset, a.offset, mask.offset}, [][]int{out.strides, a.strides, mask.strides}, func(_ int, o []int) {
		v := 0.0
		if mask.st.data[o[2]] != 0 {
			v = load(a.dtype, a.st.data, o[1]) * scale
		}
		store(out.dtype, out.st.data, o[0], v)
	})
}

// reluBackwardKernel writes out = y ≤ 0 ? 0 : g (PyTorch's
// threshold_backward for ReLU's output y); out, g and y have one shape
// and one dtype.
func reluBackwardKernel(out, g, y *Tensor) {
	if out.Numel() == 0 || noBytes(out, g, y) {
		return
	}
	n := out.Numel()
	if g.IsContiguous() && y.IsContiguous() {
		switch out.dtype {
		case Float32:
			thresholdBackward(f32s(out.st.data)[:n], f32s(g.st.data)[g.offset:g.offset+n], f32s(y.st.data)[y.offset:y.offset+n])
			return
		case Float64:
			thresholdBackward(f64s(out.st.data)[:n], f64s(g.st.data)[g.offset:g.offset+n], f64s(y.st.data)[y.offset:y.offset+n])
			return
		}
	}
	forEachOffset(out.shape, []int{out.offset, g.offset, y.offset}, [][]int{out.strides, g.strides, y.strides}, func(_ int, o []int) {
		v := 0.0
		if !(load(y.dtype, y.st.data, o[2]) <= 0) {
			v = load(g.dtype, g.st.data, o[1])
		}
		store(out.dtype, out.st.data, o[0], v)
	})
}

// thresholdBackward is d = g where y > 0, else 0 (NaN in y passes g, as
// PyTorch's threshold_backward does).
func thresholdBackward[F float32 | float64](d, g, y []F) {
	for i := range d {
		d[i] = 0
		if !(y[i] <= 0) {
			d[i] = g[i]
		}
	}
}

// bernoulliKernel fills the Bool mask with 1 where a uniform draw from g
// is ≥ p (keep), 0 elsewhere.
func bernoulliKernel(mask *Tensor, p float64, g *Generator) {
	if mask.Numel() == 0 || noBytes(mask) {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	forEachOffset(mask.shape, []int{mask.offset}, [][]int{mask.strides}, func(_ int, o []int) {
		mask.st.data[o[0]] = 0
		if g.rng.Float64() >= p {
			mask.st.data[o[0]] = 1
		}
	})
}

// indexValues reads a 1-d (or 0-d) index tensor, checking every entry is in
// [0, size). It returns nil on a meta device (no values to read).
func indexValues(op string, index *Tensor, size int) []int {
	if noBytes(index) {
		return nil
	}
	out := make([]int, 0, index.Numel())
	forEachOffset(index.shape, []int{index.offset}, [][]int{index.strides}, func(_ int, o []int) {
		out = append(out, int(load(index.dtype, index.st.data, o[0])))
	})
	for _, v := range out {
		if v < 0 || v >= size {
			panicf("%s: index %d is out of bounds for dimension with size %d (indices must be in [0, %d))", op, v, size, size)
		}
	}
	return out
}

// indexSelectKernel copies slice idx[i] of src along dim into slice i of
// out, one strided copy per index.
func indexSelectKernel(out, src *Tensor, dim int, idx []int) {
	if out.Numel() == 0 || noBytes(out, src) {
		return
	}
	for i, j := range idx {
		copyKernel(out.selectLayout(dim, i), src.selectLayout(dim, j))
	}
}

// indexAddKernel adds slice i of src into slice idx[i] of dst along dim
// (index_add_, the backward of IndexSelect). Repeated indices accumulate.
func indexAddKernel(dst, src *Tensor, dim int, idx []int) {
	if dst.Numel() == 0 || src.Numel() == 0 || noBytes(dst, src) {
		return
	}
	for i, j := range idx {
		d := dst.selectLayout(dim, j)
		binaryKernel(kernels.Add, d, d, src.selectLayout(dim, i), 0, false)
	}
}

// checkIndexRange panics unless every element of index is in [0, size).
func checkIndexRange(op string, index *Tensor, size int) {
	if noBytes(index) {
		return
	}
	forEachOffset(index.shape, []int{index.offset}, [][]int{index.strides}, func(_ int, o []int) {
		if v := int(load(index.dtype, index.st.data, o[0])); v < 0 || v >= size {
			panicf("%s: index %d is out of bounds for dimension with size %d (indices must be in [0, %d))", op, v, size, size)
		}
	})
}

// gatherKernel writes out[i] = src[i with i[dim] replaced by index[i]] for
// every position i of index (out has index's shape). Indices are checked.
func gatherKernel(out, src *Tensor, dim int, index *Tensor) {
	if out.Numel() == 0 || noBytes(out, src, index) {
		return
	}
	ss := slices.Clone(src.strides)
	ss[dim] = 0
	step := src.strides[dim]
	forEachOffset(index.shape, []int{index.offset, out.offset, src.offset}, [][]int{index.strides, out.strides, ss}, func(_ int, o []int) {
		j := int(load(index.dtype, index.st.data, o[0]))
		store(out.dtype, out.st.data, o[1], load(src.dtype, src.st.data, o[2]+j*step))
	})
}

// scatterAddKernel adds src[i] into dst[i with i[dim] replaced by
// index[i]] for every position i of index. Indices are checked.
func scatterAddKernel(dst *Tensor, dim int, index, src *Tensor) {
	if index.Numel() == 0 || noBytes(dst, src, index) {
		return
	}
	ds := slices.Clone(dst.strides)
	ds[dim] = 0
	step := dst.strides[dim]
	forEachOffset(index.shape, []int{index.offset, src.offset, dst.offset}, [][]int{index.strides, src.strides, ds}, func(_ int, o []int) {
		j := int(load(index.dtype, index.st.data, o[0]))
		at := o[2] + j*step
		store(dst.dtype, dst.st.data, at, load(dst.dtype, dst.st.data, at)+load(src.dtype, src.st.data, o[1]))
	})
}

// argReduceKernel writes, for every line of a along dim, the index of its
// largest (isMax) or smallest element into idx (Int64) and that element
// into vals (a's dtype); both have a's shape with dim set to 1. Ties go to
// the lowest index and NaN wins, as in PyTorch.
func argReduceKernel(vals, idx, a *Tensor, dim int, isMax bool) {
	if backendArgReduce(vals, idx, a, dim, isMax) { // device.Compute (cuda), see compute_backend.go
		return
	}
	if idx.Numel() == 0 || noBytes(idx, a, vals) {
		return
	}
	n := 1
	if len(a.shape) > 0 {
		n = a.shape[dim]
	}
	outer, inner := numel(a.shape[:min(dim, len(a.shape))]), 1
	if len(a.shape) > 0 {
		inner = numel(a.shape[dim+1:])
	}
	var best []int
	if a.IsContiguous() && (a.dtype == Float32 || a.dtype == Float64) {
		best = make([]int, outer*inner)
		if a.dtype == Float32 {
			src := f32s(a.st.data)[a.offset : a.offset+a.Numel()]
			if isMax {
				kernels.ArgMax(best, src, outer, n, inner)
			} else {
				kernels.ArgMin(best, src, outer, n, inner)
			}
		} else {
			src := f64s(a.st.data)[a.offset : a.offset+a.Numel()]
			if isMax {
				kernels.ArgMax(best, src, outer, n, inner)
			} else {
				kernels.ArgMin(best, src, outer, n, inner)
			}
		}
	}
	step := lineStride(a, dim)
	k := 0
	lines(dim, []*Tensor{a, vals, idx}, func(o []int) {
		var bi int
		if best != nil {
			bi = best[k]
		} else {
			bv, bi0 := 0.0, -1
			for p := range n {
				v := load(a.dtype, a.st.data, o[0]+p*step)
				if bi0 < 0 || (v != v && bv == bv) || (isMax && v > bv) || (!isMax && v < bv) {
					bv, bi0 = v, p
				}
			}
			bi = bi0
		}
		k++
		store(idx.dtype, idx.st.data, o[2], float64(bi))
		store(vals.dtype, vals.st.data, o[1], load(a.dtype, a.st.data, o[0]+bi*step))
	})
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
