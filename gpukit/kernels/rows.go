package kernels

import (
	"fmt"
	"math"
	"slices"
	"sync"
)

// Row kernels: softmax, log-softmax and LayerNorm over the rows of a
// contiguous [rows, n] array, each row in one fused pass set, rows split
// across goroutines. Every row is reduced in a fixed order (eight float64
// lane sums, combined as a tree) that does not depend on how rows are
// split, so results are bitwise the same for any GOMAXPROCS
// (TestRowsDeterministic). float32 runs the vector helpers (maxVec and
// the others: rows_amd64.s with AVX2, rows_arm64.s, or rows_other.go's Go
// loops) over the largest multiple of eight where useVecMath allows,
// and the loops below on the rest; all round alike. A product that is
// then added is converted first (float32(a*b)), so that arm64's compiler
// does not fuse the two into one rounding the others do not make.

// rowWorkers is how many goroutines to use for rows of n elements.
func rowWorkers(rows, n int) int {
	return min(workers(rows*n, 16384), max(rows, 1))
}

func checkRows(op string, ld, ls, rows, n int) {
	if rows < 0 || n < 0 {
		panic(fmt.Sprintf("kernels: %s: negative size rows=%d n=%d", op, rows, n))
	}
	if ld < rows*n || ls < rows*n {
		panic(fmt.Sprintf("kernels: %s: slices too short (dst %d, src %d) for [%d, %d]", op, ld, ls, rows, n))
	}
}

// lanes8 sums eight float64 lane accumulators in a fixed tree.
func lanes8(a *[8]float64) float64 {
	return ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]))
}

// lanes32 sums LayerNorm's 32 row-statistic lanes in a fixed tree: lane
// i with lane i+16, then i with i+8, then as lanes8.
func lanes32(a *[32]float64) float64 {
	var h [16]float64
	for i := range h {
		h[i] = a[i] + a[i+16]
	}
	var q [8]float64
	for i := range q {
		q[i] = h[i] + h[i+8]
	}
	return lanes8(&q)
}

// SoftmaxRows writes softmax(src row) (log-softmax when log) into each row
// of dst: with m the row's maximum and s = Σ e^(x-m) (summed in float64),
// softmax is e^(x-m)·(1/s) and log-softmax (x-m) - log s, as PyTorch's
// CPU kernels compute them. dst may be src.
func SoftmaxRows[T Float](dst, src []T, rows, n int, log bool) {
	checkRows("SoftmaxRows", len(dst), len(src), rows, n)
	if rows*n == 0 {
		return
	}
	parallelFor(rows, rowWorkers(rows, n), 1, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			d, s := dst[r*n:(r+1)*n], src[r*n:(r+1)*n]
			if d32, ok := any(d).([]float32); ok {
				s32 := any(s).([]float32)
				if r+1 < hi && softmaxPair32(d32, s32, any(dst[(r+1)*n:(r+2)*n]).([]float32), any(src[(r+1)*n:(r+2)*n]).([]float32), log) {
					r++
					continue
				}
				softmaxRow32(d32, s32, log)
			} else {
				softmaxRowGeneric(d, s, log)
			}
		}
	})
}

func softmaxRow32(d, s []float32, log bool) {
	m := rowShift32(s)
	var acc [8]float64
	expSub32(d, s, m, &acc)
	softmaxFinish32(d, s, m, &acc, log)
}

// softmaxPair32 is softmaxRow32 on two rows, their exponentials and sums
// computed together (expSubPairVec), the same bits as one row after the
// other; it reports false, having done nothing, where pairRows is false
// or the rows are shorter than 16.
func softmaxPair32(d1, s1, d2, s2 []float32, log bool) bool {
	k := len(d1) &^ 15
	if k == 0 || !pairRows() {
		return false
	}
	m1, m2 := rowShift32(s1), rowShift32(s2)
	var acc1, acc2 [8]float64
	expSubPairVec(&d1[0], &s1[0], &d2[0], &s2[0], k, m1, m2, &acc1, &acc2)
	// k is a multiple of 8: the rest's lanes are acc[i%8] still.
	expSub32(d1[k:], s1[k:], m1, &acc1)
	expSub32(d2[k:], s2[k:], m2, &acc2)
	softmaxFinish32(d1, s1, m1, &acc1, log)
	softmaxFinish32(d2, s2, m2, &acc2, log)
	return true
}

// rowShift32 is the row's maximum, the shift of its exponentials.
func rowShift32(s []float32) float32 {
	m := rowMax32(s)
	if math.IsInf(float64(m), -1) {
		m = 0 // an all -Inf row: avoid -Inf - -Inf = NaN in the shift
	}
	return m
}

