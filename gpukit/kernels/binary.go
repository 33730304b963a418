package kernels

import (
	"fmt"
	"math"
	"unsafe"

	"github.com/gpumem/course/gpukit/ops"
)

// ApplyBinary computes op(x, y) for one pair of values. It is the scalar reference
// for the vector kernels and the body of the general strided loop.
func ApplyBinary[T Float](op ops.Binary, x, y T) T {
	switch op {
	case ops.Add:
		return x + y
	case ops.Sub:
		return x - y
	case ops.Mul:
		return x * y
	case ops.Div:
		return x / y
	case ops.Max:
		return max(x, y)
	case ops.Min:
		return min(x, y)
	case ops.Pow:
		return T(math.Pow(float64(x), float64(y)))
	case ops.Greater:
		return b2f[T](x > y)
	case ops.Less:
		return b2f[T](x < y)
	case ops.Equal:
		return b2f[T](x == y)
	case ops.ThresholdBackward:
		if y <= 0 {
			return 0
		}
		return x
	case ops.GreaterEqual:
		return b2f[T](x >= y)
	case ops.LessEqual:
		return b2f[T](x <= y)
	}
	if u, ok := op.Derivative(); ok {
		return x * ApplyUnary(u, y)
	}
	panic("kernels: unknown " + op.String())
}

func b2f[T Float](b bool) T {
	if b {
		return 1
	}
	return 0
}

// Binary computes dst[i] = op(a[i], b[i]) over contiguous slices of equal
// length, using several goroutines for large inputs. dst may alias a or b
// exactly (in-place update) but must not partially overlap them.
func Binary[T Float](op ops.Binary, dst, a, b []T) {
	if len(a) != len(dst) || len(b) != len(dst) {
		panic(fmt.Sprintf("kernels: Binary %v: lengths dst=%d a=%d b=%d differ", op, len(dst), len(a), len(b)))
	}
	stream := len(dst) >= streamFloats
	parallelFor(len(dst), workers(len(dst), binaryMinPer(op)), 16, func(lo, hi int) {
		binaryVVStream(op, dst[lo:hi], a[lo:hi], b[lo:hi], stream)
	})
}

// binaryMinPer is how many elements are worth one goroutine: a backward
// op evaluates its derivative, and splits where its Unary op would.
func binaryMinPer(op ops.Binary) int {
	if u, ok := op.Derivative(); ok {
		return unaryMinPer(u)
	}
	return parallelThreshold / 2
}

// BinaryScalar computes dst[i] = op(a[i], s).
func BinaryScalar[T Float](op ops.Binary, dst, a []T, s T) {
	if len(a) != len(dst) {
		panic(fmt.Sprintf("kernels: BinaryScalar %v: lengths dst=%d a=%d differ", op, len(dst), len(a)))
	}
	stream := len(dst) >= streamFloats
	parallelFor(len(dst), workers(len(dst), binaryMinPer(op)), 16, func(lo, hi int) {
		binaryVSStream(op, dst[lo:hi], a[lo:hi], s, stream)
	})
}

// BinaryStrided computes dst = op(a, b) elementwise over an N-d shape, each
// operand addressed through its own strides. Broadcasting is expressed by
// stride 0 (see BroadcastStrides). dst must not overlap a or b unless it
// addresses exactly the same elements in the same order.
//
// Dimensions that are contiguous for all operands are merged first, so
// contiguous and row-broadcast cases run the same tight loops as Binary.
func BinaryStrided[T Float](op ops.Binary, shape []int, dst, a, b Strided[T]) {
	checkView("dst", shape, dst)
	checkView("a", shape, a)
	checkView("b", shape, b)
	total := numel(shape)
	if total == 0 {
		return
	}
	l := coalesce(shape, dst.Strides, a.Strides, b.Strides)
	off := [3]int{dst.Offset, a.Offset, b.Offset}
	stream := total >= streamFloats
	parallelFor(total, workers(total, binaryMinPer(op)), 16, func(lo, hi int) {
		l.rows(off, lo, hi, func(n int, o, s [3]int) {
			binaryRow(op, n, stream, dst.Data, o[0], s[0], a.Data, o[1], s[1], b.Data, o[2], s[2])
		})
	})
}

