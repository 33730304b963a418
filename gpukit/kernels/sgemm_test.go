package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gpumem/course/gpukit/internal/racetest"
)

// refGemm is the textbook triple loop in float64, the oracle for Sgemm.
func refGemm(tA, tB bool, m, n, k int, alpha float64, a []float32, lda int, b []float32, ldb int, beta float64, c []float32, ldc int) {
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			var s float64
			for p := 0; p < k; p++ {
				var av, bv float32
				if tA {
					av = a[p*lda+i]
				} else {
					av = a[i*lda+p]
				}
				if tB {
					bv = b[j*ldb+p]
				} else {
					bv = b[p*ldb+j]
				}
				s += float64(av) * float64(bv)
			}
			old := float64(c[i*ldc+j])
			if beta == 0 {
				old = 0
			}
			c[i*ldc+j] = float32(alpha*s + beta*old)
		}
	}
}

func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 1)) }

func randSlice(r *rand.Rand, n int) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = float32(r.Float64()*2 - 1)
	}
	return s
}

type gemmCase struct {
	tA, tB      bool
	m, n, k     int
	alpha, beta float32
	padA, padB  int // extra leading-dimension padding
	padC        int
}

func runGemmCase(t testing.TB, tc gemmCase, seed uint64) {
	r := rand.New(rand.NewPCG(seed, 1))
	ar, ac := tc.m, tc.k
	if tc.tA {
		ar, ac = tc.k, tc.m
	}
	br, bc := tc.k, tc.n
	if tc.tB {
		br, bc = tc.n, tc.k
	}
	lda, ldb, ldc := max(ac, 1)+tc.padA, max(bc, 1)+tc.padB, max(tc.n, 1)+tc.padC
	a := randSlice(r, max(0, (ar-1)*lda+ac))
	b := randSlice(r, max(0, (br-1)*ldb+bc))
	c := randSlice(r, max(0, (tc.m-1)*ldc+tc.n))
	if tc.m == 0 || tc.n == 0 {
		c = nil
	}
	want := append([]float32(nil), c...)
	refGemm(tc.tA, tc.tB, tc.m, tc.n, tc.k, float64(tc.alpha), a, lda, b, ldb, float64(tc.beta), want, ldc)
	got := append([]float32(nil), c...)
	Sgemm(tc.tA, tc.tB, tc.m, tc.n, tc.k, tc.alpha, a, lda, b, ldb, tc.beta, got, ldc)
	tol := 1e-5 * float64(tc.k+4)
	for i := range got {
		if d := math.Abs(float64(got[i]) - float64(want[i])); d > tol || math.IsNaN(float64(got[i])) {
			t.Fatalf("%+v: c[%d] = %v, want %v (|diff| %g > %g)", tc, i, got[i], want[i], d, tol)
		}
	}
}

func TestSgemm(t *testing.T) {
	sizes := [][3]int{
		{1, 1, 1}, {0, 3, 3}, {3, 0, 3}, {3, 3, 0}, {2, 3, 4}, {5, 7, 3},
		{6, 16, 1}, {6, 16, 256}, {7, 17, 257}, {13, 31, 9}, {1, 100, 50},
		{100, 1, 50}, {145, 33, 300}, {150, 3100, 20}, {97, 97, 97},
		{200, 130, 513},
	}
	scalars := [][2]float32{{1, 0}, {1, 1}, {-0.5, 2}, {0, 0.5}}
	for _, s := range sizes {
		abs := scalars
		if (racetest.Enabled || testing.Short()) && s[0]*s[1]*s[2] > 1<<16 {
			// Large products run in parallel pieces, which is what
			// the race detector is for; their float64 reference
			// takes a third of a second each under it, and as long
			// under qemu (make cross, -short). One pair of scalars
			// runs the same pieces and the kernels' alpha and beta
			// (the plain pass of make unit-gpukit runs all four).
			abs = scalars[2:3]
		}
		for _, tA := range []bool{false, true} {
			for _, tB := range []bool{false, true} {
				for _, ab := range abs {
					tc := gemmCase{tA: tA, tB: tB, m: s[0], n: s[1], k: s[2], alpha: ab[0], beta: ab[1], padA: 3, padC: 1}
					t.Run(fmt.Sprintf("%v", tc), func(t *testing.T) { runGemmCase(t, tc, 7) })
				}
			}
		}
	}
}