// softmaxFinish32 scales the row's exponentials by 1/sum, or writes the
// log-softmax (x - m) - log(sum).
func softmaxFinish32(d, s []float32, m float32, acc *[8]float64, log bool) {
	sum := lanes8(acc)
	if log {
		subSub32(d, s, m, float32(math.Log(sum)))
		return
	}
	scale32(d, float32(1/sum))
}

func rowMax32(s []float32) float32 {
	m := float32(math.Inf(-1))
	i := 0
	if useVecMath && len(s) >= 8 {
		i = len(s) &^ 7
		m = maxVec(&s[0], i)
	}
	for ; i < len(s); i++ {
		m = max(m, s[i])
	}
	return m
}

// expSub32 writes d = e^(s-m) and adds each lane's values to acc (lane i%8).
func expSub32(d, s []float32, m float32, acc *[8]float64) {
	s = s[:len(d)]
	i := 0
	if useVecMath && len(d) >= 8 {
		i = len(d) &^ 7
		expSubVec(&d[0], &s[0], i, m, acc)
	}
	for ; i < len(d); i++ {
		d[i] = exp32(s[i] - m)
		acc[i%8] += float64(d[i])
	}
}

func scale32(d []float32, c float32) {
	i := 0
	if useVecMath && len(d) >= 8 {
		i = len(d) &^ 7
		scaleVec(&d[0], i, c)
	}
	for ; i < len(d); i++ {
		d[i] *= c
	}
}

// subSub32 writes d = (s - m) - c.
func subSub32(d, s []float32, m, c float32) {
	s = s[:len(d)]
	i := 0
	if useVecMath && len(d) >= 8 {
		i = len(d) &^ 7
		subSubVec(&d[0], &s[0], i, m, c)
	}
	for ; i < len(d); i++ {
		d[i] = (s[i] - m) - c
	}
}

func softmaxRowGeneric[T Float](d, s []T, log bool) {
	m := math.Inf(-1)
	for _, v := range s {
		m = max(m, float64(v))
	}
	if math.IsInf(m, -1) {
		m = 0
	}
	var acc [8]float64
	for i, v := range s {
		acc[i%8] += math.Exp(float64(v) - m)
	}
	sum := lanes8(&acc)
	lse := math.Log(sum)
	for i, v := range s {
		if log {
			d[i] = T(float64(v) - m - lse)
		} else {
			d[i] = T(math.Exp(float64(v)-m) / sum)
		}
	}
}

// LayerNormRows normalises each row of x ([rows, n]) to zero mean and unit
// biased variance and applies the optional weight and bias (length n; nil
// for none): y = (x-μ)·rstd·w + b, rstd = 1/√(var+eps). It writes each
// row's μ and rstd into mean and rstd (length rows). The statistics are
// accumulated in float64 (two passes: mean, then the squared deviations);
// the normalisation runs in T.
func LayerNormRows[T Float](y, mean, rstd, x, w, b []T, rows, n int, eps float64) {
	checkRows("LayerNormRows", len(y), len(x), rows, n)
	if len(mean) < rows || len(rstd) < rows || (w != nil && len(w) < n) || (b != nil && len(b) < n) {
		panic(fmt.Sprintf("kernels: LayerNormRows: statistics or affine parameters too short for [%d, %d]", rows, n))
	}
	if rows*n == 0 {
		return
	}
	parallelFor(rows, rowWorkers(rows, n), 1, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			xr, yr := x[r*n:(r+1)*n], y[r*n:(r+1)*n]
			mu := rowSum(xr) / float64(n)
			v := rowSqDev(xr, mu) / float64(n)
			rs := 1 / math.Sqrt(v+eps)
			mean[r], rstd[r] = T(mu), T(rs)
			normRow(yr, xr, w, b, mu, T(rs))
		}
	})
}

// rowSum is Σ s in float64, lane i%32 by lane (lanes32).
//
// LayerNorm's two statistics keep 32 lanes where softmax keeps eight:
// with eight, the assembly's accumulators each took an add every eight
// values, each add waiting on the one before (about four cycles), and
// that chain, with the widening of every value to float64, set the pace
// of the two passes over a row in the cache. With 32, four AVX-512
// accumulators (eight AVX2, sixteen NEON) each take an add every 32
// values. Each lane sums a quarter as many values, so the sums are no
// less accurate (TestLayerNormLanesAccuracy).
func rowSum[T Float](s []T) float64 {
	var acc [32]float64
	i := 0
	if s32, ok := any(s).([]float32); ok && useVecMath && len(s) >= 8 {
		i = len(s) &^ 7
		sumVec(&s32[0], i, &acc)
	}
	for ; i < len(s); i++ {
		acc[i%32] += float64(s[i])
	}
	return lanes32(&acc)
}

