//go:build nvrtc

package cuda

// The elementwise kernels and the reductions of 16-bit floats run in the
// CPU emulation (emu_test.go) against gpukit's CPU: kernels.ApplyUnary and
// kernels.ApplyBinary for the ops, cpucompute's Load and Store (which use
// gpukit/kernels' float16 and bfloat16 conversions) for every dtype
// conversion. Inputs are special values (NaN, ±Inf, ±0, subnormals,
// float16's overflow and underflow boundaries and rounding ties) and
// random bit patterns. The ops that IEEE arithmetic rounds exactly are
// compared bit for bit (NaN with NaN); the transcendental ones, where the
// host's math library stands in for the device's and gpukit's own vector
// math for the CPU's, within a few units in the last place.

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gpumem/course/gpukit/device/backend"
	"github.com/gpumem/course/gpukit/dtypes"
	"github.com/gpumem/course/gpukit/layout"
	"github.com/gpumem/course/gpukit/ops"
)

// dense is a contiguous operand at emulated buffer k.
func dense(k int, dt dtypes.Dtype, shape ...int) backend.Strided {
	return backend.Strided{Addr: emuAddr(k), Dtype: dt, Strides: layout.ContiguousStrides(shape)}
}

func TestEmulatedUnary(t *testing.T) {
	t.Parallel()
	const n = 300
	// bfloat16 and int32 run the same code as float16 and int64 apart from
	// their loads and stores, which TestEmulatedConvert checks.
	for _, dt := range []dtypes.Dtype{dtypes.Float32, dtypes.Float64, dtypes.Float16, dtypes.Int64} {
		t.Run(dt.String(), func(t *testing.T) {
			r := rand.New(rand.NewPCG(5, uint64(dt)))
			src := inputs(dt, r, n)
			for op := range ops.Unary(len(unaryExpr)) {
				p, err := planUnary("emu", op, []int{n}, dense(0, dt, n), dense(1, dt, n))
				if err != nil {
					t.Fatal(err)
				}
				got := emulate(t, capGrid(p, 1), make([]byte, len(src)), src)[0]
				want := unaryRef(op, dt, src, n)
				for i := range n {
					x := dtypes.Load(dt, src, i)
					if !unaryMatches(op, dt, got, want, i, x) {
						t.Errorf("%v(%v) = %v, want %v", op, x, dtypes.Load(dt, got, i), dtypes.Load(dt, want, i))
					}
				}
			}
		})
	}
}

// TestEmulatedBinary applies every binary op to every pair of the inputs
// (a column broadcast against a row), to a scalar on either side, and the
// comparisons into a Bool dst.
func TestEmulatedBinary(t *testing.T) {
	t.Parallel()
	const n = 64
	for _, c := range []struct{ in, out dtypes.Dtype }{
		{dtypes.Float32, dtypes.Float32}, {dtypes.Float64, dtypes.Float64}, {dtypes.BFloat16, dtypes.BFloat16},
		{dtypes.Float16, dtypes.Bool}, {dtypes.Int32, dtypes.Bool},
	} {
		t.Run(fmt.Sprintf("%v_%v", c.in, c.out), func(t *testing.T) {
			r := rand.New(rand.NewPCG(6, uint64(c.in)))
			src := inputs(c.in, r, n)
			const scalar = 0.1 // not a float32: rounded to TC first
			for op := range ops.Binary(len(binaryExpr)) {
				if c.out == dtypes.Bool && !op.Comparison() {
					continue
				}
				shape := []int{n, n}
				a := backend.Strided{Addr: emuAddr(1), Dtype: c.in, Strides: []int{1, 0}}
				b := backend.Strided{Addr: emuAddr(2), Dtype: c.in, Strides: []int{0, 1}}
				p, err := planBinary("emu", op, shape, dense(0, c.out, n, n), a, &b, 0, false)
				if err != nil {
					t.Fatal(err)
				}
				got := emulate(t, capGrid(p, 3), make([]byte, n*n*c.out.Size()), src, src)[0]
				check := func(what string, got []byte, x, y float64, i int) {
					t.Helper()
					if ok, want := binaryMatches(op, c.in, c.out, got, i, x, y); !ok {
						t.Errorf("%s: %v(%v, %v) = %v, want %v", what, op, x, y, dtypes.Load(c.out, got, i), want)
					}
				}
				for i := range n {
					for j := range n {
						check("tensors", got, dtypes.Load(c.in, src, i), dtypes.Load(c.in, src, j), i*n+j)
					}
				}
				for _, first := range []bool{false, true} {
					p, err := planBinary("emu", op, []int{n}, dense(0, c.out, n), dense(1, c.in, n), nil, scalar, first)
					if err != nil {
						t.Fatal(err)
					}
					got := emulate(t, p, make([]byte, n*c.out.Size()), src)[0]
					for i := range n {
						x, y := dtypes.Load(c.in, src, i), float64(scalar)
						if op.Comparison() {
							y = dtypes.Round(c.in, y) // PyTorch's rule for a number
						}
						if first {
							x, y = y, x
						}
						check(fmt.Sprintf("scalar first %v", first), got, x, y, i)
					}
				}
			}
		})
	}
}

