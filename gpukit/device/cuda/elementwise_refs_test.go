//go:build cuda || nvrtc

package cuda

// Inputs and references of the elementwise tests, shared by the emulation
// (elementwise_emu_test.go, nvrtc) and the GPU tests (compute_test.go,
// cuda): gpukit's CPU is the reference, through kernels.ApplyUnary,
// kernels.ApplyBinary and cpucompute's Load and Store (which use gpukit/kernels'
// float16 and bfloat16 conversions).

import (
	"encoding/binary"
	"math"
	"math/rand/v2"

	"github.com/gpumem/course/gpukit/dtypes"
	"github.com/gpumem/course/gpukit/kernels"
	"github.com/gpumem/course/gpukit/ops"
)

// specials32 are float32 inputs for every op and conversion: IEEE special
// values, float32 and float16 subnormals, float16's largest finite value
// and the values around its overflow (65520 rounds to Inf), float16 and
// bfloat16 rounding ties, and the activations' saturation points.
var specials32 = []float32{
	float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), 0, float32(math.Copysign(0, -1)),
	1, -1, 0.5, -0.5, 2, -3, 0.1, -0.7, 1e-40, -1e-40, math.SmallestNonzeroFloat32, math.MaxFloat32, -math.MaxFloat32,
	65504, -65504, 65519.99, 65520, -65520, 1e5,
	0x1p-24, 0x1p-25, 0x1.8p-25, 0x1p-14, 0x1.ffcp-15, 3e-8, -3e-8, 1 + 0x1p-11, 1 + 3*0x1p-11, 1 + 0x1p-8, 1 + 3*0x1p-8,
	10, -10, 20, -20, 88.7, -88.7, 100, -100, 1e4, -1e4, 2e4, -2e4, 0.999, 1e20, -1e20,
}

// nanPayload32 is a NaN with a payload (and negative), which copies
// between one dtype keep and conversions quieten.
var nanPayload32 = math.Float32frombits(0xffa00001)

// inputs returns the bytes of n values of dt: the specials, then random
// values (random bit patterns for the 16-bit floats, normal values for
// float32 and float64, small and large integers, bool bytes 0, 1 and 2).
func inputs(dt dtypes.Dtype, r *rand.Rand, n int) []byte {
	b := make([]byte, n*dt.Size())
	for i := range n {
		var v float64
		if i < len(specials32) {
			v = float64(specials32[i])
		} else {
			v = r.NormFloat64() * 3
		}
		switch dt {
		case dtypes.Float32:
			f := float32(v)
			if i == len(specials32) {
				f = nanPayload32
			}
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
		case dtypes.Float64:
			if i == len(specials32) {
				v = 1 + 0x1p-24 + 0x1p-50 // rounds up to float32, then ties in float16: two roundings
			}
			if i == len(specials32)+1 {
				v = math.Float64frombits(0x7ff0000000000123) // a signalling NaN
			}
			binary.LittleEndian.PutUint64(b[8*i:], math.Float64bits(v))
		case dtypes.Float16, dtypes.BFloat16:
			h := uint16(r.Uint32())
			if i < len(specials32) {
				if dt == dtypes.Float16 {
					h = dtypes.Float32ToFloat16(specials32[i])
				} else {
					h = dtypes.Float32ToBFloat16(specials32[i])
				}
			}
			binary.LittleEndian.PutUint16(b[2*i:], h)
		case dtypes.Int64, dtypes.Int32:
			x := int64(r.IntN(2001) - 1000)
			switch i % 7 {
			case 0:
				x = int64(r.Uint64())
			case 1:
				x = 1<<53 + 1 // rounds in float64
			case 2:
				x = 1<<24 + 1 // rounds in float32
			case 3:
				x = math.MinInt32
			}
			if dt == dtypes.Int64 {
				binary.LittleEndian.PutUint64(b[8*i:], uint64(x))
			} else {
				binary.LittleEndian.PutUint32(b[4*i:], uint32(x))
			}
		case dtypes.Bool:
			b[i] = byte(i % 3)
		}
	}
	return b
}

// sameElement reports whether got equals want: the same bits, or both NaN
// for floats.
func sameElement(dt dtypes.Dtype, got, want []byte, i int) bool {
	if dt == dtypes.Float16 || dt == dtypes.BFloat16 || dt == dtypes.Float32 || dt == dtypes.Float64 {
		g, w := dtypes.Load(dt, got, i), dtypes.Load(dt, want, i)
		if g != g && w != w {
			return true
		}
	}
	sz := dt.Size()
	return string(got[i*sz:(i+1)*sz]) == string(want[i*sz:(i+1)*sz])
}

// closeElement reports whether got is within tol of want, relative to
// max(|want|, floor): NaN and ±Inf must match exactly.
func closeElement(dt dtypes.Dtype, got, want []byte, i int, tol, floor float64) bool {
	if sameElement(dt, got, want, i) {
		return true
	}
	g, w := dtypes.Load(dt, got, i), dtypes.Load(dt, want, i)
	if g != g || w != w || math.IsInf(g, 0) || math.IsInf(w, 0) {
		return false
	}
	return math.Abs(g-w) <= tol*max(math.Abs(w), floor)
}

