// Package computetest is a conformance suite for backend.Compute: every
// backend that computes (the sim device, the cuda device, host memory)
// runs it, as every allocator runs gpukit/alloc/alloctest:
//
//	func TestCompute(t *testing.T) {
//		b := sim.New(0, profile)
//		missing := computetest.Run(t, b, b)
//		t.Logf("lacks %v", missing)
//	}
//
// It checks every Compute method, for every dtype the method is defined
// for, on small random inputs (contiguous, transposed and broadcast
// operands; row kernels with their optional arrays present and absent)
// against a float64 reference built on gpukit/kernels, within a tolerance
// per dtype (exact for the integer types and bool). A method that returns
// a backend.UnsupportedError is not a failure: Run logs and returns those
// (method, dtype) pairs, the list of the ops the backend lacks. Any other
// error, or a wrong value, fails the test.
package computetest

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/gpumem/course/gpukit/alloc"
	"github.com/gpumem/course/gpukit/device/backend"
	"github.com/gpumem/course/gpukit/device/cpucompute"
	"github.com/gpumem/course/gpukit/kernels"
)

// Memory is what the suite needs of the backend besides Compute: device
// memory and synchronous copies to and from it on stream 0 (the methods
// of backend.Backend; sim.Backend and cuda.Backend have them).
type Memory interface {
	Malloc(size int64) (uint64, error)
	Free(addr uint64) error
	CopyHtoD(dst uint64, src []byte, pinned bool, s alloc.Stream, async bool) error
	CopyDtoH(dst []byte, src uint64, pinned bool, s alloc.Stream, async bool) error
}

// Missing is one (method, dtype) pair a backend reported as unsupported.
type Missing struct {
	Method string
	Dtype  backend.Dtype
}

func (m Missing) String() string { return m.Method + "/" + m.Dtype.String() }

// Dtypes are the dtypes of backend.Compute, in order.
var Dtypes = []backend.Dtype{backend.Float32, backend.Float64, backend.Float16, backend.BFloat16, backend.Int64, backend.Int32, backend.Bool}

// floats are the dtypes of the row kernels (softmax, norms, losses).
var floats = []backend.Dtype{backend.Float32, backend.Float64, backend.Float16, backend.BFloat16}

const stream alloc.Stream = 0

// Run runs the suite as subtests of t on c, whose memory mem is, and
// returns the (method, dtype) pairs c lacks, sorted.
func Run(t *testing.T, c backend.Compute, mem Memory) []Missing {
	s := &suite{c: c, mem: mem, missing: map[Missing]bool{}}
	tests := []struct {
		name string
		fn   func(*testing.T, *suite)
	}{
		{"Fill", testFill}, {"Copy", testCopy}, {"Unary", testUnary}, {"Binary", testBinary},
		{"BinaryScalar", testBinaryScalar}, {"Reduce", testReduce}, {"ReduceStrided", testReduceStrided},
		{"ArgReduce", testArgReduce}, {"ArgReduceStrided", testArgReduceStrided}, {"Gemm", testGemm}, {"GemmBatched", testGemmBatched},
		{"Softmax", testSoftmax}, {"LayerNorm", testLayerNorm}, {"LayerNormBackward", testLayerNormBackward},
		{"BatchNorm", testBatchNorm}, {"BatchNormBackward", testBatchNormBackward}, {"NLLLoss", testNLLLoss},
		{"Gather", testGather}, {"ScatterAdd", testScatterAdd}, {"Adam", testAdam},
		{"CSR", testCSR},
		{"BinaryBool", testBinaryBool}, {"BinaryScalarBool", testBinaryScalarBool}, {"Where", testWhere}, {"InRange", testInRange},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s.t, s.rng = t, rand.New(rand.NewPCG(uint64(i), 7))
			defer s.freeAll()
			tc.fn(t, s)
		})
	}
	var out []Missing
	for m := range s.missing {
		out = append(out, m)
	}
	slices.SortFunc(out, func(a, b Missing) int {
		if c := strings.Compare(a.Method, b.Method); c != 0 {
			return c
		}
		return int(a.Dtype) - int(b.Dtype)
	})
	if len(out) > 0 {
		t.Logf("the backend lacks %d kernels: %v", len(out), out)
	}
	return out
}

type suite struct {
	t       *testing.T
	c       backend.Compute
	mem     Memory
	rng     *rand.Rand
	allocs  []uint64
	missing map[Missing]bool
}

// ok reports whether a call succeeded: an UnsupportedError is recorded
// as missing, any other error fails the test.
func (s *suite) ok(method string, dt backend.Dtype, err error) bool {
	s.t.Helper()
	if err == nil {
		return true
	}
	var u *backend.UnsupportedError
	if errors.As(err, &u) {
		s.missing[Missing{method, dt}] = true
		return false
	}
	s.t.Errorf("%s %s: %v", method, dt, err)
	return false
}

func (s *suite) freeAll() {
	for _, a := range s.allocs {
		if err := s.mem.Free(a); err != nil {
			s.t.Errorf("Free(%#x): %v", a, err)
		}
	}
	s.allocs = nil
}

// conv is v converted to dt and back (what storing v in dt keeps).
func conv(dt backend.Dtype, v float64) float64 {
	var b [8]byte
	cpucompute.Store(dt, b[:], 0, v)
	return cpucompute.Load(dt, b[:], 0)
}

// random returns n values representable in dt: magnitudes in [0.25, 2]
// of either sign for the float types (no values near 0, so that ratios
// and logarithms stay well conditioned), small integers for the integer
// types, 0 and 1 for bool.
func (s *suite) random(dt backend.Dtype, n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		switch dt {
		case backend.Int64, backend.Int32:
			v[i] = float64(s.rng.IntN(9) - 4)
		case backend.Bool:
			v[i] = float64(s.rng.IntN(2))
		default:
			x := 0.25 + 1.75*s.rng.Float64()
			if s.rng.IntN(2) == 0 {
				x = -x
			}
			v[i] = conv(dt, x)
		}
	}
	return v
}

