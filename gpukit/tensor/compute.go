package tensor

import (
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
	t.st.core.mem.launch(kernelCost{name: name, flops: flops, bytes: bytes, half: t.dtype == Float16 || t.dtype == BFloat16})
}

func noBytes(ts ...*Tensor) bool {
	for _, t := range ts {
		if t != nil && t.st.data == nil {
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
	if dst.Numel() == 0 || noBytes(dst, src) {
		return
	}
	if dst.dtype == src.dtype {
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

// unaryKernel computes out = op(a); a has out's shape (possibly with
// stride-0 dimensions) and dtype.
func unaryKernel(op kernels.UnaryOp, out, a *Tensor) {
	if out.Numel() == 0 || noBytes(out, a) {
		return
	}
	switch {
	case sameDtype(Float32, out, a):
		kernels.UnaryStrided(op, out.shape, s32(out), s32(a))
	case sameDtype(Float64, out, a):
		kernels.UnaryStrided(op, out.shape, s64(out), s64(a))
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
	if out.Numel() == 0 || noBytes(out, a) {
		return
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

// matmulKernel computes out[..., m, n] = a[..., m, k] @ b[..., k, n]; the
// batch dimensions of a and b are already broadcast to out's (stride 0).
func matmulKernel(out, a, b *Tensor) {
	if out.Numel() == 0 || noBytes(out, a, b) {
		return
	}
	r := len(out.shape)
	m, n, k := out.shape[r-2], out.shape[r-1], a.shape[r-1]
	batch := out.shape[:r-2]
	ta, lda, okA := gemmLayout(m, k, a.strides[r-2], a.strides[r-1])
	tb, ldb, okB := gemmLayout(k, n, b.strides[r-2], b.strides[r-1])
	tc, ldc, okC := gemmLayout(m, n, out.strides[r-2], out.strides[r-1])
	fast := okA && okB && okC && !tc
	offs := []int{out.offset, a.offset, b.offset}
	strides := [][]int{out.strides[:r-2], a.strides[:r-2], b.strides[:r-2]}
	switch {
	case fast && sameDtype(Float32, out, a, b):
		cd, ad, bd := f32s(out.st.data), f32s(a.st.data), f32s(b.st.data)
		forEachOffset(batch, offs, strides, func(_ int, o []int) {
			kernels.Sgemm(ta, tb, m, n, k, 1, ad[o[1]:], lda, bd[o[2]:], ldb, 0, cd[o[0]:], ldc)
		})
	case fast && sameDtype(Float64, out, a, b):
		cd, ad, bd := f64s(out.st.data), f64s(a.st.data), f64s(b.st.data)
		forEachOffset(batch, offs, strides, func(_ int, o []int) {
			kernels.Dgemm(ta, tb, m, n, k, 1, ad[o[1]:], lda, bd[o[2]:], ldb, 0, cd[o[0]:], ldc)
		})
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