// exactUnary are the ops that IEEE arithmetic rounds exactly (one
// correctly rounded operation, or none), so the device must give the CPU's
// bits.
var exactUnary = map[ops.Unary]bool{
	ops.Identity: true, ops.Neg: true, ops.Abs: true, ops.Square: true, ops.Sqrt: true,
	ops.Reciprocal: true, ops.Relu: true, ops.SigmoidDeriv: true, ops.TanhDeriv: true, ops.Sign: true,
}

// tolerance is the relative tolerance of a transcendental op in dt and
// the magnitude below which it is absolute: a few ulp of the type the op
// computes in, plus half an ulp of a 16-bit result (the CPU's and the
// device's float32 may round to neighbouring halves).
func tolerance(dt dtypes.Dtype) (tol, floor float64) {
	switch dt {
	case dtypes.Float64:
		return 1e-13, 1e-300
	case dtypes.Float16:
		return 0x1p-10, 0x1p-14
	case dtypes.BFloat16:
		return 0x1p-7, 1e-37
	}
	return 8e-7, 1e-37 // float32 and the integers (computed in float64, then truncated)
}

// unaryRef is kernels.ApplyUnary as cpucompute applies it to dt: float32
// for float32 and the 16-bit floats, float64 for the others.
func unaryRef(op ops.Unary, dt dtypes.Dtype, src []byte, n int) []byte {
	want := make([]byte, len(src))
	for i := range n {
		x := dtypes.Load(dt, src, i)
		var r float64
		if dt == dtypes.Float32 || dt == dtypes.Float16 || dt == dtypes.BFloat16 {
			r = float64(kernels.ApplyUnary(op, float32(x)))
		} else {
			r = kernels.ApplyUnary(op, x)
		}
		dtypes.Store(dt, want, i, r)
	}
	return want
}

// binaryRef is kernels.ApplyBinary as cpucompute applies it to operands of dt,
// in the type it computes dt in.
func binaryRef(op ops.Binary, dt dtypes.Dtype, x, y float64) float64 {
	if dt == dtypes.Float32 || dt == dtypes.Float16 || dt == dtypes.BFloat16 {
		return float64(kernels.ApplyBinary(op, float32(x), float32(y)))
	}
	return kernels.ApplyBinary(op, x, y)
}

// unaryMatches reports whether got[i], op(x) computed by the device in
// dt, is acceptable against want[i], the CPU's.
func unaryMatches(op ops.Unary, dt dtypes.Dtype, got, want []byte, i int, x float64) bool {
	if exactUnary[op] {
		return sameElement(dt, got, want, i)
	}
	tol, floor := unaryTolerance(op, dt, x)
	return closeElement(dt, got, want, i, tol, floor)
}

// unaryTolerance is tolerance for the transcendental op at x.
func unaryTolerance(op ops.Unary, dt dtypes.Dtype, x float64) (tol, floor float64) {
	tol, floor = tolerance(dt)
	gelu := op == ops.Gelu || op == ops.GeluDeriv || op == ops.GeluTanhApprox || op == ops.GeluTanhDeriv
	if gelu && dt == dtypes.Float32 {
		// e^(-x²/2) and e^(2u) of an argument rounded to float32 are off
		// by |x|² and |2u| times its rounding: the CPU's and the device's
		// formulas round differently in the tail.
		tol *= 1 + x*x
		if op == ops.GeluDeriv || op == ops.GeluTanhDeriv {
			floor = 0.25 // Φ + x·φ cancels near x = −0.75: the terms' size
		}
	}
	return tol, floor
}

// binaryMatches reports whether got[i], op(x, y) computed by the device
// on operands of dtype in and stored as out, equals the CPU's, which it
// returns.
func binaryMatches(op ops.Binary, in, out dtypes.Dtype, got []byte, i int, x, y float64) (bool, float64) {
	rv := binaryRef(op, in, x, y)
	want := make([]byte, len(got))
	dtypes.Store(out, want, i, rv)
	if u, ok := op.Derivative(); ok && !exactUnary[u] {
		// x times a transcendental derivative at y: its tolerance, scaled
		// by the gradient x, down to out's own floor: with x subnormal, an
		// ulp between the two derivatives moves the product by a whole
		// step of the subnormals (GeluBackward(2⁻¹⁴⁹, 5.96·10⁻⁸) is 2⁻¹⁴⁹
		// on the CPU, whose GELU' there is 0.50000006, correctly rounded,
		// and 0 from the device's formula, whose GELU' rounds to ½).
		tol, floor := unaryTolerance(u, in, y)
		_, outFloor := tolerance(out)
		return closeElement(out, got, want, i, tol, max(floor*math.Abs(x), outFloor)), rv
	}
	if op != ops.Pow {
		return sameElement(out, got, want, i), rv
	}
	// Go's math.Pow is off by up to ~1e-12 for large exponents; glibc's
	// pow (and the device's) by an ulp. glibc's pow(sNaN, 0) and
	// pow(1, sNaN) are NaN where Go's (and IEEE's for a quiet NaN) are 1.
	tol, floor := tolerance(out)
	return closeElement(out, got, want, i, max(tol, 1e-11), floor) || (x != x || y != y) && rv == 1, rv
}
