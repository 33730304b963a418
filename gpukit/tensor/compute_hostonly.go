package tensor

import (
	"github.com/gpumem/course/gpukit/device/cpucompute"
	"github.com/gpumem/course/gpukit/kernels"
)

// The host-only kernels: computations that no Compute method expresses
// (an arbitrary Go function per element, comparisons and selections
// through a Go callback, dropout's random mask, the vector functions of
// the activations' backward passes without a UnaryOp, softmax along a
// dimension other than the contiguous last one, LayerNorm of 16-bit
// inputs with float32 parameters, and the sparse products of
// ops_sparse.go). They run on the bytes of sim and host tensors, do
// nothing on meta tensors (no values, the op still charges its cost), and
// on a device whose memory the host cannot read (cuda) hostOnly refuses
// them with the package's error naming the op and the way out. Index
// checks read the indices through hostBytes, which copies them from such
// a device.

// hostOnlyKernels lists them for the error message.
const hostOnlyKernels = "elementwise Go functions, comparisons, Where, dropout, ReLU/GELU backward, softmax off the last contiguous dimension, mixed-dtype LayerNorm, sparse products"

// hostOnly reports whether a host-only kernel can run on the tensors
// (all of them have bytes the host reaches). It returns false for meta
// tensors and empty tensors, and panics for tensors on a device that
// computes on its own memory.
func hostOnly(op string, ts ...*Tensor) bool {
	for _, t := range ts {
		if t != nil && t.st.data == nil {
			if t.deviceOnly() && t.Numel() > 0 {
				panicf("%s: this kernel runs only where the host reads the memory (%s); %s has no version of it yet: move the tensors to sim with To(\"sim:0\") for this op", op, hostOnlyKernels, t.DeviceName())
			}
			return false
		}
	}
	return true
}

// softmaxLines is softmaxKernel for the layouts Compute's Softmax cannot
// read: each line along dim in float64 (cpucompute.SoftmaxLine).
func softmaxLines(out, a *Tensor, dim int, log bool) {
	if !hostOnly("Softmax", out, a) {
		return
	}
	n := 1
	if len(a.shape) > 0 {
		n = a.shape[dim]
	}
	buf := make([]float64, n)
	so, sa := lineStride(out, dim), lineStride(a, dim)
	lines(dim, []*Tensor{out, a}, func(o []int) {
		cpucompute.SoftmaxLine(buf, log,
			func(i int) float64 { return load(a.dtype, a.st.data, o[1]+i*sa) },
			func(i int, v float64) { store(out.dtype, out.st.data, o[0]+i*so, v) })
	})
}

// mapKernel computes out = f(a) elementwise for functions that have no
// kernels.UnaryOp (derivatives, masks). f must be safe for concurrent use.
func mapKernel(out, a *Tensor, f func(float64) float64) {
	if out.Numel() == 0 || !hostOnly("Map", out, a) {
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
	if out.Numel() == 0 || !hostOnly("Compare", out, a, b) {
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
	if out.Numel() == 0 || !hostOnly("Where", out, cond, a, b) {
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
	if out.Numel() == 0 || !hostOnly("Dropout", out, a, mask) {
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
	if out.Numel() == 0 || !hostOnly("ReluBackward", out, g, y) {
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
	if mask.Numel() == 0 || !hostOnly("Bernoulli", mask) {
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

// indexBytes returns bytes laid out like index's storage that the host
// can read (copied from a cuda device), nil on a meta device.
func indexBytes(op string, index *Tensor) []byte {
	if index.Numel() == 0 || (index.st.data == nil && !index.deviceOnly()) {
		return nil
	}
	return index.hostBytes(op)
}

// indexValues reads a 1-d (or 0-d) index tensor, checking every entry is in
// [0, size). It returns nil on a meta device (no values to read).
func indexValues(op string, index *Tensor, size int) []int {
	data := indexBytes(op, index)
	if data == nil {
		return nil
	}
	out := make([]int, 0, index.Numel())
	forEachOffset(index.shape, []int{index.offset}, [][]int{index.strides}, func(_ int, o []int) {
		out = append(out, int(load(index.dtype, data, o[0])))
	})
	for _, v := range out {
		if v < 0 || v >= size {
			panicf("%s: index %d is out of bounds for dimension with size %d (indices must be in [0, %d))", op, v, size, size)
		}
	}
	return out
}

// checkIndexRange panics unless every element of index is in [0, size).
func checkIndexRange(op string, index *Tensor, size int) {
	data := indexBytes(op, index)
	if data == nil {
		return
	}
	forEachOffset(index.shape, []int{index.offset}, [][]int{index.strides}, func(_ int, o []int) {
		if v := int(load(index.dtype, data, o[0])); v < 0 || v >= size {
			panicf("%s: index %d is out of bounds for dimension with size %d (indices must be in [0, %d))", op, v, size, size)
		}
	})
}

func sameDtype(dt Dtype, ts ...*Tensor) bool {
	for _, t := range ts {
		if t.dtype != dt {
			return false
		}
	}
	return true
}

// computeIn is the dtype the host-only loops compute dt in (float32 for
// the half types).
func computeIn(dt Dtype) Dtype {
	if dt == Float16 || dt == BFloat16 {
		return Float32
	}
	return dt
}