// upload puts vals (converted to dt) in fresh device memory.
func (s *suite) upload(dt backend.Dtype, vals []float64) uint64 {
	s.t.Helper()
	n := max(len(vals), 1)
	addr, err := s.mem.Malloc(int64(n * dt.Size()))
	if err != nil {
		s.t.Fatalf("Malloc: %v", err)
	}
	s.allocs = append(s.allocs, addr)
	b := make([]byte, n*dt.Size())
	for i, v := range vals {
		cpucompute.Store(dt, b, i, v)
	}
	if err := s.mem.CopyHtoD(addr, b, false, stream, false); err != nil {
		s.t.Fatalf("CopyHtoD: %v", err)
	}
	return addr
}

// download reads n elements of dt at addr.
func (s *suite) download(dt backend.Dtype, addr uint64, n int) []float64 {
	s.t.Helper()
	b := make([]byte, n*dt.Size())
	if err := s.mem.CopyDtoH(b, addr, false, stream, false); err != nil {
		s.t.Fatalf("CopyDtoH: %v", err)
	}
	v := make([]float64, n)
	for i := range v {
		v[i] = cpucompute.Load(dt, b, i)
	}
	return v
}

// tol is the relative tolerance of results of dt (0: exact).
func tol(dt backend.Dtype) float64 {
	switch dt {
	case backend.Float32:
		return 2e-5
	case backend.Float64:
		return 1e-10
	case backend.Float16:
		return 2e-3
	case backend.BFloat16:
		return 1.6e-2
	}
	return 0
}

// check compares got with want (float64 results, converted to dt) at
// positions where fn is not nil; want is converted to dt first.
func (s *suite) check(what string, dt backend.Dtype, got, want []float64) {
	s.t.Helper()
	s.checkTol(what, dt, got, want, tol(dt))
}

func (s *suite) checkTol(what string, dt backend.Dtype, got, want []float64, rel float64) {
	s.t.Helper()
	if len(got) != len(want) {
		s.t.Fatalf("%s %s: %d results, want %d", what, dt, len(got), len(want))
	}
	for i := range want {
		w := conv(dt, want[i])
		g := got[i]
		if math.IsNaN(w) && math.IsNaN(g) {
			continue
		}
		if rel == 0 {
			if g != w {
				s.t.Errorf("%s %s: element %d = %v, want %v", what, dt, i, g, w)
				return
			}
			continue
		}
		if math.IsInf(w, 0) && g == w {
			continue
		}
		if !(math.Abs(g-w) <= rel*math.Max(math.Abs(w), 1)) {
			s.t.Errorf("%s %s: element %d = %v, want %v (tolerance %g)", what, dt, i, g, w, rel)
			return
		}
	}
}

// view is a strided operand on the host side: its values in a buffer and
// its strides over the call's shape.
type view struct {
	vals    []float64
	strides []int
}

// at is the value at the multi-index of flat row-major position k of shape.
func (v view) at(shape []int, k int) float64 {
	off := 0
	for d := len(shape) - 1; d >= 0; d-- {
		off += (k % shape[d]) * v.strides[d]
		k /= shape[d]
	}
	return v.vals[off]
}