// TestSgemmPortable runs the pure-Go micro-kernel even where an assembly
// one is on (AVX2 on amd64, NEON on arm64).
func TestSgemmPortable(t *testing.T) {
	if !useAVX2 && !useNEON {
		t.Skip("portable kernel already used")
	}
	saved2, saved512, savedNEON, mr, nr := useAVX2, useAVX512, useNEON, gemmMR, gemmNR
	useAVX2, useAVX512, useNEON = false, false, false
	defer func() { useAVX2, useAVX512, useNEON, gemmMR, gemmNR = saved2, saved512, savedNEON, mr, nr }()
	for _, s := range [][3]int{{1, 1, 1}, {7, 17, 257}, {100, 40, 30}} {
		runGemmCase(t, gemmCase{m: s[0], n: s[1], k: s[2], alpha: 1.5, beta: 0.5, tB: true}, 3)
	}
}

func TestSgemmBetaZeroIgnoresNaN(t *testing.T) {
	c := []float32{float32(math.NaN()), float32(math.Inf(1))}
	Sgemm(false, false, 1, 2, 1, 1, []float32{2}, 1, []float32{3, 4}, 2, 0, c, 2)
	if c[0] != 6 || c[1] != 8 {
		t.Fatalf("got %v, want [6 8]", c)
	}
}

func TestSgemmPanicsOnShortSlice(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("no panic")
		}
	}()
	Sgemm(false, false, 6, 16, 4, 1, make([]float32, 23), 4, make([]float32, 64), 16, 0, make([]float32, 96), 16)
}

func FuzzSgemm(f *testing.F) {
	f.Add(uint8(7), uint8(17), uint16(257), false, true, uint8(2))
	f.Add(uint8(1), uint8(1), uint16(1), true, false, uint8(0))
	f.Fuzz(func(t *testing.T, m, n uint8, k uint16, tA, tB bool, pad uint8) {
		tc := gemmCase{tA: tA, tB: tB, m: int(m), n: int(n), k: int(k % 700), alpha: 1.25, beta: -0.5, padA: int(pad % 5), padB: int(pad % 3), padC: int(pad % 7)}
		runGemmCase(t, tc, uint64(m)<<8|uint64(n))
	})
}

// fmaTile is the micro-kernels' contract in Go: each element of the
// mr×nr tile one chain of FMAs over k in order (fma32 rounds as VFMADD
// and FMLA do), then c = fma(acc, alpha, c or +0).
func fmaTile(k, mr, nr int, as, bs, c []float32, ldc int, alpha float32, accumulate bool) {
	for i := range mr {
		for j := range nr {
			var acc float32
			for p := range k {
				acc = fma32(as[p*mr+i], bs[p*nr+j], acc)
			}
			old := float32(0)
			if accumulate {
				old = c[i*ldc+j]
			}
			c[i*ldc+j] = fma32(acc, alpha, old)
		}
	}
}