// rowSqDev is Σ (s-mu)² in float64, lane i%32 by lane (lanes32).
func rowSqDev[T Float](s []T, mu float64) float64 {
	var acc [32]float64
	i := 0
	if s32, ok := any(s).([]float32); ok && useVecMath && len(s) >= 8 {
		i = len(s) &^ 7
		sqDevVec(&s32[0], i, mu, &acc)
	}
	for ; i < len(s); i++ {
		d := float64(s[i]) - mu
		acc[i%32] += float64(d * d)
	}
	return lanes32(&acc)
}

// normRow writes y = (x-mu)·rs·w + b (the last two optional), with one
// rounding for ·w + b (a fused multiply-add, as PyTorch's vectorised
// kernel does). mu is subtracted in two parts, mu = hi + lo in T, so that
// a mean large against the spread keeps its digits.
func normRow[T Float](y, x, w, b []T, mu float64, rs T) {
	x = x[:len(y)]
	hi := T(mu)
	lo := T(mu - float64(hi))
	y32, ok := any(y).([]float32)
	if !ok {
		for i := range y {
			h := T((T(x[i]-hi) - lo) * rs)
			switch {
			case w != nil && b != nil:
				y[i] = T(h*w[i]) + b[i]
			case w != nil:
				y[i] = h * w[i]
			case b != nil:
				y[i] = h + b[i]
			default:
				y[i] = h
			}
		}
		return
	}
	x32 := any(x).([]float32)
	w32, _ := any(w).([]float32)
	b32, _ := any(b).([]float32)
	normRow32(y32, x32, w32, b32, float32(hi), float32(lo), float32(rs))
}

func normRow32(y, x, w, b []float32, hi, lo, rs float32) {
	i := 0
	if useVecMath && len(y) >= 8 && w != nil && b != nil {
		i = len(y) &^ 7
		normAffineVec(&y[0], &x[0], &w[0], &b[0], i, hi, lo, rs)
	}
	for ; i < len(y); i++ {
		h := float32(((x[i] - hi) - lo) * rs)
		switch {
		case w != nil && b != nil:
			y[i] = fma32(h, w[i], b[i])
		case w != nil:
			y[i] = h * w[i]
		case b != nil:
			y[i] = h + b[i]
		default:
			y[i] = h
		}
	}
}

// lnBlock is how many rows share one partial sum of LayerNorm's weight
// and bias gradients: a fixed number, so that the sums do not depend on
// the number of goroutines.
const lnBlock = 32

// LayerNormBackwardRows is LayerNormRows' backward (PyTorch's
// native_layer_norm_backward): with x̂ = (x-μ)·rstd and ĝ = g·w per row,
//
//	dx = rstd·(ĝ - mean(ĝ) - x̂·mean(ĝ·x̂)),  dw = Σ_rows g·x̂,  db = Σ_rows g.
//
// dx, dw and db may each be nil (not needed); w nil means ones. x̂, ĝ and
// the products are rounded to T, as PyTorch's kernel does; the row sums
// are float64 (eight lanes), and the column sums dw and db are float64
// per block of lnBlock rows, then summed over the blocks in order.
func LayerNormBackwardRows[T Float](dx, dw, db, g, x, mean, rstd, w []T, rows, n int) {
	checkRows("LayerNormBackwardRows", len(g), len(x), rows, n)
	if rows*n == 0 {
		clear(dw)
		clear(db)
		return
	}
	if w == nil {
		w = make([]T, n)
		for j := range w {
			w[j] = 1
		}
	}
	nb := (rows + lnBlock - 1) / lnBlock
	scratch := scratchFloats(2 * nb * n)
	defer putScratch(scratch)
	pw, pb := (*scratch)[:nb*n], (*scratch)[nb*n:]
	workers := min(rowWorkers(rows, n), nb)
	parallelFor(nb, workers, 1, func(lo, hi int) {
		for blk := lo; blk < hi; blk++ {
			bw, bb := pw[blk*n:(blk+1)*n], pb[blk*n:(blk+1)*n]
			// Each block's column sums start at zero here, by the
			// goroutine that fills them, just before: the clearing is
			// split as the rows are, and leaves them in the cache.
			clear(bw)
			clear(bb)
			for r := blk * lnBlock; r < min((blk+1)*lnBlock, rows); r++ {
				gr, xr := g[r*n:(r+1)*n], x[r*n:(r+1)*n]
				mu, rs := mean[r], rstd[r]
				var sg, sgx [8]float64
				lnBackwardSums(gr, xr, w, mu, rs, &sg, &sgx, bw, bb)
				if dx != nil {
					a, b := T(lanes8(&sg)/float64(n)), T(lanes8(&sgx)/float64(n))
					lnBackwardDx(dx[r*n:(r+1)*n], gr, xr, w, mu, rs, a, b)
				}
			}
		}
	})
	sumBlocks(dw, pw, nb, n, workers)
	sumBlocks(db, pb, nb, n, workers)
}