func numel(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

// layouts are the ways an input of shape [3, 4] is laid out in the tests:
// contiguous, transposed (a [4, 3] buffer read column-wise) and broadcast
// along the first dimension (a [4] buffer).
var layouts = []struct {
	name    string
	size    int
	strides []int
}{
	{"contiguous", 12, []int{4, 1}},
	{"transposed", 12, []int{1, 3}},
	{"broadcast", 4, []int{0, 1}},
}

var shape34 = []int{3, 4}

// input makes a random operand of dt with a layout of layouts.
func (s *suite) input(dt backend.Dtype, layout int) (backend.Strided, view) {
	l := layouts[layout]
	vals := s.random(dt, l.size)
	return backend.Strided{Addr: s.upload(dt, vals), Dtype: dt, Strides: l.strides}, view{vals, l.strides}
}

// output is a fresh contiguous [3, 4] operand of dt, or a transposed one.
func (s *suite) output(dt backend.Dtype, transposed bool) backend.Strided {
	st := []int{4, 1}
	if transposed {
		st = []int{1, 3}
	}
	return backend.Strided{Addr: s.upload(dt, make([]float64, 12)), Dtype: dt, Strides: st}
}

// read returns the [3, 4] values of an output operand in row-major order.
func (s *suite) read(o backend.Strided) []float64 {
	all := s.download(o.Dtype, o.Addr, 12)
	out := make([]float64, 12)
	for k := range out {
		out[k] = view{all, o.Strides}.at(shape34, k)
	}
	return out
}

func testFill(t *testing.T, s *suite) {
	for _, dt := range Dtypes {
		for _, tr := range []bool{false, true} {
			d := s.output(dt, tr)
			if !s.ok("Fill", dt, s.c.Fill(stream, shape34, d, 1.5)) {
				continue
			}
			want := make([]float64, 12)
			for i := range want {
				want[i] = 1.5
			}
			s.check(fmt.Sprintf("Fill transposed=%v", tr), dt, s.read(d), want)
		}
	}
}

func testCopy(t *testing.T, s *suite) {
	for _, dt := range Dtypes {
		for _, src := range Dtypes {
			for l := range layouts {
				if src != dt && l != 1 {
					continue // conversions: the transposed layout only
				}
				a, av := s.input(src, l)
				d := s.output(dt, false)
				if !s.ok("Copy", dt, s.c.Copy(stream, shape34, d, a)) {
					continue
				}
				want := make([]float64, 12)
				for k := range want {
					want[k] = av.at(shape34, k)
				}
				s.check(fmt.Sprintf("Copy from %s %s", src, layouts[l].name), dt, s.read(d), want)
			}
		}
	}
}

// ref1 is the float64 reference of a unary op.
func ref1(op kernels.UnaryOp, x float64) float64 { return kernels.ApplyUnary(op, x) }

func testUnary(t *testing.T, s *suite) {
	for _, dt := range Dtypes {
		for op := kernels.Identity; op <= kernels.Sign; op++ {
			for l := range layouts {
				a, av := s.input(dt, l)
				d := s.output(dt, l == 1)
				if !s.ok("Unary", dt, s.c.Unary(stream, op, shape34, d, a)) {
					continue
				}
				want := make([]float64, 12)
				for k := range want {
					want[k] = ref1(op, av.at(shape34, k))
				}
				s.check(fmt.Sprintf("%v %s", op, layouts[l].name), dt, s.read(d), want)
			}
		}
	}
}

func testBinary(t *testing.T, s *suite) {
	for _, dt := range Dtypes {
		for op := kernels.Add; op <= kernels.LessEqual; op++ {
			for la := range layouts {
				lb := (la + 2) % len(layouts)
				a, av := s.input(dt, la)
				b, bv := s.input(dt, lb)
				d := s.output(dt, false)
				if !s.ok("Binary", dt, s.c.Binary(stream, op, shape34, d, a, b)) {
					continue
				}
				want := make([]float64, 12)
				for k := range want {
					want[k] = kernels.Apply(op, av.at(shape34, k), bv.at(shape34, k))
				}
				s.check(fmt.Sprintf("%v %s with %s", op, layouts[la].name, layouts[lb].name), dt, s.read(d), want)
			}
		}
	}
}

func testBinaryScalar(t *testing.T, s *suite) {
	for _, dt := range Dtypes {
		for op := kernels.Add; op <= kernels.LessEqual; op++ {
			for _, first := range []bool{false, true} {
				a, av := s.input(dt, 1)
				d := s.output(dt, false)
				sc := 1.5 // the integer types get an integer scalar
				if tol(dt) == 0 {
					sc = 2
				}
				if !s.ok("BinaryScalar", dt, s.c.BinaryScalar(stream, op, shape34, d, a, sc, first)) {
					continue
				}
				want := make([]float64, 12)
				for k := range want {
					x, y := av.at(shape34, k), sc
					if first {
						x, y = y, x
					}
					want[k] = kernels.Apply(op, x, y)
				}
				s.check(fmt.Sprintf("%v scalarFirst=%v", op, first), dt, s.read(d), want)
			}
		}
	}
}

func testReduce(t *testing.T, s *suite) {
	const outer, n, inner = 2, 5, 3
	for _, dt := range Dtypes {
		for op := kernels.ReduceSum; op <= kernels.ReduceMin; op++ {
			src := s.random(dt, outer*n*inner)
			a := s.upload(dt, src)
			d := s.upload(dt, make([]float64, outer*inner))
			if !s.ok("Reduce", dt, s.c.Reduce(stream, op, dt, d, a, outer, n, inner)) {
				continue
			}
			want := make([]float64, outer*inner)
			for o := range outer {
				for i := range inner {
					line := make([]float64, n)
					for j := range n {
						line[j] = src[(o*n+j)*inner+i]
					}
					want[o*inner+i] = reduceRef(op, line)
				}
			}
			s.check(op.String(), dt, s.download(dt, d, outer*inner), want)
		}
	}
}

func reduceRef(op kernels.ReduceOp, line []float64) float64 {
	var r float64
	switch op {
	case kernels.ReduceSum, kernels.ReduceMean:
		for _, v := range line {
			r += v
		}
		if op == kernels.ReduceMean {
			r /= float64(len(line))
		}
	case kernels.ReduceMax:
		r = slices.Max(line)
	case kernels.ReduceMin:
		r = slices.Min(line)
	}
	return r
}

func testReduceStrided(t *testing.T, s *suite) {
	for _, dt := range Dtypes {
		for _, op := range []kernels.ReduceOp{kernels.ReduceSum, kernels.ReduceMean} {
			for _, dim := range []int{0, 1} {
				a, av := s.input(dt, 1) // transposed
				out := dt
				if dt == backend.Bool || dt == backend.Int32 {
					out = backend.Int64 // sums of bool and int32 go to int64, as in PyTorch
				}
				// dst: shape [3, 4] with the reduced dimension of stride 0.
				kept := 4
				st := []int{0, 1}
				if dim == 1 {
					kept, st = 3, []int{1, 0}
				}
				d := backend.Strided{Addr: s.upload(out, make([]float64, kept)), Dtype: out, Strides: st}
				if !s.ok("ReduceStrided", dt, s.c.ReduceStrided(stream, op, shape34, d, a)) {
					continue
				}
				want := make([]float64, kept)
				for k := range 12 {
					i, j := k/4, k%4
					p := j
					if dim == 1 {
						p = i
					}
					want[p] += av.at(shape34, k)
				}
				if op == kernels.ReduceMean {
					for i := range want {
						want[i] /= float64(12 / kept)
					}
				}
				s.check(fmt.Sprintf("%v over dim %d into %s", op, dim, out), out, s.download(out, d.Addr, kept), want)
			}
		}
	}
}

func testArgReduce(t *testing.T, s *suite) {
	const outer, n, inner = 3, 4, 2
	for _, dt := range Dtypes {
		for _, largest := range []bool{true, false} {
			src := s.random(dt, outer*n*inner)
			src[inner] = src[0] // a tie in the first line: the lower index wins
			a := s.upload(dt, src)
			idx := s.upload(backend.Int64, make([]float64, outer*inner))
			val := s.upload(dt, make([]float64, outer*inner))
			if !s.ok("ArgReduce", dt, s.c.ArgReduce(stream, largest, dt, idx, val, a, outer, n, inner)) {
				continue
			}
			wi, wv := make([]float64, outer*inner), make([]float64, outer*inner)
			for o := range outer {
				for i := range inner {
					bi := 0
					for p := 1; p < n; p++ {
						v, b := src[(o*n+p)*inner+i], src[(o*n+bi)*inner+i]
						if (largest && v > b) || (!largest && v < b) {
							bi = p
						}
					}
					wi[o*inner+i], wv[o*inner+i] = float64(bi), src[(o*n+bi)*inner+i]
				}
			}
			what := fmt.Sprintf("ArgReduce largest=%v", largest)
			s.check(what+" index", backend.Int64, s.download(backend.Int64, idx, outer*inner), wi)
			s.check(what+" value", dt, s.download(dt, val, outer*inner), wv)
		}
	}
}

func testArgReduceStrided(t *testing.T, s *suite) {
	for _, dt := range Dtypes {
		for _, largest := range []bool{true, false} {
			for _, dim := range []int{0, 1} {
				a, av := s.input(dt, 1) // transposed
				kept, st := 4, []int{0, 1}
				if dim == 1 {
					kept, st = 3, []int{1, 0}
				}
				idx := backend.Strided{Addr: s.upload(backend.Int64, make([]float64, kept)), Dtype: backend.Int64, Strides: st}
				val := backend.Strided{Addr: s.upload(dt, make([]float64, kept)), Dtype: dt, Strides: st}
				if !s.ok("ArgReduceStrided", dt, s.c.ArgReduceStrided(stream, largest, shape34, dim, idx, val, a)) {
					continue
				}
				wi, wv := make([]float64, kept), make([]float64, kept)
				for p := range kept {
					bi, bv := -1, 0.0
					for q := range shape34[dim] {
						k := p*4 + q // dim 1: row p, column q
						if dim == 0 {
							k = q*4 + p
						}
						v := av.at(shape34, k)
						if bi < 0 || (largest && v > bv) || (!largest && v < bv) {
							bi, bv = q, v
						}
					}
					wi[p], wv[p] = float64(bi), bv
				}
				what := fmt.Sprintf("ArgReduceStrided largest=%v dim %d", largest, dim)
				s.check(what+" index", backend.Int64, s.download(backend.Int64, idx.Addr, kept), wi)
				s.check(what+" value", dt, s.download(dt, val.Addr, kept), wv)
			}
		}
	}
}

// matRef is alpha·op(A)·op(B) + beta·C in float64 (row-major, leading
// dimensions as stored).
func matRef(ta, tb bool, m, n, k int, alpha float64, a []float64, lda int, b []float64, ldb int, beta float64, c []float64, ldc int) []float64 {
	out := make([]float64, m*n)
	for i := range m {
		for j := range n {
			var sum float64
			for p := range k {
				var x, y float64
				if ta {
					x = a[p*lda+i]
				} else {
					x = a[i*lda+p]
				}
				if tb {
					y = b[j*ldb+p]
				} else {
					y = b[p*ldb+j]
				}
				sum += x * y
			}
			out[i*n+j] = alpha*sum + beta*c[i*ldc+j]
		}
	}
	return out
}

func testGemm(t *testing.T, s *suite) {
	const m, n, k = 3, 4, 5
	for _, dt := range Dtypes {
		for _, ta := range []bool{false, true} {
			for _, tb := range []bool{false, true} {
				for _, ab := range [][2]float64{{1, 0}, {0.5, 2}} {
					if ab[1] != 0 && dt != backend.Float32 && dt != backend.Float64 {
						continue // alpha and beta: the float types of BLAS
					}
					lda, ldb, ldc := k+1, n+2, n+1 // padded rows
					if ta {
						lda = m + 1
					}
					if tb {
						ldb = k + 2
					}
					ra, rb := m, k
					if ta {
						ra = k
					}
					if tb {
						rb = n
					}
					av, bv, cv := s.random(dt, ra*lda), s.random(dt, rb*ldb), s.random(dt, m*ldc)
					a, b, c := s.upload(dt, av), s.upload(dt, bv), s.upload(dt, cv)
					if !s.ok("Gemm", dt, s.c.Gemm(stream, dt, ta, tb, m, n, k, ab[0], a, lda, b, ldb, ab[1], c, ldc)) {
						continue
					}
					want := matRef(ta, tb, m, n, k, ab[0], av, lda, bv, ldb, ab[1], cv, ldc)
					all := s.download(dt, c, m*ldc)
					got := make([]float64, m*n)
					for i := range m {
						copy(got[i*n:(i+1)*n], all[i*ldc:])
						for j := n; j < ldc; j++ {
							if all[i*ldc+j] != cv[i*ldc+j] {
								t.Errorf("Gemm %s: wrote C's padding at row %d", dt, i)
							}
						}
					}
					s.check(fmt.Sprintf("Gemm transA=%v transB=%v alpha=%v beta=%v", ta, tb, ab[0], ab[1]), dt, got, want)
				}
			}
		}
	}
}

func testGemmBatched(t *testing.T, s *suite) {
	const m, n, k, batch = 3, 4, 5, 3
	for _, dt := range Dtypes {
		// A broadcast (one matrix for every product), B and C batched.
		av, bv := s.random(dt, m*k), s.random(dt, batch*k*n)
		a, b := s.upload(dt, av), s.upload(dt, bv)
		c := s.upload(dt, make([]float64, batch*m*n))
		size := uint64(dt.Size())
		var as, bs, cs []uint64
		for i := range batch {
			as = append(as, a)
			bs = append(bs, b+uint64(i*k*n)*size)
			cs = append(cs, c+uint64(i*m*n)*size)
		}
		if !s.ok("GemmBatched", dt, s.c.GemmBatched(stream, dt, false, false, m, n, k, 1, as, k, bs, n, 0, cs, n)) {
			continue
		}
		var want []float64
		for i := range batch {
			want = append(want, matRef(false, false, m, n, k, 1, av, k, bv[i*k*n:], n, 0, make([]float64, m*n), n)...)
		}
		s.check("GemmBatched", dt, s.download(dt, c, batch*m*n), want)
	}
}

func testSoftmax(t *testing.T, s *suite) {
	const rows, n = 3, 7
	for _, dt := range floats {
		for _, log := range []bool{false, true} {
			src := s.random(dt, rows*n)
			a, d := s.upload(dt, src), s.upload(dt, make([]float64, rows*n))
			if !s.ok("Softmax", dt, s.c.Softmax(stream, dt, d, a, rows, n, log)) {
				continue
			}
			want := make([]float64, rows*n)
			kernels.SoftmaxRows(want, src, rows, n, log)
			s.check(fmt.Sprintf("Softmax log=%v", log), dt, s.download(dt, d, rows*n), want)
		}
	}
}

// statDtype is the dtype of the statistics of a norm over dt.
func statDtype(dt backend.Dtype) backend.Dtype {
	if dt == backend.Float64 {
		return dt
	}
	return backend.Float32
}

// opt uploads vals when present, else returns address 0.
func (s *suite) opt(present bool, dt backend.Dtype, vals []float64) uint64 {
	if !present {
		return 0
	}
	return s.upload(dt, vals)
}

func testLayerNorm(t *testing.T, s *suite) {
	const rows, n, eps = 3, 8, 1e-5
	for _, dt := range floats {
		st := statDtype(dt)
		for _, affine := range []bool{true, false} {
			xv, wv, bv := s.random(dt, rows*n), s.random(dt, n), s.random(dt, n)
			x := s.upload(dt, xv)
			y, mean, rstd := s.upload(dt, make([]float64, rows*n)), s.upload(st, make([]float64, rows)), s.upload(st, make([]float64, rows))
			w, b := s.opt(affine, dt, wv), s.opt(affine, dt, bv)
			if !s.ok("LayerNorm", dt, s.c.LayerNorm(stream, dt, y, mean, rstd, x, w, b, rows, n, eps)) {
				continue
			}
			wy, wm, wr := make([]float64, rows*n), make([]float64, rows), make([]float64, rows)
			var rw, rb []float64
			if affine {
				rw, rb = wv, bv
			}
			kernels.LayerNormRows(wy, wm, wr, xv, rw, rb, rows, n, eps)
			what := fmt.Sprintf("LayerNorm affine=%v", affine)
			s.check(what+" y", dt, s.download(dt, y, rows*n), wy)
			s.check(what+" mean", st, s.download(st, mean, rows), wm)
			s.checkTol(what+" rstd", st, s.download(st, rstd, rows), wr, max(tol(st), 1e-4))
		}
	}
}

func testLayerNormBackward(t *testing.T, s *suite) {
	const rows, n = 3, 8
	for _, dt := range floats {
		st := statDtype(dt)
		for _, want := range []struct{ dx, dw, db, w bool }{{true, true, true, true}, {true, false, false, false}, {false, true, true, true}} {
			gv, xv, wv := s.random(dt, rows*n), s.random(dt, rows*n), s.random(dt, n)
			mv, rv := make([]float64, rows), make([]float64, rows)
			y := make([]float64, rows*n)
			kernels.LayerNormRows(y, mv, rv, xv, nil, nil, rows, n, 1e-5)
			for i := range mv {
				mv[i], rv[i] = conv(st, mv[i]), conv(st, rv[i])
			}
			g, x, mean, rstd := s.upload(dt, gv), s.upload(dt, xv), s.upload(st, mv), s.upload(st, rv)
			w := s.opt(want.w, dt, wv)
			dx, dw, db := s.opt(want.dx, dt, make([]float64, rows*n)), s.opt(want.dw, dt, make([]float64, n)), s.opt(want.db, dt, make([]float64, n))
			if !s.ok("LayerNormBackward", dt, s.c.LayerNormBackward(stream, dt, dx, dw, db, g, x, mean, rstd, w, rows, n)) {
				continue
			}
			rdx, rdw, rdb := make([]float64, rows*n), make([]float64, n), make([]float64, n)
			var rw []float64
			if want.w {
				rw = wv
			}
			kernels.LayerNormBackwardRows(rdx, rdw, rdb, gv, xv, mv, rv, rw, rows, n)
			what := fmt.Sprintf("LayerNormBackward %+v", want)
			if want.dx {
				s.checkTol(what+" dx", dt, s.download(dt, dx, rows*n), rdx, 4*tol(dt))
			}
			if want.dw {
				s.checkTol(what+" dw", dt, s.download(dt, dw, n), rdw, 4*tol(dt))
			}
			if want.db {
				s.check(what+" db", dt, s.download(dt, db, n), rdb)
			}
		}
	}
}

// bnRef is native_batch_norm in float64 over [nb, c, l] x: y, the batch
// mean and invstd (training) and the updated running statistics.
func bnRef(x []float64, nb, c, l int, w, b, rm, rv []float64, training bool, momentum, eps float64) (y, mean, invstd, nrm, nrv []float64) {
	mean, invstd = make([]float64, c), make([]float64, c)
	nrm, nrv = slices.Clone(rm), slices.Clone(rv)
	count := float64(nb * l)
	for j := range c {
		if training {
			var s, q float64
			for i := range nb {
				for k := range l {
					s += x[(i*c+j)*l+k]
				}
			}
			mu := s / count
			for i := range nb {
				for k := range l {
					d := x[(i*c+j)*l+k] - mu
					q += d * d
				}
			}
			v := q / count
			mean[j], invstd[j] = mu, 1/math.Sqrt(v+eps)
			if rm != nil {
				nrm[j] = (1-momentum)*rm[j] + momentum*mu
				nrv[j] = (1-momentum)*rv[j] + momentum*v*count/(count-1)
			}
		} else {
			mean[j], invstd[j] = rm[j], 1/math.Sqrt(rv[j]+eps)
		}
	}
	y = make([]float64, len(x))
	for i := range nb {
		for j := range c {
			for k := range l {
				p := (i*c+j)*l + k
				y[p] = (x[p] - mean[j]) * invstd[j]
				if w != nil {
					y[p] = y[p]*w[j] + b[j]
				}
			}
		}
	}
	return
}

func vec(addr uint64, dt backend.Dtype) backend.Strided {
	if addr == 0 {
		return backend.Strided{}
	}
	return backend.Strided{Addr: addr, Dtype: dt, Strides: []int{1}}
}

func testBatchNorm(t *testing.T, s *suite) {
	const nb, c, l, momentum, eps = 2, 3, 4, 0.1, 1e-5
	for _, dt := range floats {
		st := statDtype(dt)
		for _, tc := range []struct{ training, affine, running bool }{{true, true, true}, {true, false, false}, {false, true, true}} {
			xv, wv, bv := s.random(dt, nb*c*l), s.random(dt, c), s.random(dt, c)
			rmv := s.random(dt, c)
			rvv := make([]float64, c)
			for i := range rvv {
				rvv[i] = conv(dt, 0.5+float64(i)/4)
			}
			x, y := s.upload(dt, xv), s.upload(dt, make([]float64, nb*c*l))
			w, b := s.opt(tc.affine, dt, wv), s.opt(tc.affine, dt, bv)
			rm, rv := s.opt(tc.running, dt, rmv), s.opt(tc.running, dt, rvv)
			sm, si := s.upload(st, make([]float64, c)), s.upload(st, make([]float64, c))
			args := backend.BatchNormArgs{Dtype: dt, Y: y, X: x, Batch: nb, Channels: c, Length: l,
				Weight: vec(w, dt), Bias: vec(b, dt), RunningMean: vec(rm, dt), RunningVar: vec(rv, dt),
				SaveMean: sm, SaveInvstd: si, StatDtype: st, Training: tc.training, Momentum: momentum, Eps: eps}
			if !s.ok("BatchNorm", dt, s.c.BatchNorm(stream, args)) {
				continue
			}
			var rw, rb, rrm, rrv []float64
			if tc.affine {
				rw, rb = wv, bv
			}
			if tc.running {
				rrm, rrv = rmv, rvv
			}
			wy, wm, wi, nrm, nrv := bnRef(xv, nb, c, l, rw, rb, rrm, rrv, tc.training, momentum, eps)
			what := fmt.Sprintf("BatchNorm %+v", tc)
			s.check(what+" y", dt, s.download(dt, y, nb*c*l), wy)
			if tc.training {
				s.check(what+" save_mean", st, s.download(st, sm, c), wm)
				s.checkTol(what+" save_invstd", st, s.download(st, si, c), wi, max(tol(st), 1e-4))
				if tc.running {
					s.check(what+" running_mean", dt, s.download(dt, rm, c), nrm)
					s.check(what+" running_var", dt, s.download(dt, rv, c), nrv)
				}
			}
		}
	}
}

func testBatchNormBackward(t *testing.T, s *suite) {
	const nb, c, l, eps = 2, 3, 4, 1e-5
	for _, dt := range floats {
		st := statDtype(dt)
		for _, training := range []bool{true, false} {
			gv, xv, wv := s.random(dt, nb*c*l), s.random(dt, nb*c*l), s.random(dt, c)
			s1v, s2v := make([]float64, c), make([]float64, c)
			if training {
				_, mean, invstd, _, _ := bnRef(xv, nb, c, l, nil, nil, nil, nil, true, 0, eps)
				for j := range c {
					s1v[j], s2v[j] = conv(st, mean[j]), conv(st, invstd[j])
				}
			} else {
				for j := range c {
					s1v[j], s2v[j] = conv(st, 0.1*float64(j)), conv(st, 0.5+float64(j)/4)
				}
			}
			g, x, w := s.upload(dt, gv), s.upload(dt, xv), s.upload(dt, wv)
			s1, s2 := s.upload(st, s1v), s.upload(st, s2v)
			gx, gw, gb := s.upload(dt, make([]float64, nb*c*l)), s.upload(dt, make([]float64, c)), s.upload(dt, make([]float64, c))
			args := backend.BatchNormBackwardArgs{Dtype: dt, Grad: g, X: x, Batch: nb, Channels: c, Length: l,
				GradX: gx, GradWeight: vec(gw, dt), GradBias: vec(gb, dt),
				Weight: vec(w, dt), Stat1: vec(s1, st), Stat2: vec(s2, st), Training: training, Eps: eps}
			if !s.ok("BatchNormBackward", dt, s.c.BatchNormBackward(stream, args)) {
				continue
			}
			wx, ww, wb := make([]float64, nb*c*l), make([]float64, c), make([]float64, c)
			count := float64(nb * l)
			for j := range c {
				invstd := s2v[j]
				if !training {
					invstd = 1 / math.Sqrt(s2v[j]+eps)
				}
				var sg, sgx float64
				for i := range nb {
					for k := range l {
						p := (i*c+j)*l + k
						sg += gv[p]
						sgx += gv[p] * (xv[p] - s1v[j]) * invstd
					}
				}
				ww[j], wb[j] = sgx, sg
				for i := range nb {
					for k := range l {
						p := (i*c+j)*l + k
						if training {
							xh := (xv[p] - s1v[j]) * invstd
							wx[p] = wv[j] * invstd * (gv[p] - sg/count - xh*sgx/count)
						} else {
							wx[p] = wv[j] * invstd * gv[p]
						}
					}
				}
			}
			what := fmt.Sprintf("BatchNormBackward training=%v", training)
			s.checkTol(what+" dx", dt, s.download(dt, gx, nb*c*l), wx, 4*tol(dt))
			s.checkTol(what+" dw", dt, s.download(dt, gw, c), ww, 4*tol(dt))
			s.check(what+" db", dt, s.download(dt, gb, c), wb)
		}
	}
}

func testNLLLoss(t *testing.T, s *suite) {
	const rows, n = 5, 4
	for _, dt := range floats {
		for _, tdt := range []backend.Dtype{backend.Int64, backend.Int32} {
			lp := s.random(dt, rows*n)
			tv := make([]float64, rows)
			var want float64
			for i := range tv {
				tv[i] = float64(s.rng.IntN(n))
				want -= lp[i*n+int(tv[i])]
			}
			want /= rows
			a, tg, out := s.upload(dt, lp), s.upload(tdt, tv), s.upload(dt, []float64{0})
			if !s.ok("NLLLoss", dt, s.c.NLLLoss(stream, dt, out, a, tg, tdt, rows, n)) {
				continue
			}
			s.check("NLLLoss targets "+tdt.String(), dt, s.download(dt, out, 1), []float64{want})
		}
	}
}

// indexCase is the operands of a Gather or ScatterAdd test: index of
// shape [3, 2] (dtype idt) into a [3, 4] array along dim, or a [4, 2]
// array along dim 0.
func (s *suite) indexValues(idt backend.Dtype, shape []int, size int) (backend.Strided, []float64) {
	vals := make([]float64, numel(shape))
	for i := range vals {
		vals[i] = float64(s.rng.IntN(size))
	}
	return backend.Strided{Addr: s.upload(idt, vals), Dtype: idt, Strides: []int{shape[1], 1}}, vals
}

func testGather(t *testing.T, s *suite) {
	shape := []int{3, 2} // the index's
	for _, dt := range Dtypes {
		for _, idt := range []backend.Dtype{backend.Int64, backend.Int32} {
			for _, dim := range []int{0, 1} {
				srcShape := []int{4, 2}
				if dim == 1 {
					srcShape = []int{3, 4}
				}
				sv := s.random(dt, 12)
				src := backend.Strided{Addr: s.upload(dt, sv), Dtype: dt, Strides: []int{srcShape[1], 1}}
				ix, iv := s.indexValues(idt, shape, 4)
				d := backend.Strided{Addr: s.upload(dt, make([]float64, 6)), Dtype: dt, Strides: []int{2, 1}}
				if !s.ok("Gather", dt, s.c.Gather(stream, shape, dim, d, src, ix)) {
					continue
				}
				want := make([]float64, 6)
				for i := range 3 {
					for j := range 2 {
						r, c := i, j
						if dim == 0 {
							r = int(iv[i*2+j])
						} else {
							c = int(iv[i*2+j])
						}
						want[i*2+j] = sv[r*srcShape[1]+c]
					}
				}
				s.check(fmt.Sprintf("Gather dim %d index %s", dim, idt), dt, s.download(dt, d.Addr, 6), want)
			}
		}
	}
}

func testScatterAdd(t *testing.T, s *suite) {
	shape := []int{3, 2} // the index's
	for _, dt := range Dtypes {
		for _, idt := range []backend.Dtype{backend.Int64, backend.Int32} {
			for _, dim := range []int{0, 1} {
				dstShape := []int{4, 2}
				if dim == 1 {
					dstShape = []int{3, 4}
				}
				dv := s.random(dt, 12)
				d := backend.Strided{Addr: s.upload(dt, dv), Dtype: dt, Strides: []int{dstShape[1], 1}}
				ix, iv := s.indexValues(idt, shape, 4)
				sv := s.random(dt, 6)
				src := backend.Strided{Addr: s.upload(dt, sv), Dtype: dt, Strides: []int{2, 1}}
				if !s.ok("ScatterAdd", dt, s.c.ScatterAdd(stream, shape, dim, d, ix, src)) {
					continue
				}
				want := slices.Clone(dv)
				for i := range 3 {
					for j := range 2 {
						r, c := i, j
						if dim == 0 {
							r = int(iv[i*2+j])
						} else {
							c = int(iv[i*2+j])
						}
						// Accumulate as the dtype does, one addition at a time.
						want[r*dstShape[1]+c] = conv(dt, want[r*dstShape[1]+c]+sv[i*2+j])
					}
				}
				s.check(fmt.Sprintf("ScatterAdd dim %d index %s", dim, idt), dt, s.download(dt, d.Addr, 12), want)
			}
		}
	}
}

func testAdam(t *testing.T, s *suite) {
	const n = 37
	for _, dt := range Dtypes {
		for _, decoupled := range []bool{false, true} {
			sc := kernels.AdamScalars{LR: 1e-2, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 0.01, Step: 3, Decoupled: decoupled}
			pv, gv, mv := s.random(dt, n), s.random(dt, n), s.random(dt, n)
			vv := make([]float64, n)
			for i := range vv {
				vv[i] = conv(dt, float64(i%5)/8)
			}
			p, g, m, v := s.upload(dt, pv), s.upload(dt, gv), s.upload(dt, mv), s.upload(dt, vv)
			if !s.ok("Adam", dt, s.c.Adam(stream, dt, p, g, m, v, n, sc)) {
				continue
			}
			rp, rm, rv := slices.Clone(pv), slices.Clone(mv), slices.Clone(vv)
			kernels.AdamUpdate(rp, slices.Clone(gv), rm, rv, sc)
			what := fmt.Sprintf("Adam decoupled=%v", decoupled)
			s.check(what+" param", dt, s.download(dt, p, n), rp)
			s.check(what+" exp_avg", dt, s.download(dt, m, n), rm)
			s.check(what+" exp_avg_sq", dt, s.download(dt, v, n), rv)
		}
	}
}

// comparisons are the binary ops that may write a Bool dst.
var comparisons = []kernels.BinaryOp{kernels.Greater, kernels.Less, kernels.Equal, kernels.GreaterEqual, kernels.LessEqual}

// tied returns n values of dt from a small set, so that comparisons meet
// ties, zeros and (for the float types) NaN.
func (s *suite) tied(dt backend.Dtype, n int) []float64 {
	// 0.1 as dt holds it: equal to the scalar 0.1 under PyTorch's rule
	// for comparisons (backend.CompareScalar), below it in float64 for
	// float32 and the 16-bit types.
	set := []float64{-1, 0, 0.5, 1, math.NaN(), backend.CompareScalar(dt, 0.1)}
	switch dt {
	case backend.Int64, backend.Int32:
		set = []float64{-1, 0, 1, 2}
	case backend.Bool:
		set = []float64{0, 1}
	}
	v := make([]float64, n)
	for i := range v {
		v[i] = set[s.rng.IntN(len(set))]
	}
	return v
}

// tiedInput is input with values from tied.
func (s *suite) tiedInput(dt backend.Dtype, layout int) (backend.Strided, view) {
	l := layouts[layout]
	vals := s.tied(dt, l.size)
	return backend.Strided{Addr: s.upload(dt, vals), Dtype: dt, Strides: l.strides}, view{vals, l.strides}
}

// boolOut is a fresh [3, 4] Bool operand, contiguous or transposed.
func (s *suite) boolOut(transposed bool) backend.Strided { return s.output(backend.Bool, transposed) }

// testBinaryBool: the comparisons of two operands of every dtype into a
// Bool dst (as torch.gt and the others return torch.bool).
func testBinaryBool(t *testing.T, s *suite) {
	for _, dt := range Dtypes {
		for _, op := range comparisons {
			for k := range 2 * len(layouts) {
				la, lb := k/2, (k/2+k%2)%len(layouts) // each layout with itself and with the next
				a, av := s.tiedInput(dt, la)
				b, bv := s.tiedInput(dt, lb)
				d := s.boolOut(la == 2)
				if !s.ok("BinaryBool", dt, s.c.Binary(stream, op, shape34, d, a, b)) {
					continue
				}
				want := make([]float64, 12)
				for k := range want {
					want[k] = kernels.Apply(op, av.at(shape34, k), bv.at(shape34, k))
				}
				s.check(fmt.Sprintf("%v of %s into bool, %s with %s", op, dt, layouts[la].name, layouts[lb].name), backend.Bool, s.read(d), want)
			}
		}
	}
}

// testBinaryScalarBool: the comparisons with a scalar into a Bool dst.
func testBinaryScalarBool(t *testing.T, s *suite) {
	for _, dt := range Dtypes {
		for _, op := range comparisons {
			for _, first := range []bool{false, true} {
				for i, sc := range []float64{0.5, 1, math.NaN(), 0.1} {
					a, av := s.tiedInput(dt, i%2) // contiguous and transposed
					d := s.boolOut(false)
					if !s.ok("BinaryScalarBool", dt, s.c.BinaryScalar(stream, op, shape34, d, a, sc, first)) {
						continue
					}
					want := make([]float64, 12)
					for k := range want {
						x, y := av.at(shape34, k), backend.CompareScalar(dt, sc)
						if first {
							x, y = y, x
						}
						want[k] = kernels.Apply(op, x, y)
					}
					s.check(fmt.Sprintf("%v of %s and %v into bool, scalarFirst=%v", op, dt, sc, first), backend.Bool, s.read(d), want)
				}
			}
		}
	}
}

// testWhere: dst = cond ? a : b for every dtype, every operand in each
// layout, into a contiguous and a transposed dst; the values are copied
// exactly.
func testWhere(t *testing.T, s *suite) {
	for _, dt := range Dtypes {
		for l := range layouts {
			c, cv := s.tiedInput(backend.Bool, l)
			a, av := s.input(dt, (l+1)%len(layouts))
			b, bv := s.input(dt, (l+2)%len(layouts))
			d := s.output(dt, l == 1)
			if !s.ok("Where", dt, s.c.Where(stream, shape34, d, c, a, b)) {
				continue
			}
			want := make([]float64, 12)
			for k := range want {
				want[k] = bv.at(shape34, k)
				if cv.at(shape34, k) != 0 {
					want[k] = av.at(shape34, k)
				}
			}
			s.checkTol(fmt.Sprintf("Where cond %s", layouts[l].name), dt, s.read(d), want, 0)
		}
	}
}

// testInRange: the Bool lo ≤ x ≤ hi for every dtype and layout, NaN
// giving false, the bounds rounded to x's dtype as a comparison's scalar.
func testInRange(t *testing.T, s *suite) {
	for _, dt := range Dtypes {
		for l := range layouts {
			for _, r := range [][2]float64{{0, 1}, {-0.5, 0.5}, {math.Inf(-1), 0}, {2, 1}, {0.1, 0.5}, {-1, 0.1}} {
				a, av := s.tiedInput(dt, l)
				d := s.boolOut(l == 1)
				if !s.ok("InRange", dt, s.c.InRange(stream, shape34, d, a, r[0], r[1])) {
					continue
				}
				want := make([]float64, 12)
				lo, hi := backend.CompareScalar(dt, r[0]), backend.CompareScalar(dt, r[1])
				for k := range want {
					if x := av.at(shape34, k); x >= lo && x <= hi {
						want[k] = 1
					}
				}
				s.check(fmt.Sprintf("InRange [%v, %v] of %s %s", r[0], r[1], dt, layouts[l].name), backend.Bool, s.read(d), want)
			}
		}
	}
}

// csrCase is a random rows×cols CSR pattern: each row has 0 to 3 entries
// in distinct increasing columns, and rows 0 and 3 (when there) none.
func (s *suite) csrCase(rows, cols int) (offs, colIdx []float64) {
	offs = []float64{0}
	for r := range rows {
		var row []float64
		if r != 0 && r != 3 {
			for c := range cols {
				if len(row) < 3 && s.rng.IntN(2) == 0 {
					row = append(row, float64(c))
				}
			}
		}
		colIdx = append(colIdx, row...)
		offs = append(offs, float64(len(colIdx)))
	}
	return offs, colIdx
}

// testCSR checks CSRMatmul, CSRMatmulT and CSRSampledDot against
// gpukit/kernels in the dtype itself, bit for bit (the summation order is
// part of their contract), with both index dtypes, an output that starts
// as garbage (it is overwritten), and a matrix with no entries at all.
func testCSR(t *testing.T, s *suite) {
	for _, dt := range []backend.Dtype{backend.Float32, backend.Float64} {
		for _, idt := range []backend.Dtype{backend.Int64, backend.Int32} {
			for _, sz := range []struct{ rows, cols, n int }{{7, 5, 3}, {2, 4, 0}, {3, 4, 2}} {
				offs, colIdx := s.csrCase(sz.rows, sz.cols)
				if sz.rows == 3 { // no entries at all
					offs, colIdx = []float64{0, 0, 0, 0}, nil
				}
				nnz, n := len(colIdx), sz.n
				vals := s.random(dt, nnz)
				b, g := s.random(dt, sz.cols*n), s.random(dt, sz.rows*n)
				a := backend.CSR{Values: s.upload(dt, vals), ColIndices: s.upload(idt, colIdx), RowOffsets: s.upload(idt, offs),
					Index: idt, Rows: sz.rows, Cols: sz.cols, NNZ: nnz}
				db, dg := s.upload(dt, b), s.upload(dt, g)
				what := fmt.Sprintf("%d×%d (%d entries) n %d index %s", sz.rows, sz.cols, nnz, n, idt)
				var want [3][]float64
				if dt == backend.Float32 {
					want = csrWant[float32](vals, colIdx, offs, b, g, n)
				} else {
					want = csrWant[float64](vals, colIdx, offs, b, g, n)
				}
				for i, m := range []string{"CSRMatmul", "CSRMatmulT", "CSRSampledDot"} {
					out := s.upload(dt, s.random(dt, len(want[i])))
					var err error
					switch i {
					case 0:
						err = s.c.CSRMatmul(stream, dt, a, db, out, n)
					case 1:
						err = s.c.CSRMatmulT(stream, dt, a, dg, out, n)
					default:
						err = s.c.CSRSampledDot(stream, dt, a, dg, db, out, n)
					}
					if s.ok(m, dt, err) {
						s.checkTol(m+" "+what, dt, s.download(dt, out, len(want[i])), want[i], 0)
					}
				}
			}
		}
	}
}

// csrWant computes the three products with gpukit/kernels in F.
func csrWant[F float32 | float64](vals, colIdx, offs, b, g []float64, n int) [3][]float64 {
	conv := func(v []float64) []F {
		out := make([]F, len(v))
		for i, x := range v {
			out[i] = F(x)
		}
		return out
	}
	ints := func(v []float64) []int64 {
		out := make([]int64, len(v))
		for i, x := range v {
			out[i] = int64(x)
		}
		return out
	}
	rows, cols := len(offs)-1, len(b)/max(n, 1)
	if n == 0 {
		cols = 0
	}
	v, ci, of, bb, gg := conv(vals), ints(colIdx), ints(offs), conv(b), conv(g)
	mm, mt, sd := make([]F, rows*n), make([]F, cols*n), make([]F, len(vals))
	kernels.CSRMatmul(v, ci, of, bb, n, mm)
	kernels.CSRMatmulT(v, ci, of, gg, n, mt)
	kernels.CSRSampledDot(ci, of, gg, bb, n, sd)
	back := func(x []F) []float64 {
		out := make([]float64, len(x))
		for i, y := range x {
			out[i] = float64(y)
		}
		return out
	}
	return [3][]float64{back(mm), back(mt), back(sd)}
}
