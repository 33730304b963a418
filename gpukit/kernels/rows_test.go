package kernels

import (
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
)

func randRows(r *rand.Rand, rows, n int, scale float64) []float32 {
	x := make([]float32, rows*n)
	for i := range x {
		x[i] = float32(r.NormFloat64() * scale)
	}
	return x
}

// rowResults runs every row kernel on fixed inputs and returns all outputs
// concatenated.
func rowResults(rows, n int) []float32 {
	r := rand.New(rand.NewPCG(7, uint64(n)))
	x := randRows(r, rows, n, 3)
	g := randRows(r, rows, n, 1)
	w, b := randRows(r, 1, n, 1), randRows(r, 1, n, 1)
	return runRowKernels(x, g, w, b, rows, n)
}

// runRowKernels runs every row kernel on rows×n inputs x and g (w and b
// of length n) and returns all outputs concatenated.
func runRowKernels(x, g, w, b []float32, rows, n int) []float32 {
	sm, lsm := make([]float32, rows*n), make([]float32, rows*n)
	SoftmaxRows(sm, x, rows, n, false)
	SoftmaxRows(lsm, x, rows, n, true)
	y, mu, rs := make([]float32, rows*n), make([]float32, rows), make([]float32, rows)
	LayerNormRows(y, mu, rs, x, w, b, rows, n, 1e-5)
	dx, dw, db := make([]float32, rows*n), make([]float32, n), make([]float32, n)
	LayerNormBackwardRows(dx, dw, db, g, x, mu, rs, w, rows, n)
	return slices.Concat(sm, lsm, y, mu, rs, dx, dw, db)
}

// TestRowsDeterministic checks that the row kernels give the same bits
// whatever the number of goroutines they split the rows over.
func TestRowsDeterministic(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, shape := range [][2]int{{300, 77}, {64, 1024}, {3, 5000}} {
		var want []float32
		for _, procs := range []int{1, 2, 8} {
			runtime.GOMAXPROCS(procs)
			got := rowResults(shape[0], shape[1])
			if want == nil {
				want = got
				continue
			}
			for i := range got {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("%v with GOMAXPROCS=%d: element %d is %g, with 1 it is %g", shape, procs, i, got[i], want[i])
				}
			}
		}
	}
}

// TestRowsMatchScalar checks the vector row helpers (AVX2 on amd64,
// NEON on arm64, rows_other.go's Go loops elsewhere) against rows.go's
// own loops, bit for bit: every row length 1..40 (every tail after the
// multiples of eight) and longer ones (maxVec's AVX-512 loop takes 64
// values a step, expSubPairVec two rows of 16), on normal rows and on rows with
// special values (NaN, ±Inf, ±0, subnormals, values near the float32
// limits).
func TestRowsMatchScalar(t *testing.T) {
	if !useVecMath {
		t.Skip("no vector row helpers on this CPU: only the Go loops run")
	}
	defer func() { useVecMath = true }()
	ns := []int{64, 72, 77, 120, 136, 200, 1024}
	for n := 1; n <= 40; n++ {
		ns = append(ns, n)
	}
	forEachVecPath(t, func(t *testing.T) {
		for _, n := range ns {
			for _, special := range []bool{false, true} {
				vec := rowResultsSpecial(5, n, special)
				useVecMath = false
				ref := rowResultsSpecial(5, n, special)
				useVecMath = true
				for i := range vec {
					if math.Float32bits(vec[i]) != math.Float32bits(ref[i]) && !(vec[i] != vec[i] && ref[i] != ref[i]) {
						t.Fatalf("n=%d special=%v: element %d: vector %g (%#08x), Go %g (%#08x)",
							n, special, i, vec[i], math.Float32bits(vec[i]), ref[i], math.Float32bits(ref[i]))
					}
				}
			}
		}
	})
}

// rowResultsSpecial is rowResults, with special, on inputs where row 1
// holds a NaN, row 2 is all -Inf but one +Inf, row 3 subnormals and
// ±0, and row 4 magnitudes near 1e30, among normal values.
func rowResultsSpecial(rows, n int, special bool) []float32 {
	if !special {
		return rowResults(rows, n)
	}
	r := rand.New(rand.NewPCG(11, uint64(n)))
	x := randRows(r, rows, n, 3)
	g := randRows(r, rows, n, 1)
	w, b := randRows(r, 1, n, 1), randRows(r, 1, n, 1)
	inf := float32(math.Inf(1))
	for j := range n {
		switch {
		case rows > 1 && j == n/2:
			x[n+j] = float32(math.NaN())
		case rows > 2:
			x[2*n+j] = -inf
		}
		if rows > 3 {
			x[3*n+j] = []float32{0, math.Float32frombits(0x80000000), math.Float32frombits(1), math.Float32frombits(0x807fffff), 0x1p-126}[j%5]
		}
		if rows > 4 {
			x[4*n+j] *= 1e30
		}
		g[j] = []float32{g[j], 0, math.Float32frombits(0x80000000), 1e-40}[j%4]
	}
	if rows > 2 {
		x[2*n+n-1] = inf
	}
	return runRowKernels(x, g, w, b, rows, n)
}