// binaryRow dispatches one run of n elements to the tightest loop its
// strides allow: vector⊕vector, vector⊕scalar, scalar⊕vector, or general.
// stream is the whole operation's (streamFloats): the run is a piece of
// it, often a goroutine's share, and judged alone it would not stream
// (BinaryStrided's add of 16 M floats took 7 ms in the tensor package
// where Binary takes 3.8; BenchmarkMemBoundAddStrided).
func binaryRow[T Float](op ops.Binary, n int, stream bool, d []T, do, ds int, a []T, ao, as int, b []T, bo, bs int) {
	if ds == 1 {
		dd := d[do : do+n]
		switch {
		case as == 1 && bs == 1:
			binaryVVStream(op, dd, a[ao:ao+n], b[bo:bo+n], stream)
			return
		case as == 1 && bs == 0:
			binaryVSStream(op, dd, a[ao:ao+n], b[bo], stream)
			return
		case as == 0 && bs == 1:
			binarySV(op, dd, a[ao], b[bo:bo+n])
			return
		}
	}
	// Any other layout: gather stripes of a and b into contiguous
	// buffers and run the vector loop on them.
	var ab, bb [stripe]T
	for p := 0; p < n; p += stripe {
		m := min(stripe, n-p)
		x, y := ab[:m], bb[:m]
		for i := range x {
			x[i] = a[ao+(p+i)*as]
			y[i] = b[bo+(p+i)*bs]
		}
		binaryVV(op, x, x, y)
		for i, v := range x {
			d[do+(p+i)*ds] = v
		}
	}
}

// streamFloats is the length from which an elementwise result of float32
// is written with non-temporal stores: 16 MiB of results, more than a
// core's share of the cache holds, so what reads them next would not have
// found them there anyway, and the stores need not read d's lines in
// first (a quarter of an add's traffic). The whole operation's length
// decides, not a goroutine's part of it.
const streamFloats = 4 << 20

// binaryVV is the contiguous kernel.
func binaryVV[T Float](op ops.Binary, d, a, b []T) {
	binaryVVStream(op, d, a, b, len(d) >= streamFloats)
}

// binaryVVStream is binaryVV with float32 arithmetic (Add, Sub, Mul, Div)
// in AVX where the CPU has it, streaming its stores when stream is set;
// the rest in binaryVVGo.
func binaryVVStream[T Float](op ops.Binary, d, a, b []T, stream bool) {
	a, b = a[:len(d)], b[:len(d)]
	if u, ok := op.Derivative(); ok {
		backwardLoop(unaryImplOf(u), d, a, b, stream)
		return
	}
	if op.Arithmetic() && useAVX && len(d) >= 32 {
		if d32, ok := any(d).([]float32); ok {
			lo, hi := vectorSpan(d32, stream)
			arithVVAVX(int(op), &d32[lo], &any(a).([]float32)[lo], &any(b).([]float32)[lo], hi-lo, boolInt(stream))
			binaryVVGo(op, d[:lo], a[:lo], b[:lo])
			binaryVVGo(op, d[hi:], a[hi:], b[hi:])
			return
		}
	}
	binaryVVGo(op, d, a, b)
}

// backwardChunk is how many elements a backward op (GeluBackward, …)
// takes at a time: the derivative of b's chunk goes to a buffer, and is
// multiplied by a's chunk while both are in the core's cache. The op reads
// a and b and writes d once, where a derivative op and then a Mul would
// write and read a whole temporary again; and d may be a or b itself,
// since each chunk of both is read before d's is written. 4096 (16 KiB
// of float32, half a first-level cache) rather than 512: a derivative
// that takes its chunk apart (geluGradSplit) has work of its own per call,
// and GELU's backward on 16 M normal values took 34 ms on one AVX2 core
// with chunks of 512, 30 with 4096 (the other backward ops 0-10 % less;
// BenchmarkMemBoundGeluBackward).
const backwardChunk = 4096

// backwardLoop computes d = a·f′(b), f′ being im; the same roundings as
// the Unary op into a temporary and a Mul (f′(b) rounded to T, then the
// product). The buffer is as long as a chunk, or d where d is shorter:
// it goes to the heap (unaryContig calls through a function value).
func backwardLoop[T Float](im *unaryImpl, d, a, b []T, stream bool) {
	buf := make([]T, min(len(d), backwardChunk))
	for lo := 0; lo < len(d); lo += backwardChunk {
		hi := min(lo+backwardChunk, len(d))
		f := buf[:hi-lo]
		unaryContig(im, f, b[lo:hi])
		binaryVVStream(ops.Mul, d[lo:hi], a[lo:hi], f, stream)
	}
}