// TestSgemmKernelMatchesFMAChain checks the micro-kernel in use (AVX-512,
// AVX2 or NEON) and the kernels' Go loops (sgemm_neon_other.go and
// sgemm_kernel_other.go, where they are built) against fmaTile, bit for bit, on random slivers with
// zeros, negative zeros and large values, with and without accumulation:
// every kernel gives the bits of one FMA chain per element.
func TestSgemmKernelMatchesFMAChain(t *testing.T) {
	type kernel struct {
		name   string
		mr, nr int
		run    func(k int, as, bs, c []float32, ldc int, alpha float32, accumulate int)
	}
	var kernels []kernel
	if useAVX2 || useAVX512 || useNEON {
		kernels = append(kernels, kernel{"selected", gemmMR, gemmNR, func(k int, as, bs, c []float32, ldc int, alpha float32, accumulate int) {
			microKernel(k, as, bs, c, ldc, alpha, accumulate == 0)
		}})
	}
	if !useNEON {
		kernels = append(kernels, kernel{"neon-go", 8, 12, func(k int, as, bs, c []float32, ldc int, alpha float32, accumulate int) {
			sgemmKernel8x12NEON(k, &as[0], &bs[0], &c[0], ldc, alpha, accumulate)
		}})
	}
	if avxNamesAreGo {
		kernels = append(kernels, kernel{"avx512-go", 12, 32, func(k int, as, bs, c []float32, ldc int, alpha float32, accumulate int) {
			sgemmKernel12x32AVX512(k, &as[0], &bs[0], &c[0], ldc, alpha, accumulate)
		}}, kernel{"avx2-go", 6, 16, func(k int, as, bs, c []float32, ldc int, alpha float32, accumulate int) {
			sgemmKernel6x16AVX2(k, &as[0], &bs[0], &c[0], ldc, alpha, accumulate)
		}})
	}
	r := rand.New(rand.NewPCG(21, 22))
	special := []float32{0, float32(math.Copysign(0, -1)), 1e30, -1e-30, 3}
	for _, kn := range kernels {
		for _, k := range []int{1, 2, 3, 5, 17, 256} {
			for _, accumulate := range []int{0, 1} {
				as, bs := randSlice(r, k*kn.mr), randSlice(r, k*kn.nr)
				for i := range as {
					if r.IntN(8) == 0 {
						as[i] = special[r.IntN(len(special))]
					}
				}
				ldc := kn.nr + 3
				c := randSlice(r, kn.mr*ldc)
				want := slices.Clone(c)
				alpha := float32(r.NormFloat64())
				kn.run(k, as, bs, c, ldc, alpha, accumulate)
				fmaTile(k, kn.mr, kn.nr, as, bs, want, ldc, alpha, accumulate != 0)
				for i := range kn.mr {
					for j := range kn.nr {
						g, w := c[i*ldc+j], want[i*ldc+j]
						if math.Float32bits(g) != math.Float32bits(w) {
							t.Fatalf("%s k=%d accumulate=%d: C[%d,%d] = %g (%#08x), FMA chain %g (%#08x)",
								kn.name, k, accumulate, i, j, g, math.Float32bits(g), w, math.Float32bits(w))
						}
					}
					for j := kn.nr; j < ldc; j++ {
						if math.Float32bits(c[i*ldc+j]) != math.Float32bits(want[i*ldc+j]) {
							t.Fatalf("%s k=%d: wrote C[%d,%d], outside the tile", kn.name, k, i, j)
						}
					}
				}
			}
		}
	}
}

// TestSgemmKernelsAgree checks that the AVX-512 and AVX2 micro-kernels
// give the same bits (each element is one FMA chain over k in order).
func TestSgemmKernelsAgree(t *testing.T) {
	if !useAVX512 {
		t.Skip("no AVX-512")
	}
	r := rand.New(rand.NewPCG(9, 9))
	for _, sz := range [][3]int{{37, 53, 300}, {128, 96, 512}, {7, 200, 33}} {
		m, n, k := sz[0], sz[1], sz[2]
		a, b := randSlice(r, m*k), randSlice(r, k*n)
		c512 := make([]float32, m*n)
		Sgemm(false, true, m, n, k, 1, a, k, b, k, 0, c512, n)
		useAVX512 = false
		gemmMR, gemmNR = 6, 16
		c2 := make([]float32, m*n)
		Sgemm(false, true, m, n, k, 1, a, k, b, k, 0, c2, n)
		useAVX512 = true
		gemmMR, gemmNR = 12, 32
		for i := range c2 {
			if math.Float32bits(c2[i]) != math.Float32bits(c512[i]) {
				t.Fatalf("%v: element %d: AVX-512 %g, AVX2 %g", sz, i, c512[i], c2[i])
			}
		}
	}
}

// TestSgemmOffsets checks the batch against one Sgemm per product, bit for
// bit, with many products (spread over the cores) and with few (each
// split), and with a broadcast operand (one offset for every product).
func TestSgemmOffsets(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 4))
	for _, batch := range []int{1, 3, 40} {
		m, n, k := 70, 50, 64
		a, b := randSlice(r, batch*m*k), randSlice(r, k*n)
		oa, ob, oc := make([]int, batch), make([]int, batch), make([]int, batch)
		for i := range batch {
			oa[i], oc[i] = i*m*k, i*m*n
		}
		got, want := make([]float32, batch*m*n), make([]float32, batch*m*n)
		SgemmOffsets(false, false, m, n, k, 1, a, k, oa, b, n, ob, 0, got, n, oc)
		for i := range batch {
			Sgemm(false, false, m, n, k, 1, a[oa[i]:], k, b, n, 0, want[oc[i]:], n)
		}
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("batch %d: element %d is %g, want %g", batch, i, got[i], want[i])
			}
		}
	}
}

// nanSlice is n NaNs: a packing buffer whose every lane must be written.
func nanSlice(n int) []float32 {
	d := make([]float32, n)
	for i := range d {
		d[i] = float32(math.NaN())
	}
	return d
}