func TestSoftmaxRows(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	inf := float32(math.Inf(1))
	rows, n := 4, 37
	x := randRows(r, rows, n, 10)
	x[n] = -inf                    // one -Inf in row 1
	for j := 2 * n; j < 3*n; j++ { // row 2 all -Inf: NaN, as PyTorch
		x[j] = -inf
	}
	x[3*n+5] = 1e30 // row 3: one huge logit
	for _, log := range []bool{false, true} {
		got := make([]float32, rows*n)
		SoftmaxRows(got, x, rows, n, log)
		for i := range rows {
			row := x[i*n : (i+1)*n]
			// The reference shifts by the maximum in float32, as the
			// kernel must: e^(x-m) inherits the rounding of x-m.
			m := float32(math.Inf(-1))
			for _, v := range row {
				m = max(m, v)
			}
			var s float64
			for _, v := range row {
				s += math.Exp(float64(v - m))
			}
			for j, v := range row {
				want := math.Exp(float64(v-m)) / s
				if log {
					want = float64(v-m) - math.Log(s)
				}
				g := float64(got[i*n+j])
				if math.IsNaN(want) || math.IsInf(want, 0) {
					if !(math.IsNaN(want) && math.IsNaN(g)) && g != want {
						t.Errorf("log=%v [%d,%d] = %g, want %g", log, i, j, g, want)
					}
					continue
				}
				if math.Abs(g-want) > 5e-7*math.Abs(want)+1e-37 {
					t.Errorf("log=%v [%d,%d] = %g, want %g", log, i, j, g, want)
				}
			}
		}
	}
}

func TestLayerNormRows(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	rows, n := 7, 300
	x := randRows(r, rows, n, 2)
	for j := range n {
		x[j] += 1000 // a large mean: the two-pass variance keeps its digits
	}
	w, b := randRows(r, 1, n, 1), randRows(r, 1, n, 1)
	g := randRows(r, rows, n, 1)
	y, mu, rs := make([]float32, rows*n), make([]float32, rows), make([]float32, rows)
	LayerNormRows(y, mu, rs, x, w, b, rows, n, 1e-5)
	dx, dw, db := make([]float32, rows*n), make([]float32, n), make([]float32, n)
	LayerNormBackwardRows(dx, dw, db, g, x, mu, rs, w, rows, n)
	wantDw, wantDb := make([]float64, n), make([]float64, n)
	for i := range rows {
		var s, q float64
		for j := range n {
			s += float64(x[i*n+j])
		}
		m := s / float64(n)
		for j := range n {
			d := float64(x[i*n+j]) - m
			q += d * d
		}
		rstd := 1 / math.Sqrt(q/float64(n)+1e-5)
		var sg, sgx float64
		for j := range n {
			xh := (float64(x[i*n+j]) - m) * rstd
			want := xh*float64(w[j]) + float64(b[j])
			if math.Abs(float64(y[i*n+j])-want) > 2e-6*(1+math.Abs(want)) {
				t.Fatalf("y[%d,%d] = %g, want %g", i, j, y[i*n+j], want)
			}
			gh := float64(g[i*n+j]) * float64(w[j])
			sg += gh
			sgx += gh * xh
			wantDw[j] += float64(g[i*n+j]) * xh
			wantDb[j] += float64(g[i*n+j])
		}
		for j := range n {
			xh := (float64(x[i*n+j]) - m) * rstd
			want := rstd * (float64(g[i*n+j])*float64(w[j]) - sg/float64(n) - xh*sgx/float64(n))
			if math.Abs(float64(dx[i*n+j])-want) > 1e-5*(1+math.Abs(want)) {
				t.Fatalf("dx[%d,%d] = %g, want %g", i, j, dx[i*n+j], want)
			}
		}
	}
	for j := range n {
		if math.Abs(float64(dw[j])-wantDw[j]) > 1e-5*(1+math.Abs(wantDw[j])) || math.Abs(float64(db[j])-wantDb[j]) > 1e-5*(1+math.Abs(wantDb[j])) {
			t.Fatalf("dw[%d], db[%d] = %g, %g, want %g, %g", j, j, dw[j], db[j], wantDw[j], wantDb[j])
		}
	}
}

// LayerNormBackwardRows keeps its per-block column sums between calls
// (scratchCache): after the first call, a call of 8192 rows of 1024 takes
// far less than the 4 MiB of sums from the heap (it took them every call),
// also while other goroutines keep the Ps busy, so that the caller may
// resume on another P after each call (a sync.Pool missed there, one run
// in two); and a call after a larger one starts its sums from zero: dw and
// db are the same as on a fresh run.
func TestLayerNormBackwardReusesItsScratch(t *testing.T) {
	r := rand.New(rand.NewPCG(39, 3))
	grad := func(rows, n int) (dw, db []float32, run func()) {
		x, g, w := randRows(r, rows, n, 2), randRows(r, rows, n, 1), randRows(r, 1, n, 1)
		mu, rs := make([]float32, rows), make([]float32, rows)
		LayerNormRows(make([]float32, rows*n), mu, rs, x, w, nil, rows, n, 1e-5)
		dx := make([]float32, rows*n)
		dw, db = make([]float32, n), make([]float32, n)
		return dw, db, func() { LayerNormBackwardRows(dx, dw, db, g, x, mu, rs, w, rows, n) }
	}
	smallDW, smallDB, small := grad(100, 64)
	small()
	want := slices.Concat(smallDW, smallDB)

	_, _, big := grad(8192, 1024)
	big()
	stop := make(chan struct{})
	var busy sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		busy.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
					runtime.Gosched()
				}
			}
		})
	}
	calls := 40
	if testing.Short() { // under qemu (make cross) a call takes half a second
		calls = 5
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range calls {
		big()
		runtime.Gosched()
	}
	runtime.ReadMemStats(&after)
	close(stop)
	busy.Wait()
	perCall := (after.TotalAlloc - before.TotalAlloc) / uint64(calls)
	assert.Less(t, perCall, uint64(64<<10), "bytes from the heap per call of 8192×1024")

	small() // after the big calls, with a pooled scratch larger than it needs
	assert.Equal(t, want, slices.Concat(smallDW, smallDB), "dw and db after a larger call")
}