// vectorSpan is the part [lo, hi) of d (at least 32 long) the vector
// loops take: whole steps of 32 lanes, starting where d is 32-byte aligned
// when they stream (non-temporal stores need it). The Go loop does the
// ends.
func vectorSpan(d []float32, stream bool) (lo, hi int) {
	if stream {
		lo = int((32-uintptr(unsafe.Pointer(&d[0]))&31)&31) / 4
	}
	return lo, lo + (len(d)-lo)&^31
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// binaryVVGo is the contiguous kernel in Go. Each case is its own loop
// with the op inlined and bounds checks hoisted by the re-slicing, so the
// loop body is a load/op/store with no branches; the switch runs once per
// call.
func binaryVVGo[T Float](op ops.Binary, d, a, b []T) {
	a, b = a[:len(d)], b[:len(d)]
	switch op {
	case ops.Add:
		for i := range d {
			d[i] = a[i] + b[i]
		}
	case ops.Sub:
		for i := range d {
			d[i] = a[i] - b[i]
		}
	case ops.Mul:
		for i := range d {
			d[i] = a[i] * b[i]
		}
	case ops.Div:
		for i := range d {
			d[i] = a[i] / b[i]
		}
	case ops.Max:
		for i := range d {
			d[i] = max(a[i], b[i])
		}
	case ops.Min:
		for i := range d {
			d[i] = min(a[i], b[i])
		}
	case ops.Pow:
		for i := range d {
			d[i] = T(math.Pow(float64(a[i]), float64(b[i])))
		}
	case ops.Greater:
		for i := range d {
			d[i] = b2f[T](a[i] > b[i])
		}
	case ops.Less:
		for i := range d {
			d[i] = b2f[T](a[i] < b[i])
		}
	case ops.Equal:
		for i := range d {
			d[i] = b2f[T](a[i] == b[i])
		}
	case ops.ThresholdBackward:
		for i := range d {
			v := a[i]
			if b[i] <= 0 {
				v = 0
			}
			d[i] = v
		}
	case ops.GreaterEqual:
		for i := range d {
			d[i] = b2f[T](a[i] >= b[i])
		}
	case ops.LessEqual:
		for i := range d {
			d[i] = b2f[T](a[i] <= b[i])
		}
	default:
		panic("kernels: unknown " + op.String())
	}
}

// binaryVSStream is the vector⊕scalar kernel, in AVX where binaryVVStream
// runs in AVX, streaming its stores when stream is set.
func binaryVSStream[T Float](op ops.Binary, d, a []T, s T, stream bool) {
	a = a[:len(d)]
	if op.Arithmetic() && useAVX && len(d) >= 32 {
		if d32, ok := any(d).([]float32); ok {
			lo, hi := vectorSpan(d32, stream)
			arithVSAVX(int(op), &d32[lo], &any(a).([]float32)[lo], float32(s), hi-lo, boolInt(stream))
			binaryVSGo(op, d[:lo], a[:lo], s)
			binaryVSGo(op, d[hi:], a[hi:], s)
			return
		}
	}
	binaryVSGo(op, d, a, s)
}

func binaryVSGo[T Float](op ops.Binary, d, a []T, s T) {
	a = a[:len(d)]
	switch op {
	case ops.Add:
		for i := range d {
			d[i] = a[i] + s
		}
	case ops.Sub:
		for i := range d {
			d[i] = a[i] - s
		}
	case ops.Mul:
		for i := range d {
			d[i] = a[i] * s
		}
	case ops.Div:
		for i := range d {
			d[i] = a[i] / s
		}
	case ops.Max:
		for i := range d {
			d[i] = max(a[i], s)
		}
	case ops.Min:
		for i := range d {
			d[i] = min(a[i], s)
		}
	default:
		binaryVV(op, d, a, broadcastRow(s, len(d)))
	}
}

// broadcastRow is n copies of s (for the ops without a vector⊕scalar
// loop of their own; they call math.Pow or compare, which dominates).
func broadcastRow[T Float](s T, n int) []T {
	r := make([]T, n)
	for i := range r {
		r[i] = s
	}
	return r
}

func binarySV[T Float](op ops.Binary, d []T, s T, b []T) {
	b = b[:len(d)]
	switch op {
	case ops.Add:
		for i := range d {
			d[i] = s + b[i]
		}
	case ops.Sub:
		for i := range d {
			d[i] = s - b[i]
		}
	case ops.Mul:
		for i := range d {
			d[i] = s * b[i]
		}
	case ops.Div:
		for i := range d {
			d[i] = s / b[i]
		}
	default:
		binaryVV(op, d, broadcastRow(s, len(d)), b)
	}
}
