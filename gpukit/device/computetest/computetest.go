package computetest

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/gpumem/course/gpukit/alloc"
	"github.com/gpumem/course/gpukit/device/backend"
	"github.com/gpumem/course/gpukit/dtypes"
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
	Dtype  dtypes.Dtype
}

func (m Missing) String() string { return m.Method + "/" + m.Dtype.String() }

// Dtypes are the dtypes of backend.Compute, in order.
var Dtypes = backend.Dtypes

// floats are the dtypes of the row kernels (softmax, norms, losses).
var floats = backend.Floats

const stream alloc.Stream = 0

// Run runs the suite as subtests of t on c, whose memory mem is, and
// returns the (method, dtype) pairs c lacks, sorted. It checks c's
// Capabilities against the calls: every (method, dtype) the table lists
// must compute, every other one the suite calls must return an
// UnsupportedError, and the table lists nothing the suite does not call.
func Run(t *testing.T, c backend.Compute, mem Memory) []Missing {
	s := &suite{c: c, mem: mem, caps: c.Capabilities(), missing: map[Missing]bool{}, called: map[Missing]bool{}}
	tests := []struct {
		name string
		fn   func(*testing.T, *suite)
	}{
		{"Fill", testFill}, {"Copy", testCopy}, {"Unary", testUnary}, {"Binary", testBinary},
		{"BinaryScalar", testBinaryScalar}, {"Reduce", testReduce}, {"ReduceStrided", testReduceStrided},
		{"ArgReduce", testArgReduce}, {"ArgReduceStrided", testArgReduceStrided}, {"Gemm", testGemm}, {"GemmBatched", testGemmBatched},
		{"Softmax", testSoftmax}, {"SoftmaxStrided", testSoftmaxStrided}, {"LayerNorm", testLayerNorm}, {"LayerNormBackward", testLayerNormBackward},
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
	s.checkTable(t)
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
	caps    backend.Capabilities
	missing map[Missing]bool
	called  map[Missing]bool // the (Compute method, dtype) pairs called
}

// comparisonMethods are the Compute methods, as Capabilities names them,
// of the tests of comparisons into a Bool dst.
var comparisonMethods = map[string]string{"BinaryBool": "Binary", "BinaryScalarBool": "BinaryScalar"}

// ok reports whether a call succeeded: an UnsupportedError is recorded
// as missing, any other error fails the test. An UnsupportedError for a
// pair that c's Capabilities lists, or none for one it does not list,
// fails the test too.
func (s *suite) ok(method string, dt dtypes.Dtype, err error) bool {
	s.t.Helper()
	var u *backend.UnsupportedError
	unsupported := errors.As(err, &u)
	m := method
	if cm, ok := comparisonMethods[method]; ok {
		m = cm
	}
	s.called[Missing{m, dt}] = true
	if listed := s.caps.Supports(m, dt); listed && unsupported {
		s.t.Errorf("%s %s: Capabilities lists %s/%s, but the call returns %v", method, dt, m, dt, err)
	} else if !listed && err == nil {
		s.t.Errorf("%s %s: Capabilities does not list %s/%s, but the call succeeds", method, dt, m, dt)
	}
	if err == nil {
		return true
	}
	if unsupported {
		s.missing[Missing{method, dt}] = true
		return false
	}
	s.t.Errorf("%s %s: %v", method, dt, err)
	return false
}

// checkTable fails t for each pair of the Capabilities table that the
// suite did not call: a method that Compute does not have, or a dtype
// outside the method's domain (backend.Domain).
func (s *suite) checkTable(t *testing.T) {
	t.Helper()
	for m, dts := range s.caps {
		for _, dt := range dts {
			if !s.called[Missing{m, dt}] {
				t.Errorf("Capabilities lists %s/%s, which the suite never calls (backend.Domain is what it calls)", m, dt)
			}
		}
	}
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
func conv(dt dtypes.Dtype, v float64) float64 {
	var b [8]byte
	dtypes.Store(dt, b[:], 0, v)
	return dtypes.Load(dt, b[:], 0)
}

// random returns n values representable in dt: magnitudes in [0.25, 2]
// of either sign for the float types (no values near 0, so that ratios
// and logarithms stay well conditioned), small integers for the integer
// types, 0 and 1 for bool.
func (s *suite) random(dt dtypes.Dtype, n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		switch dt {
		case dtypes.Int64, dtypes.Int32:
			v[i] = float64(s.rng.IntN(9) - 4)
		case dtypes.Bool:
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
func (s *suite) upload(dt dtypes.Dtype, vals []float64) uint64 {
	s.t.Helper()
	n := max(len(vals), 1)
	addr, err := s.mem.Malloc(int64(n * dt.Size()))
	if err != nil {
		s.t.Fatalf("Malloc: %v", err)
	}
	s.allocs = append(s.allocs, addr)
	b := make([]byte, n*dt.Size())
	for i, v := range vals {
		dtypes.Store(dt, b, i, v)
	}
	if err := s.mem.CopyHtoD(addr, b, false, stream, false); err != nil {
		s.t.Fatalf("CopyHtoD: %v", err)
	}
	return addr
}

// download reads n elements of dt at addr.
func (s *suite) download(dt dtypes.Dtype, addr uint64, n int) []float64 {
	s.t.Helper()
	b := make([]byte, n*dt.Size())
	if err := s.mem.CopyDtoH(b, addr, false, stream, false); err != nil {
		s.t.Fatalf("CopyDtoH: %v", err)
	}
	v := make([]float64, n)
	for i := range v {
		v[i] = dtypes.Load(dt, b, i)
	}
	return v
}

// tol is the relative tolerance of results of dt (0: exact).
func tol(dt dtypes.Dtype) float64 {
	switch dt {
	case dtypes.Float32:
		return 2e-5
	case dtypes.Float64:
		return 1e-10
	case dtypes.Float16:
		return 2e-3
	case dtypes.BFloat16:
		return 1.6e-2
	}
	return 0
}

// check compares got with want (float64 results, converted to dt) at
// positions where fn is not nil; want is converted to dt first.
func (s *suite) check(what string, dt dtypes.Dtype, got, want []float64) {
	s.t.Helper()
	s.checkTol(what, dt, got, want, tol(dt))
}

func (s *suite) checkTol(what string, dt dtypes.Dtype, got, want []float64, rel float64) {
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
func (s *suite) input(dt dtypes.Dtype, layout int) (backend.Strided, view) {
	l := layouts[layout]
	vals := s.random(dt, l.size)
	return backend.Strided{Addr: s.upload(dt, vals), Dtype: dt, Strides: l.strides}, view{vals, l.strides}
}

// output is a fresh contiguous [3, 4] operand of dt, or a transposed one.
func (s *suite) output(dt dtypes.Dtype, transposed bool) backend.Strided {
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
