package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gpumem/course/gpukit/internal/racetest"
	"github.com/gpumem/course/gpukit/ops"
)

// refIndex enumerates the multi-indices of shape in row-major order and
// returns, for each, the flat offset a view with the given strides addresses.
func refOffsets(shape, strides []int, off int) []int {
	var out []int
	idx := make([]int, len(shape))
	n := numel(shape)
	for e := 0; e < n; e++ {
		o := off
		for d := range shape {
			o += idx[d] * strides[d]
		}
		out = append(out, o)
		for d := len(shape) - 1; d >= 0; d-- {
			idx[d]++
			if idx[d] < shape[d] {
				break
			}
			idx[d] = 0
		}
	}
	return out
}

// viewCase is an operand layout: a permutation of a padded base array,
// optional broadcasting (stride 0) and an offset.
type viewCase struct {
	perm  []int // dims of the base array in view order (nil = identity)
	pad   int   // extra elements per innermost base row
	bcast []bool
	off   int
}

func makeView(r *rand.Rand, shape []int, vc viewCase) Strided[float32] {
	nd := len(shape)
	perm := vc.perm
	if perm == nil {
		perm = make([]int, nd)
		for i := range perm {
			perm[i] = i
		}
	}
	// base shape is shape permuted; build its (padded) strides.
	bshape := make([]int, nd)
	for i, p := range perm {
		bshape[p] = shape[i]
	}
	bst := make([]int, nd)
	s := 1
	for d := nd - 1; d >= 0; d-- {
		bst[d] = s
		if d == nd-1 {
			s *= bshape[d] + vc.pad
		} else {
			s *= bshape[d]
		}
	}
	st := make([]int, nd)
	for i, p := range perm {
		st[i] = bst[p]
		if vc.bcast != nil && vc.bcast[i] {
			st[i] = 0
		}
	}
	return Strided[float32]{Data: randSlice(r, vc.off+s+1), Offset: vc.off, Strides: st}
}

var stridedShapes = []struct {
	shape []int
	a, b  viewCase
}{
	{[]int{1}, viewCase{}, viewCase{}},
	{[]int{}, viewCase{}, viewCase{}},
	{[]int{7}, viewCase{off: 3}, viewCase{bcast: []bool{true}}},
	{[]int{3, 5}, viewCase{}, viewCase{bcast: []bool{true, false}}},
	{[]int{3, 5}, viewCase{perm: []int{1, 0}}, viewCase{bcast: []bool{false, true}}},
	{[]int{4, 1, 6}, viewCase{pad: 2}, viewCase{perm: []int{2, 1, 0}, off: 1}},
	{[]int{2, 3, 4, 5}, viewCase{perm: []int{0, 2, 1, 3}}, viewCase{bcast: []bool{true, false, true, false}}},
	{[]int{0, 4}, viewCase{}, viewCase{}},
	{[]int{300, 301}, viewCase{pad: 1}, viewCase{bcast: []bool{true, false}}}, // parallel path
	{[]int{70000}, viewCase{}, viewCase{bcast: []bool{true}}},
	{[]int{130, 129, 5}, viewCase{perm: []int{2, 0, 1}}, viewCase{perm: []int{1, 0, 2}}},
}

func TestBinaryStrided(t *testing.T) {
	for ci, tc := range stridedShapes {
		for _, op := range binariesFor(numel(tc.shape)) {
			t.Run(fmt.Sprintf("%d/%v/%v", ci, tc.shape, op), func(t *testing.T) {
				r := rand.New(rand.NewPCG(uint64(ci), 9))
				a := makeView(r, tc.shape, tc.a)
				b := makeView(r, tc.shape, tc.b)
				if op == ops.Pow {
					for i := range a.Data {
						a.Data[i] = float32(math.Abs(float64(a.Data[i])))
					}
				}
				dst := makeView(r, tc.shape, viewCase{pad: 1, off: 2})
				want := append([]float32(nil), dst.Data...)
				ao, bo := refOffsets(tc.shape, a.Strides, a.Offset), refOffsets(tc.shape, b.Strides, b.Offset)
				for e, do := range refOffsets(tc.shape, dst.Strides, dst.Offset) {
					want[do] = ApplyBinary(op, a.Data[ao[e]], b.Data[bo[e]])
				}
				BinaryStrided(op, tc.shape, dst, a, b)
				assertClose(t, dst.Data, want, 0)
			})
		}
	}
}