// TestEmulatedConvert copies every dtype into every other (and fills
// every dtype) and compares with cpucompute's Store(Load(...)); a copy
// within one dtype moves the bits.
func TestEmulatedConvert(t *testing.T) {
	t.Parallel()
	const n = 200
	fills := []float64{0, math.Copysign(0, -1), 1, -2.5, 65520, 0x1p-25, 0x1.8p-25, 1 + 0x1p-24 + 0x1p-50, math.NaN(), math.Inf(-1), 1e-310, 3e9}
	for _, out := range allDtypes {
		t.Run(out.String(), func(t *testing.T) {
			for _, in := range allDtypes {
				r := rand.New(rand.NewPCG(7, uint64(in)))
				src := inputs(in, r, n)
				shape := []int{n / 2, 2}
				s := backend.Strided{Addr: emuAddr(1), Dtype: in, Strides: []int{1, n / 2}} // transposed
				p, err := planCopy("emu", shape, dense(0, out, shape...), s)
				if err != nil {
					t.Fatal(err)
				}
				got := emulate(t, capGrid(p, 1), make([]byte, n*out.Size()), src)[0]
				want := make([]byte, len(got))
				for i := range n / 2 {
					for j := range 2 {
						k, at := i*2+j, j*(n/2)+i
						if in == out {
							copy(want[k*out.Size():], src[at*in.Size():(at+1)*in.Size()])
							continue
						}
						dtypes.Store(out, want, k, dtypes.Load(in, src, at))
					}
				}
				for k := range n {
					// Within one dtype the bits move; across dtypes a NaN
					// may come out with another payload (the CPU's float64
					// step quietens a signalling one).
					if in == out && string(got[k*out.Size():(k+1)*out.Size()]) != string(want[k*out.Size():(k+1)*out.Size()]) ||
						in != out && !sameElement(out, got, want, k) {
						t.Errorf("copy %v → %v: element %d = %v, want %v (bits %x, want %x)", in, out, k,
							dtypes.Load(out, got, k), dtypes.Load(out, want, k), got[k*out.Size():(k+1)*out.Size()], want[k*out.Size():(k+1)*out.Size()])
					}
				}
			}
			for _, v := range fills {
				p, err := planFill("emu", []int{3}, dense(0, out, 3), v)
				if err != nil {
					t.Fatal(err)
				}
				got := emulate(t, p, make([]byte, 3*out.Size()))[0]
				want := make([]byte, len(got))
				for i := range 3 {
					dtypes.Store(out, want, i, v)
				}
				if string(got) != string(want) {
					t.Errorf("fill %v with %v: %x, want %x", out, v, got, want)
				}
			}
		})
	}
}

// TestEmulatedWhere selects between a broadcast row and a broadcast column
// by a bool mask with bytes other than 0 and 1.
func TestEmulatedWhere(t *testing.T) {
	t.Parallel()
	const rows, cols = 5, 7
	for _, dt := range []dtypes.Dtype{dtypes.Float16, dtypes.Int64} {
		t.Run(dt.String(), func(t *testing.T) {
			r := rand.New(rand.NewPCG(8, uint64(dt)))
			cond := inputs(dtypes.Bool, r, rows*cols)
			a, b := inputs(dt, r, cols), inputs(dt, r, rows)
			shape := []int{rows, cols}
			p, err := planWhere("emu", shape, dense(0, dt, rows, cols), dense(1, dtypes.Bool, rows, cols),
				backend.Strided{Addr: emuAddr(2), Dtype: dt, Strides: []int{0, 1}},
				backend.Strided{Addr: emuAddr(3), Dtype: dt, Strides: []int{1, 0}})
			if err != nil {
				t.Fatal(err)
			}
			got := emulate(t, p, make([]byte, rows*cols*dt.Size()), cond, a, b)[0]
			sz := dt.Size()
			for i := range rows {
				for j := range cols {
					want := b[i*sz : (i+1)*sz]
					if cond[i*cols+j] != 0 {
						want = a[j*sz : (j+1)*sz]
					}
					if k := i*cols + j; string(got[k*sz:(k+1)*sz]) != string(want) {
						t.Errorf("[%d, %d] (cond %d) = %x, want %x", i, j, cond[k], got[k*sz:(k+1)*sz], want)
					}
				}
			}
		})
	}
}