// lnBackwardSums adds, for one row, ĝ = g·w and ĝ·x̂ to the lane sums sg
// and sgx (lane j%8), and g·x̂ and g to the column sums pw and pb.
func lnBackwardSums[T Float](g, x, w []T, mu, rs T, sg, sgx *[8]float64, pw, pb []float64) {
	g, x, w, pw, pb = g[:len(x)], x[:len(x)], w[:len(x)], pw[:len(x)], pb[:len(x)]
	j := 0
	if g32, ok := any(g).([]float32); ok && useVecMath && len(x) >= 8 {
		x32, w32 := any(x).([]float32), any(w).([]float32)
		j = len(x) &^ 7
		lnBwdSumsVec(&g32[0], &x32[0], &w32[0], j, float32(mu), float32(rs), sg, sgx, &pw[0], &pb[0])
	}
	for ; j < len(x); j++ {
		xh := (x[j] - mu) * rs
		gw := g[j] * w[j]
		sg[j%8] += float64(gw)
		sgx[j%8] += float64(gw * xh)
		pw[j] += float64(g[j] * xh)
		pb[j] += float64(g[j])
	}
}

// lnBackwardDx writes dx = rstd·((ĝ - a) - x̂·b) for one row.
func lnBackwardDx[T Float](dx, g, x, w []T, mu, rs, a, b T) {
	g, x, w = g[:len(dx)], x[:len(dx)], w[:len(dx)]
	j := 0
	if d32, ok := any(dx).([]float32); ok && useVecMath && len(dx) >= 8 {
		g32, x32, w32 := any(g).([]float32), any(x).([]float32), any(w).([]float32)
		j = len(dx) &^ 7
		lnBwdDxVec(&d32[0], &g32[0], &x32[0], &w32[0], j, float32(mu), float32(rs), float32(a), float32(b))
	}
	for ; j < len(dx); j++ {
		xh := T((x[j] - mu) * rs)
		gw := T(g[j] * w[j])
		dx[j] = rs * ((gw - a) - T(xh*b))
	}
}

// scratchCache keeps LayerNormBackwardRows's per-block column sums from
// one call to the next: for 8192 rows of 1024 they are 4 MiB, which taken
// fresh from the heap each call were pages the OS had to fault in again,
// about a thousand a call (perf stat, issue 39). A list under a mutex, not
// a sync.Pool: a Pool's Get misses what the last Put left in another P's
// private slot, and a goroutine that waited on parallelFor's workers may
// resume on another P, so with a Pool one call in a few took the 4 MiB
// from the heap again (CI under qemu: 855,700 bytes a call). It holds at
// most maxScratch buffers, the largest ones it was given, for the life of
// the process, as PyTorch's CPU caching would.
var scratchCache struct {
	sync.Mutex
	free []*[]float64
}

// maxScratch is how many calls at once find their scratch cached.
const maxScratch = 4

// scratchFloats is n float64s from scratchCache, or new ones, holding
// whatever they held; give them back with putScratch.
func scratchFloats(n int) *[]float64 {
	scratchCache.Lock()
	for i, p := range scratchCache.free {
		if cap(*p) >= n {
			scratchCache.free = slices.Delete(scratchCache.free, i, i+1)
			scratchCache.Unlock()
			*p = (*p)[:n]
			return p
		}
	}
	scratchCache.Unlock()
	s := make([]float64, n)
	return &s
}

// putScratch returns p to scratchCache; when it is full, p takes the place
// of the smallest buffer there if it is larger.
func putScratch(p *[]float64) {
	scratchCache.Lock()
	defer scratchCache.Unlock()
	if len(scratchCache.free) < maxScratch {
		scratchCache.free = append(scratchCache.free, p)
		return
	}
	smallest := 0
	for i, q := range scratchCache.free {
		if cap(*q) < cap(*scratchCache.free[smallest]) {
			smallest = i
		}
	}
	if cap(*p) > cap(*scratchCache.free[smallest]) {
		scratchCache.free[smallest] = p
	}
}

func sumBlocks[T Float](dst []T, parts []float64, nb, n, workers int) {
	if dst == nil {
		return
	}
	// Each column's sum in block order, the columns split across the
	// workers in runs of 512 (4 KiB of sums, in the cache while every
	// block's part of the run is added in), reading the partial sums
	// sequentially within a run.
	const run = 512
	parallelFor((n+run-1)/run, workers, 1, func(lo, hi int) {
		var sum [run]float64
		for c := lo; c < hi; c++ {
			j0, j1 := c*run, min((c+1)*run, n)
			s := sum[:j1-j0]
			clear(s)
			for blk := range nb {
				for j, v := range parts[blk*n+j0 : blk*n+j1] {
					s[j] += v
				}
			}
			for j, v := range s {
				dst[j0+j] = T(v)
			}
		}
	})
}