// TestBinaryStridedStreams runs BinaryStrided on results of streamFloats
// and more, which it writes with non-temporal stores in every piece
// (binaryRow), through views whose rows start off the 32-byte grid: rows
// of a vector and a vector, and of a vector and a broadcast scalar. The
// rows it should equal come from the loops that store as usual, which
// binariesFor is the binary ops a test runs on n elements: all of them,
// except under the race detector or -short (make cross, under qemu) on
// sizes that run in parallel pieces, where Add and Pow run those pieces
// (every op shares them) and the scalar reference loops of the others
// would take seconds; the plain pass of make unit-gpukit runs them all.
func binariesFor(n int) []ops.Binary {
	if (racetest.Enabled || testing.Short()) && n > 1<<12 {
		return []ops.Binary{ops.Add, ops.Pow}
	}
	return ops.Binaries()
}

// TestArithVectorLoops checks against ApplyBinary (a scalar loop over 64
// MiB would take seconds under the race detector).
func TestBinaryStridedStreams(t *testing.T) {
	if testing.Short() {
		t.Skip("64 MiB of operands")
	}
	r := rand.New(rand.NewPCG(5, 39))
	shape := []int{4, streamFloats/4 + 3}
	rows := shape[1] + 5 // padded rows: every row starts elsewhere
	view := func(off int) Strided[float32] {
		// Random blocks of 4093 values over and over: copy is quick
		// under the race detector, a loop of 16 M draws is not.
		data, block := make([]float32, off+shape[0]*rows), randSlice(r, 4093)
		for i := 0; i < len(data); i += len(block) {
			copy(data[i:], block)
		}
		return Strided[float32]{Data: data, Offset: off, Strides: []int{rows, 1}}
	}
	for _, op := range []ops.Binary{ops.Add, ops.Mul} {
		a, dst := view(1), view(3)
		for _, b := range []Strided[float32]{view(2), {Data: []float32{0, -1.75}, Offset: 1, Strides: []int{0, 0}}} {
			want := append([]float32(nil), dst.Data...)
			for i := range shape[0] {
				row := func(v Strided[float32]) []float32 { return v.Data[v.Offset+i*rows:][:shape[1]] }
				if b.Strides[1] == 0 {
					binaryVSStream(op, want[dst.Offset+i*rows:][:shape[1]], row(a), b.Data[b.Offset], false)
				} else {
					binaryVVStream(op, want[dst.Offset+i*rows:][:shape[1]], row(a), row(b), false)
				}
			}
			BinaryStrided(op, shape, dst, a, b)
			if !slices.Equal(dst.Data, want) { // no NaN in these operands
				i := 0
				for dst.Data[i] == want[i] {
					i++
				}
				t.Fatalf("%v, b strides %v: [%d] = %v, want %v", op, b.Strides, i, dst.Data[i], want[i])
			}
		}
	}
}

func TestBinaryContiguous(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 15, 17, 1000, 200001} {
		for _, op := range binariesFor(n) {
			a, b := randSlice(r, n), randSlice(r, n)
			if op == ops.Pow {
				Unary(ops.Abs, a, a)
			}
			got, gotS := make([]float32, n), make([]float32, n)
			Binary(op, got, a, b)
			BinaryScalar(op, gotS, a, 0.25)
			for i := range got {
				if w := ApplyBinary(op, a[i], b[i]); got[i] != w && !(w != w && got[i] != got[i]) {
					t.Fatalf("%v n=%d: [%d] = %v, want %v", op, n, i, got[i], w)
				}
				if w := ApplyBinary(op, a[i], 0.25); gotS[i] != w && !(w != w && gotS[i] != gotS[i]) {
					t.Fatalf("%v scalar n=%d: [%d] = %v, want %v", op, n, i, gotS[i], w)
				}
			}
		}
	}
}