// checkPacked fails unless d holds n groups of ld values with lane j of
// group p bit for bit want(p, j).
func checkPacked(t *testing.T, what string, d []float32, ld, n int, want func(p, j int) float32) {
	t.Helper()
	for p := range n {
		for j := range ld {
			if got, w := d[p*ld+j], want(p, j); math.Float32bits(got) != math.Float32bits(w) {
				t.Fatalf("%s: d[%d·%d+%d] = %g, want %g", what, p, ld, j, got, w)
			}
		}
	}
}

// TestPackTransposed checks the packing of operand slivers, with the AVX
// transpose and without it, against the definition: every ragged row and
// column count around the transpose's 4-row, 8-column blocks, and the
// padding lanes zeroed over whatever the buffer held.
func TestPackTransposed(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	for _, avx := range []bool{false, true} {
		if avx && !useAVX {
			continue
		}
		saved := useAVX
		useAVX = avx
		for _, ldd := range []int{6, 12, 16, 32} {
			for rows := 0; rows <= ldd; rows++ {
				for _, n := range []int{1, 7, 8, 9, 16, 23, 256} {
					lds := n + 3
					src := randSlice(r, rows*lds)
					d := nanSlice(n * ldd)
					packTransposed(d, ldd, src, lds, rows, n)
					checkPacked(t, fmt.Sprintf("avx %v ldd %d rows %d n %d", avx, ldd, rows, n), d, ldd, n, func(p, i int) float32 {
						if i < rows {
							return src[i*lds+p]
						}
						return 0
					})
				}
			}
		}
		useAVX = saved
	}
}

// TestPackRows checks the packing of row-major slivers against the
// definition, for the kernels' widths (copied as arrays) and ragged ones.
func TestPackRows(t *testing.T) {
	r := rand.New(rand.NewPCG(6, 6))
	for _, ld := range []int{6, 12, 16, 32} {
		for width := 0; width <= ld; width++ {
			for _, n := range []int{1, 5, 256} {
				lds := ld + 3
				src := randSlice(r, (n-1)*lds+width)
				d := nanSlice(n * ld)
				packRows(d, ld, src, lds, width, n)
				checkPacked(t, fmt.Sprintf("ld %d width %d n %d", ld, width, n), d, ld, n, func(p, j int) float32 {
					if j < width {
						return src[p*lds+j]
					}
					return 0
				})
			}
		}
	}
}

// TestSgemmBetaZeroOverwrites checks the first k-panel's overwrite mode:
// with beta = 0, a C full of NaN gives the same bits as beta = 1 on a
// cleared C, over full and edge tiles and several k-panels, for both
// micro-kernels; and a product of zeros scaled by a negative alpha is +0,
// as accumulating onto a cleared C gives, not −0.
func TestSgemmBetaZeroOverwrites(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 8))
	run := func(t *testing.T) {
		for _, sz := range [][3]int{{100, 70, 600}, {12, 32, 5}, {13, 33, 257}} {
			m, n, k := sz[0], sz[1], sz[2]
			a, b := randSlice(r, m*k), randSlice(r, k*n)
			for _, alpha := range []float32{1, -0.75} {
				got, want := make([]float32, m*n), make([]float32, m*n)
				for i := range got {
					got[i] = float32(math.NaN())
				}
				Sgemm(false, false, m, n, k, alpha, a, k, b, n, 0, got, n)
				Sgemm(false, false, m, n, k, alpha, a, k, b, n, 1, want, n)
				for i := range got {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("%v alpha %g: element %d is %g, want %g", sz, alpha, i, got[i], want[i])
					}
				}
			}
			zeros := make([]float32, m*k)
			c := make([]float32, m*n)
			Sgemm(false, false, m, n, k, -1, zeros, k, b, n, 0, c, n)
			for i, v := range c {
				if math.Float32bits(v) != 0 {
					t.Fatalf("%v: zero product element %d has bits %#x, want +0", sz, i, math.Float32bits(v))
				}
			}
		}
	}
	t.Run("selected", run)
	if useAVX512 {
		useAVX512 = false
		gemmMR, gemmNR = 6, 16
		t.Run("avx2", run)
		useAVX512 = true
		gemmMR, gemmNR = 12, 32
	}
	if useAVX2 {
		useAVX2 = false
		saved512 := useAVX512
		useAVX512 = false
		gemmMR, gemmNR = 6, 16
		t.Run("go", run)
		useAVX2, useAVX512 = true, saved512
		if useAVX512 {
			gemmMR, gemmNR = 12, 32
		}
	}
	if useNEON {
		// The Go kernel with the NEON kernel's tile (8×12).
		useNEON = false
		t.Run("go", run)
		useNEON = true
	}
}