func TestEmulatedInRange(t *testing.T) {
	t.Parallel()
	const n = 120
	for _, dt := range []dtypes.Dtype{dtypes.Float32, dtypes.BFloat16} {
		t.Run(dt.String(), func(t *testing.T) {
			src := inputs(dt, rand.New(rand.NewPCG(9, uint64(dt))), n)
			for _, lim := range [][2]float64{{0, 1}, {-1, 0.1}, {math.Inf(-1), 2}, {-0.5, math.Inf(1)}, {math.Inf(-1), math.Inf(1)}, {3, 2}} {
				p, err := planInRange("emu", []int{n}, dense(0, dtypes.Bool, n), dense(1, dt, n), lim[0], lim[1])
				if err != nil {
					t.Fatal(err)
				}
				got := emulate(t, p, make([]byte, n), src)[0]
				lo, hi := dtypes.Round(dt, lim[0]), dtypes.Round(dt, lim[1])
				for i := range n {
					x := dtypes.Load(dt, src, i)
					want := byte(0)
					if x >= lo && x <= hi {
						want = 1
					}
					if got[i] != want {
						t.Errorf("%v in %v = %d, want %d", x, lim, got[i], want)
					}
				}
			}
		})
	}
}

// TestEmulatedHalfReductions reduces float16 lines (bfloat16 differs in
// its loads and stores alone, which TestEmulatedConvert checks) as
// cpucompute does: in float64, in order, rounded once (through float32).
// The values are random halves, whose sums float64 holds exactly, so the
// block's tree order gives the same bits.
func TestEmulatedHalfReductions(t *testing.T) {
	t.Parallel()
	const outer, n, inner = 3, 300, 4
	for _, dt := range []dtypes.Dtype{dtypes.Float16} {
		t.Run(dt.String(), func(t *testing.T) {
			r := rand.New(rand.NewPCG(10, uint64(dt)))
			src := make([]byte, outer*n*inner*2)
			for i := range outer * n * inner {
				dtypes.Store(dt, src, i, r.NormFloat64()*100)
			}
			dtypes.Store(dt, src, 7*inner, math.NaN()) // line 0, position 7: NaN wins max, min, argmax
			for _, in := range []int{1, inner} {
				lines := outer * in
				line := func(l, p int) float64 { return dtypes.Load(dt, src, ((l/in)*n+p)*in+l%in) }
				// Mean and Min share Sum's and Max's code.
				for _, op := range []ops.Reduce{ops.ReduceSum, ops.ReduceMax} {
					args := reduceArgs{dst: emuAddr(0), src: emuAddr(1), outer: outer, n: n, innerSize: int64(in)}
					p := plan[reduceArgs]{prog: program{fam: famReduce, op: uint8(op), out: dt, in: dt}, args: args,
						steps: []step{{"reduce_cols", 2}}}
					if in == 1 {
						p.steps[0].entry = "reduce_rows"
					}
					got := emulate(t, p, make([]byte, lines*2), src[:outer*n*in*2])[0]
					for l := range lines {
						acc := 0.0
						switch op {
						case ops.ReduceMax:
							acc = math.Inf(-1)
						case ops.ReduceMin:
							acc = math.Inf(1)
						}
						for p := range n {
							v := line(l, p)
							switch {
							case op == ops.ReduceSum || op == ops.ReduceMean:
								acc += v
							case v != v || acc != acc:
								acc = math.NaN()
							case op == ops.ReduceMax:
								acc = max(acc, v)
							default:
								acc = min(acc, v)
							}
						}
						if op == ops.ReduceMean {
							acc /= n
						}
						want := make([]byte, lines*2)
						dtypes.Store(dt, want, l, acc)
						if !sameElement(dt, got, want, l) {
							t.Errorf("%v inner %d line %d = %v, want %v", op, in, l, dtypes.Load(dt, got, l), acc)
						}
					}
				}
				for _, largest := range []bool{false, true} {
					args := reduceArgs{dst: emuAddr(0), index: emuAddr(2), src: emuAddr(1), outer: outer, n: n, innerSize: int64(in)}
					p := plan[reduceArgs]{prog: program{fam: famArgReduce, out: dt, in: dt}, args: args, steps: []step{{"reduce_cols", 2}}}
					if largest {
						p.prog.op = 1
					}
					if in == 1 {
						p.steps[0].entry = "reduce_rows"
					}
					res := emulate(t, p, make([]byte, lines*2), src[:outer*n*in*2], make([]byte, lines*8))
					idx := fromBytes[int64](res[2])
					for l := range lines {
						bv, bi := 0.0, -1
						for p := range n {
							v := line(l, p)
							if bi < 0 || (v != v && bv == bv) || (largest && v > bv) || (!largest && v < bv) {
								bv, bi = v, p
							}
						}
						if idx[l] != int64(bi) || dtypes.Load(dt, res[0], l) != bv && bv == bv {
							t.Errorf("arg largest=%v inner %d line %d = %d (%v), want %d (%v)", largest, in, l, idx[l], dtypes.Load(dt, res[0], l), bi, bv)
						}
					}
				}
			}
		})
	}
}