// TestArithVectorLoops checks float32 Add, Sub, Mul and Div, vector with
// vector and with a scalar, bit for bit against ApplyBinary, where the AVX loops
// run (steps of 32 lanes, the ends in Go), storing as usual and streaming
// (as for results of streamFloats and more, from the first 32-byte
// aligned element): lengths around a step, misaligned starts, special
// values (NaN, ±Inf, ±0, subnormals) and results in place.
func TestArithVectorLoops(t *testing.T) {
	r := rand.New(rand.NewPCG(39, 2))
	special := []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), 0, float32(math.Copysign(0, -1)), 1e-45, -3e-39, 3e38}
	for _, n := range []int{31, 32, 33, 64 + 7, 1000} {
		for _, skip := range []int{0, 1, 3} {
			a, b := randSlice(r, n+skip)[skip:], randSlice(r, n+skip)[skip:]
			for i := 0; i < n; i += 1 + r.IntN(13) {
				a[i] = special[r.IntN(len(special))]
				b[(i*7)%n] = special[r.IntN(len(special))]
			}
			for _, op := range []ops.Binary{ops.Add, ops.Sub, ops.Mul, ops.Div} {
				for _, stream := range []bool{false, true} {
					got, gotS := make([]float32, n+skip)[skip:], make([]float32, n+skip)[skip:]
					binaryVVStream(op, got, a, b, stream)
					binaryVSStream(op, gotS, a, -1.75, stream)
					inPlace := append([]float32(nil), a...)
					binaryVVStream(op, inPlace, inPlace, b, stream)
					for i := range got {
						w, ws := ApplyBinary(op, a[i], b[i]), ApplyBinary(op, a[i], -1.75)
						if math.Float32bits(got[i]) != math.Float32bits(w) || math.Float32bits(inPlace[i]) != math.Float32bits(w) {
							t.Fatalf("%v n=%d skip=%d stream=%v: [%d] = %v (in place %v), want %v", op, n, skip, stream, i, got[i], inPlace[i], w)
						}
						if math.Float32bits(gotS[i]) != math.Float32bits(ws) {
							t.Fatalf("%v scalar n=%d skip=%d stream=%v: [%d] = %v, want %v", op, n, skip, stream, i, gotS[i], ws)
						}
					}
				}
			}
		}
	}
}

func TestBinaryInPlace(t *testing.T) {
	a := []float32{1, 2, 3}
	Binary(ops.Mul, a, a, a)
	assertClose(t, a, []float32{1, 4, 9}, 0)
}

func TestUnary(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{1, 33, 100000} {
		src := randSlice(r, n)
		for _, op := range ops.Unaries() {
			in := src
			if op == ops.Sqrt || op == ops.Log {
				in = make([]float32, n)
				Unary(ops.Abs, in, src)
			}
			got := make([]float32, n)
			Unary(op, got, in)
			want := make([]float32, n)
			for i, x := range in {
				want[i] = ApplyUnary(op, x)
			}
			assertClose(t, got, want, 0)
		}
	}
	// Spot values of the activation functions.
	x := []float64{-2, -0.5, 0, 0.5, 2}
	for _, v := range x {
		if g, w := ApplyUnary(ops.Sigmoid, v), 1/(1+math.Exp(-v)); math.Abs(g-w) > 1e-15 {
			t.Errorf("Sigmoid(%v) = %v, want %v", v, g, w)
		}
		if g, w := ApplyUnary(ops.Gelu, v), v*0.5*math.Erfc(-v/math.Sqrt2); math.Abs(g-w) > 1e-15 {
			t.Errorf("Gelu(%v) = %v, want %v", v, g, w)
		}
		if g := ApplyUnary(ops.Relu, v); g != max(v, 0) {
			t.Errorf("Relu(%v) = %v", v, g)
		}
	}
}

func TestUnaryStrided(t *testing.T) {
	for ci, tc := range stridedShapes {
		r := rand.New(rand.NewPCG(uint64(ci), 5))
		src := makeView(r, tc.shape, tc.a)
		dst := makeView(r, tc.shape, viewCase{off: 1})
		want := append([]float32(nil), dst.Data...)
		so := refOffsets(tc.shape, src.Strides, src.Offset)
		for e, do := range refOffsets(tc.shape, dst.Strides, dst.Offset) {
			want[do] = ApplyUnary(ops.Tanh, src.Data[so[e]])
		}
		UnaryStrided(ops.Tanh, tc.shape, dst, src)
		assertClose(t, dst.Data, want, 0)
	}
}

func TestCopy(t *testing.T) {
	cases := append([]struct {
		shape []int
		a, b  viewCase
	}{
		{[]int{4096 / 8, 4096 / 8}, viewCase{perm: []int{1, 0}}, viewCase{}},
		{[]int{2, 200, 3, 150}, viewCase{perm: []int{3, 1, 2, 0}}, viewCase{}},
		{[]int{5, 3}, viewCase{bcast: []bool{true, false}}, viewCase{}},
		{[]int{65, 67}, viewCase{perm: []int{1, 0}, pad: 3, off: 5}, viewCase{}},
	}, stridedShapes...)
	for ci, tc := range cases {
		r := rand.New(rand.NewPCG(uint64(ci), 6))
		src := makeView(r, tc.shape, tc.a)
		n := numel(tc.shape)
		want := make([]float32, n+1)
		for e, so := range refOffsets(tc.shape, src.Strides, src.Offset) {
			want[e] = src.Data[so]
		}
		want[n] = 42 // must stay untouched
		got := make([]float32, n+1)
		got[n] = 42
		Copy(tc.shape, got, src)
		assertClose(t, got, want, 0)
	}
}

func FuzzCopy(f *testing.F) {
	f.Add(uint8(3), uint8(70), uint8(5), uint8(2), uint8(1))
	f.Add(uint8(1), uint8(1), uint8(1), uint8(0), uint8(0))
	f.Fuzz(func(t *testing.T, d0, d1, d2, permSel, pad uint8) {
		shape := []int{int(d0 % 40), int(d1 % 140), int(d2 % 9)}
		perms := [][]int{{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}}
		r := rand.New(rand.NewPCG(uint64(d0), uint64(d1)))
		src := makeView(r, shape, viewCase{perm: perms[int(permSel)%6], pad: int(pad % 4), off: int(pad % 3)})
		n := numel(shape)
		want := make([]float32, n)
		for e, so := range refOffsets(shape, src.Strides, src.Offset) {
			want[e] = src.Data[so]
		}
		got := make([]float32, n)
		Copy(shape, got, src)
		assertClose(t, got, want, 0)
	})
}

func TestCoalesce(t *testing.T) {
	l := coalesce([]int{2, 3, 1, 4}, []int{12, 4, 4, 1}, []int{0, 4, 99, 1})
	if fmt.Sprint(l.shape, l.st[0], l.st[1]) != "[2 12] [12 1] [0 1]" {
		t.Fatalf("got %v %v %v", l.shape, l.st[0], l.st[1])
	}
}

func TestViewChecks(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("no panic for out-of-range view")
		}
	}()
	v := Strided[float32]{Data: make([]float32, 5), Strides: []int{3, 1}}
	BinaryStrided(ops.Add, []int{2, 3}, v, v, v)
}

func assertClose[T Float](t testing.TB, got, want []T, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("length %d, want %d", len(got), len(want))
	}
	for i := range got {
		g, w := float64(got[i]), float64(want[i])
		if g == w || (g != g && w != w) || math.Abs(g-w) <= tol*math.Max(1, math.Abs(w)) {
			continue
		}
		t.Fatalf("[%d] = %v, want %v", i, got[i], want[i])
	}
}

// TestBackwardOps checks each backward op (GeluBackward, …) bit for bit
// against its derivative's Unary kernel into a temporary and a Mul, the
// two kernels it fuses: lengths around its chunk, misaligned starts,
// streamed stores, special values, and the result written over the
// gradient or over the input, in float32 and float64.
func TestBackwardOps(t *testing.T) {
	testBackwardOps[float32](t)
	testBackwardOps[float64](t)
}

func testBackwardOps[T Float](t *testing.T) {
	r := rand.New(rand.NewPCG(39, 5))
	special := []T{T(math.NaN()), T(math.Inf(1)), T(math.Inf(-1)), 0, T(math.Copysign(0, -1)), 1e-40, -0.75, 9}
	var backward []ops.Binary
	for _, op := range ops.Binaries() {
		if _, ok := op.Derivative(); ok {
			backward = append(backward, op)
		}
	}
	if len(backward) != 4 {
		t.Fatalf("backward ops %v", backward)
	}
	for _, n := range []int{1, 31, backwardChunk - 1, backwardChunk, backwardChunk + 1, 3*backwardChunk + 40} {
		for _, skip := range []int{0, 1} {
			g, x := make([]T, n+skip)[skip:], make([]T, n+skip)[skip:]
			for i := range g {
				g[i], x[i] = T(r.NormFloat64()), T(3*r.NormFloat64())
			}
			for i := 0; i < n; i += 1 + r.IntN(17) {
				g[i] = special[r.IntN(len(special))]
				x[(i*5)%n] = special[r.IntN(len(special))]
			}
			for _, op := range backward {
				u, _ := op.Derivative()
				want := make([]T, n)
				Unary(u, want, x)
				Binary(ops.Mul, want, g, want)
				same := func(what string, got []T) {
					t.Helper()
					for i := range got {
						if got[i] != want[i] && !(got[i] != got[i] && want[i] != want[i]) {
							t.Fatalf("%v n=%d skip=%d %s: [%d] = %v, want %v", op, n, skip, what, i, got[i], want[i])
						}
					}
				}
				for _, stream := range []bool{false, true} {
					got := make([]T, n)
					binaryVVStream(op, got, g, x, stream)
					same(fmt.Sprint("stream ", stream), got)
				}
				overG, overX := append([]T(nil), g...), append([]T(nil), x...)
				Binary(op, overG, overG, x)
				same("over the gradient", overG)
				Binary(op, overX, g, overX)
				same("over the input", overX)
			}
		}
	}
}
