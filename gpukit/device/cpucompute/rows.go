package cpucompute

import (
	"fmt"
	"math"
	"slices"

	"github.com/gpumem/course/gpukit/alloc"
	"github.com/gpumem/course/gpukit/device/backend"
	"github.com/gpumem/course/gpukit/dtypes"
	"github.com/gpumem/course/gpukit/kernels"
	"github.com/gpumem/course/gpukit/layout"
)

// The fused row kernels, the norms, the loss and the indexed ops.
// float32 and float64 rows go to the parallel row kernels of
// gpukit/kernels; the other dtypes (and BatchNorm, whose statistics are
// per channel across rows) compute each row in float64, in one fixed
// order.

// statDtype is the dtype of the statistics of a norm over dt (CUDA's
// acc_type): float64 for float64, float32 otherwise.
func statDtype(dt dtypes.Dtype) dtypes.Dtype {
	if dt == f64t {
		return f64t
	}
	return f32t
}

// readRow loads len(buf) elements of data (dtype dt) from element off.
func readRow(dt dtypes.Dtype, data []byte, off int, buf []float64) {
	switch dt {
	case f32t:
		for i, v := range kernels.Float32s(data)[off : off+len(buf)] {
			buf[i] = float64(v)
		}
	case f64t:
		copy(buf, kernels.Float64s(data)[off:off+len(buf)])
	default:
		for i := range buf {
			buf[i] = dtypes.Load(dt, data, off+i)
		}
	}
}

// writeRow stores buf into data (dtype dt) from element off.
func writeRow(dt dtypes.Dtype, data []byte, off int, buf []float64) {
	switch dt {
	case f32t:
		d := kernels.Float32s(data)[off : off+len(buf)]
		for i, v := range buf {
			d[i] = float32(v)
		}
	case f64t:
		copy(kernels.Float64s(data)[off:off+len(buf)], buf)
	default:
		for i, v := range buf {
			dtypes.Store(dt, data, off+i, v)
		}
	}
}

// Softmax writes the softmax or log-softmax of each row.
func (c *Compute) Softmax(_ alloc.Stream, dt dtypes.Dtype, dst, src uint64, rows, n int, log bool) error {
	const op = "Softmax"
	d, err := c.bytes(op, dst, dt, rows*n)
	if err != nil || d == nil {
		return err
	}
	s, err := c.bytes(op, src, dt, rows*n)
	if err != nil {
		return err
	}
	switch dt {
	case f32t:
		kernels.SoftmaxRows(kernels.Float32s(d)[:rows*n], kernels.Float32s(s)[:rows*n], rows, n, log)
		return nil
	case f64t:
		kernels.SoftmaxRows(kernels.Float64s(d)[:rows*n], kernels.Float64s(s)[:rows*n], rows, n, log)
		return nil
	}
	buf := make([]float64, n)
	for r := range rows {
		softmaxLine(buf, log, func(i int) float64 { return dtypes.Load(dt, s, r*n+i) }, func(i int, v float64) { dtypes.Store(dt, d, r*n+i, v) })
	}
	return nil
}

// SoftmaxStrided writes the softmax or log-softmax of each line of src
// along dim into dst, in float64 (softmaxLine); see backend.Compute.
func (c *Compute) SoftmaxStrided(_ alloc.Stream, shape []int, dim int, dst, src backend.Strided, log bool) error {
	const op = "SoftmaxStrided"
	if (len(shape) > 0 || dim != 0) && (dim < 0 || dim >= len(shape)) {
		return fmt.Errorf("%s: dimension %d of a %d-d shape", op, dim, len(shape))
	}
	opnd, err := c.stridedAll(op, shape, dst, src)
	if err != nil || numel(shape) == 0 {
		return err
	}
	d, a := opnd[0], opnd[1]
	lineShape, n, so, sa := []int{}, 1, 0, 0
	if len(shape) > 0 {
		lineShape = slices.Clone(shape)
		lineShape[dim], n = 1, shape[dim]
		so, sa = d.strides[dim], a.strides[dim]
	}
	buf := make([]float64, n)
	layout.ForEachOffset(lineShape, []int{0, 0}, [][]int{d.strides, a.strides}, func(_ int, o []int) {
		softmaxLine(buf, log,
			func(i int) float64 { return dtypes.Load(a.dt, a.data, o[1]+i*sa) },
			func(i int, v float64) { dtypes.Store(d.dt, d.data, o[0]+i*so, v) })
	})
	return nil
}

// softmaxLine computes the softmax (log-softmax when log) of one line of
// len(buf) elements in float64 after subtracting its maximum, so large
// logits do not overflow: the generic algorithm of every dtype that has
// no row kernel and of every layout that the row kernels cannot read.
// get reads element i of the line and set writes result i.
func softmaxLine(buf []float64, log bool, get func(int) float64, set func(int, float64)) {
	m := math.Inf(-1)
	for i := range buf {
		buf[i] = get(i)
		m = max(m, buf[i])
	}
	if math.IsInf(m, -1) {
		m = 0 // an all -Inf line: avoid -Inf - -Inf = NaN in the shift
	}
	var sum float64
	for i := range buf {
		sum += math.Exp(buf[i] - m)
	}
	lse := m + math.Log(sum)
	for i := range buf {
		v := buf[i] - lse
		if !log {
			v = math.Exp(buf[i]-m) / sum
		}
		set(i, v)
	}
}

// rowArrays resolves the arrays of a row kernel: each (addr, dtype,
// count); an address of 0 gives nil.
func (c *Compute) rowArrays(op string, specs ...rowSpec) ([][]byte, error) {
	out := make([][]byte, len(specs))
	for i, s := range specs {
		b, err := c.opt(op, s.addr, s.dt, s.n)
		if err != nil {
			return nil, err
		}
		out[i] = b
	}
	return out, nil
}

type rowSpec struct {
	addr uint64
	dt   dtypes.Dtype
	n    int
}

func f32or(b []byte, n int) []float32 {
	if b == nil {
		return nil
	}
	return kernels.Float32s(b)[:n]
}

func f64or(b []byte, n int) []float64 {
	if b == nil {
		return nil
	}
	return kernels.Float64s(b)[:n]
}

// LayerNorm normalises each row of x.
func (c *Compute) LayerNorm(_ alloc.Stream, dt dtypes.Dtype, y, mean, rstd, x, w, b uint64, rows, n int, eps float64) error {
	const op = "LayerNorm"
	if rows == 0 || n == 0 {
		return nil
	}
	st := statDtype(dt)
	a, err := c.rowArrays(op, rowSpec{y, dt, rows * n}, rowSpec{mean, st, rows}, rowSpec{rstd, st, rows}, rowSpec{x, dt, rows * n}, rowSpec{w, dt, n}, rowSpec{b, dt, n})
	if err != nil {
		return err
	}
	if a[0] == nil || a[1] == nil || a[2] == nil || a[3] == nil {
		return fmt.Errorf("cpucompute: %s on %s: y, mean, rstd and x are required", op, c.name)
	}
	switch dt {
	case f32t:
		kernels.LayerNormRows(f32or(a[0], rows*n), f32or(a[1], rows), f32or(a[2], rows), f32or(a[3], rows*n), f32or(a[4], n), f32or(a[5], n), rows, n, eps)
		return nil
	case f64t:
		kernels.LayerNormRows(f64or(a[0], rows*n), f64or(a[1], rows), f64or(a[2], rows), f64or(a[3], rows*n), f64or(a[4], n), f64or(a[5], n), rows, n, eps)
		return nil
	}
	LayerNormRows64(dt, dt, st, a[0], a[1], a[2], a[3], a[4], a[5], rows, n, eps)
	return nil
}

// LayerNormRows64 is LayerNorm of the 16-bit and integer dtypes over host
// bytes, each row in float64 (two passes for mean and variance): x and y
// have dtype dt, w and b (nil: absent) wdt, mean and rstd sdt. gpukit/tensor
// calls it directly for 16-bit inputs with float32 parameters, which the
// Compute signature does not express.
func LayerNormRows64(dt, wdt, sdt dtypes.Dtype, y, mean, rstd, x, w, b []byte, rows, n int, eps float64) {
	wv, bv := rowValues(wdt, w, n, 1), rowValues(wdt, b, n, 0)
	row := make([]float64, n)
	means, rstds := make([]float64, rows), make([]float64, rows)
	for r := range rows {
		readRow(dt, x, r*n, row)
		mu, v := meanVar(row)
		rs := 1 / math.Sqrt(v+eps)
		for j, e := range row {
			row[j] = (e-mu)*rs*wv[j] + bv[j]
		}
		writeRow(dt, y, r*n, row)
		means[r], rstds[r] = mu, rs
	}
	writeRow(sdt, mean, 0, means)
	writeRow(sdt, rstd, 0, rstds)
}

// rowValues reads the n elements of an optional contiguous array (fill
// when absent).
func rowValues(dt dtypes.Dtype, b []byte, n int, fill float64) []float64 {
	buf := make([]float64, n)
	if b == nil {
		for i := range buf {
			buf[i] = fill
		}
		return buf
	}
	readRow(dt, b, 0, buf)
	return buf
}

// meanVar is the mean and biased variance of xs (two passes).
func meanVar(xs []float64) (mean, variance float64) {
	var s float64
	for _, v := range xs {
		s += v
	}
	mean = s / float64(len(xs))
	var q float64
	for _, v := range xs {
		d := v - mean
		q += d * d
	}
	return mean, q / float64(len(xs))
}

// LayerNormBackward is native_layer_norm_backward: with x̂ = (x-μ)·rstd
// and ĝ = g·w per row of n elements,
//
//	dx = rstd · (ĝ - mean(ĝ) - x̂ · mean(ĝ·x̂))
//	dw = Σ_rows g·x̂,  db = Σ_rows g
func (c *Compute) LayerNormBackward(_ alloc.Stream, dt dtypes.Dtype, dx, dw, db, g, x, mean, rstd, w uint64, rows, n int) error {
	const op = "LayerNormBackward"
	if rows == 0 || n == 0 {
		return nil
	}
	st := statDtype(dt)
	a, err := c.rowArrays(op, rowSpec{dx, dt, rows * n}, rowSpec{dw, dt, n}, rowSpec{db, dt, n}, rowSpec{g, dt, rows * n}, rowSpec{x, dt, rows * n}, rowSpec{mean, st, rows}, rowSpec{rstd, st, rows}, rowSpec{w, dt, n})
	if err != nil {
		return err
	}
	if a[3] == nil || a[4] == nil || a[5] == nil || a[6] == nil {
		return fmt.Errorf("cpucompute: %s on %s: g, x, mean and rstd are required", op, c.name)
	}
	switch dt {
	case f32t:
		kernels.LayerNormBackwardRows(f32or(a[0], rows*n), f32or(a[1], n), f32or(a[2], n), f32or(a[3], rows*n), f32or(a[4], rows*n), f32or(a[5], rows), f32or(a[6], rows), f32or(a[7], n), rows, n)
		return nil
	case f64t:
		kernels.LayerNormBackwardRows(f64or(a[0], rows*n), f64or(a[1], n), f64or(a[2], n), f64or(a[3], rows*n), f64or(a[4], rows*n), f64or(a[5], rows), f64or(a[6], rows), f64or(a[7], n), rows, n)
		return nil
	}
	LayerNormBackwardRows64(dt, dt, st, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], rows, n)
	return nil
}

// LayerNormBackwardRows64 is LayerNormBackward over host bytes in float64,
// as LayerNormRows64: g, x and dx have dtype dt, w, dw and db wdt, mean and
// rstd sdt; dx, dw, db and w may be nil.
func LayerNormBackwardRows64(dt, wdt, sdt dtypes.Dtype, dx, dw, db, g, x, mean, rstd, w []byte, rows, n int) {
	wv := rowValues(wdt, w, n, 1)
	mus, rss := rowValues(sdt, mean, rows, 0), rowValues(sdt, rstd, rows, 0)
	gRow, xRow, dxRow := make([]float64, n), make([]float64, n), make([]float64, n)
	dwv, dbv := make([]float64, n), make([]float64, n)
	for r := range rows {
		readRow(dt, g, r*n, gRow)
		readRow(dt, x, r*n, xRow)
		var sg, sgx float64
		for j := range xRow {
			xRow[j] = (xRow[j] - mus[r]) * rss[r] // x̂
			gh := gRow[j] * wv[j]
			sg += gh
			sgx += gh * xRow[j]
			dwv[j] += gRow[j] * xRow[j]
			dbv[j] += gRow[j]
		}
		if dx != nil {
			sg, sgx = sg/float64(n), sgx/float64(n)
			for j := range dxRow {
				dxRow[j] = rss[r] * (gRow[j]*wv[j] - sg - xRow[j]*sgx)
			}
			writeRow(dt, dx, r*n, dxRow)
		}
	}
	if dw != nil {
		writeRow(wdt, dw, 0, dwv)
	}
	if db != nil {
		writeRow(wdt, db, 0, dbv)
	}
}

// channelVec is a resolved per-channel vector operand (data nil: absent).
type channelVec struct {
	data   []byte
	dt     dtypes.Dtype
	stride int
}

// vec resolves an optional per-channel vector of c elements.
func (c *Compute) vec(op string, s backend.Strided, n int) (channelVec, error) {
	if s.Addr == 0 {
		return channelVec{}, nil
	}
	if len(s.Strides) != 1 {
		return channelVec{}, fmt.Errorf("cpucompute: %s on %s: a per-channel vector has one stride, got %d", op, c.name, len(s.Strides))
	}
	o, err := c.strided(op, []int{n}, s)
	return channelVec{data: o.data, dt: s.Dtype, stride: s.Strides[0]}, err
}

// values returns the vector's elements (fill when absent).
func (v channelVec) values(n int, fill float64) []float64 {
	buf := make([]float64, n)
	for i := range buf {
		if v.data == nil {
			buf[i] = fill
		} else {
			buf[i] = dtypes.Load(v.dt, v.data, i*v.stride)
		}
	}
	return buf
}

// write stores buf through the vector's stride.
func (v channelVec) write(buf []float64) {
	for i, x := range buf {
		dtypes.Store(v.dt, v.data, i*v.stride, x)
	}
}

// pair resolves the two required [nb, ch, l] arrays of a batch norm (y
// and x, or grad and x), of total elements each.
func (c *Compute) pair(op string, dt dtypes.Dtype, total int, a, x uint64) (ab, xb []byte, err error) {
	if ab, err = c.bytes(op, a, dt, total); err != nil {
		return nil, nil, err
	}
	if xb, err = c.bytes(op, x, dt, total); err != nil {
		return nil, nil, err
	}
	return ab, xb, nil
}

// vecs resolves optional per-channel vectors of ch elements.
func (c *Compute) vecs(op string, ch int, ss ...backend.Strided) ([]channelVec, error) {
	vs := make([]channelVec, len(ss))
	for i, s := range ss {
		var err error
		if vs[i], err = c.vec(op, s, ch); err != nil {
			return nil, err
		}
	}
	return vs, nil
}

// channelRows calls fn with the offset and channel of each of the nb·ch
// rows of l elements of a contiguous [nb, ch, l] array, in order.
func channelRows(nb, ch, l int, fn func(off, j int)) {
	for i := range nb {
		for j := range ch {
			fn((i*ch+j)*l, j)
		}
	}
}

// invstdOf turns variances into 1/√(var+eps), in place.
func invstdOf(v []float64, eps float64) {
	for j := range v {
		v[j] = 1 / math.Sqrt(v[j]+eps)
	}
}

// BatchNorm is native_batch_norm; see backend.BatchNormArgs.
func (c *Compute) BatchNorm(_ alloc.Stream, a backend.BatchNormArgs) error {
	const op = "BatchNorm"
	nb, ch, l := a.Batch, a.Channels, a.Length
	total := nb * ch * l
	if total == 0 {
		return nil
	}
	y, x, err := c.pair(op, a.Dtype, total, a.Y, a.X)
	if err != nil {
		return err
	}
	vs, err := c.vecs(op, ch, a.Weight, a.Bias, a.RunningMean, a.RunningVar)
	if err != nil {
		return err
	}
	weight, bias, runMean, runVar := vs[0], vs[1], vs[2], vs[3]
	mu, invstd := make([]float64, ch), make([]float64, ch)
	if a.Training {
		count := nb * l
		if count <= 1 {
			return fmt.Errorf("cpucompute: %s on %s: more than 1 value per channel is needed when training", op, c.name)
		}
		saveMean, err := c.opt(op, a.SaveMean, a.StatDtype, ch)
		if err != nil {
			return err
		}
		saveInvstd, err := c.opt(op, a.SaveInvstd, a.StatDtype, ch)
		if err != nil {
			return err
		}
		batchStats(a.Dtype, x, nb, ch, l, mu, invstd) // invstd holds the biased variance for now
		if runMean.data != nil && runVar.data != nil {
			rm, rv := runMean.values(ch, 0), runVar.values(ch, 0)
			unbias := float64(count) / float64(count-1)
			for j := range rm {
				rm[j] = (1-a.Momentum)*rm[j] + a.Momentum*mu[j]
				rv[j] = (1-a.Momentum)*rv[j] + a.Momentum*invstd[j]*unbias
			}
			runMean.write(rm)
			runVar.write(rv)
		}
		invstdOf(invstd, a.Eps)
		if saveMean != nil {
			writeRow(a.StatDtype, saveMean, 0, mu)
		}
		if saveInvstd != nil {
			writeRow(a.StatDtype, saveInvstd, 0, invstd)
		}
	} else {
		if runMean.data == nil || runVar.data == nil {
			return fmt.Errorf("cpucompute: %s on %s: evaluation needs the running statistics", op, c.name)
		}
		mu = runMean.values(ch, 0)
		invstd = runVar.values(ch, 0)
		invstdOf(invstd, a.Eps)
	}
	w, b := weight.values(ch, 1), bias.values(ch, 0)
	row := make([]float64, l)
	channelRows(nb, ch, l, func(off, j int) {
		readRow(a.Dtype, x, off, row)
		for k, v := range row {
			row[k] = (v-mu[j])*invstd[j]*w[j] + b[j]
		}
		writeRow(a.Dtype, y, off, row)
	})
	return nil
}

// batchStats writes the per-channel mean and biased variance of a
// contiguous [nb, c, l] array x.
func batchStats(dt dtypes.Dtype, x []byte, nb, c, l int, mean, variance []float64) {
	row := make([]float64, l)
	count := float64(nb * l)
	channelRows(nb, c, l, func(off, j int) {
		readRow(dt, x, off, row)
		for _, v := range row {
			mean[j] += v
		}
	})
	for j := range mean {
		mean[j] /= count
	}
	channelRows(nb, c, l, func(off, j int) {
		readRow(dt, x, off, row)
		for _, v := range row {
			d := v - mean[j]
			variance[j] += d * d
		}
	})
	for j := range variance {
		variance[j] /= count
	}
}

// BatchNormBackward is native_batch_norm_backward; see
// backend.BatchNormBackwardArgs.
func (c *Compute) BatchNormBackward(_ alloc.Stream, a backend.BatchNormBackwardArgs) error {
	const op = "BatchNormBackward"
	nb, ch, l := a.Batch, a.Channels, a.Length
	total := nb * ch * l
	if total == 0 {
		return nil
	}
	g, x, err := c.pair(op, a.Dtype, total, a.Grad, a.X)
	if err != nil {
		return err
	}
	gx, err := c.opt(op, a.GradX, a.Dtype, total)
	if err != nil {
		return err
	}
	vs, err := c.vecs(op, ch, a.GradWeight, a.GradBias, a.Weight, a.Stat1, a.Stat2)
	if err != nil {
		return err
	}
	gw, gb := vs[0], vs[1]
	if vs[3].data == nil || vs[4].data == nil {
		return fmt.Errorf("cpucompute: %s on %s: both statistics are required", op, c.name)
	}
	w := vs[2].values(ch, 1)
	mu, invstd := vs[3].values(ch, 0), vs[4].values(ch, 0)
	if !a.Training {
		invstdOf(invstd, a.Eps)
	}
	gRow, xRow := make([]float64, l), make([]float64, l)
	sg, sgx := make([]float64, ch), make([]float64, ch) // Σ g, Σ g·x̂ per channel
	channelRows(nb, ch, l, func(off, j int) {
		readRow(a.Dtype, g, off, gRow)
		readRow(a.Dtype, x, off, xRow)
		for k := range gRow {
			sg[j] += gRow[k]
			sgx[j] += gRow[k] * (xRow[k] - mu[j]) * invstd[j]
		}
	})
	if gx != nil {
		count := float64(nb * l)
		channelRows(nb, ch, l, func(off, j int) {
			readRow(a.Dtype, g, off, gRow)
			readRow(a.Dtype, x, off, xRow)
			for k := range gRow {
				if a.Training {
					xh := (xRow[k] - mu[j]) * invstd[j]
					gRow[k] = w[j] * invstd[j] * (gRow[k] - sg[j]/count - xh*sgx[j]/count)
				} else {
					gRow[k] = w[j] * invstd[j] * gRow[k]
				}
			}
			writeRow(a.Dtype, gx, off, gRow)
		})
	}
	if gw.data != nil {
		gw.write(sgx)
	}
	if gb.data != nil {
		gb.write(sg)
	}
	return nil
}

// NLLLoss writes the mean of −logProbs[i, targets[i]].
func (c *Compute) NLLLoss(_ alloc.Stream, dt dtypes.Dtype, out, logProbs, targets uint64, targetDt dtypes.Dtype, rows, n int) error {
	const op = "NLLLoss"
	if targetDt != dtypes.Int64 && targetDt != dtypes.Int32 {
		return fmt.Errorf("cpucompute: %s on %s: targets of %s (want int64 or int32)", op, c.name, targetDt)
	}
	o, err := c.bytes(op, out, dt, 1)
	if err != nil {
		return err
	}
	lp, err := c.bytes(op, logProbs, dt, rows*n)
	if err != nil {
		return err
	}
	tg, err := c.bytes(op, targets, targetDt, rows)
	if err != nil {
		return err
	}
	// One element a row, each a cache miss of its own: a batch of rows'
	// elements is touched before it is summed (touch).
	var sum float64
	var at [touchBatch]int
	for lo := 0; lo < rows; lo += touchBatch {
		batch := at[:min(touchBatch, rows-lo)]
		for i := range batch {
			t := int(dtypes.Load(targetDt, tg, lo+i))
			if t < 0 || t >= n {
				return fmt.Errorf("cpucompute: %s on %s: target %d is out of bounds for %d classes", op, c.name, t, n)
			}
			batch[i] = (lo+i)*n + t
		}
		touch(lp, dt.Size(), batch)
		for _, off := range batch {
			sum -= dtypes.Load(dt, lp, off)
		}
	}
	dtypes.Store(dt, o, 0, sum/float64(rows))
	return nil
}

// The indexed ops (NLLLoss, Gather, ScatterAdd) reach one element wherever
// the index points: a loss over [N, C] reads or writes one element a row,
// and once the rows are larger than the cache each is a miss of its own.
// A core has a miss's successors in flight only as far ahead as its
// reorder buffer reaches, and a loop that loads, converts, adds and stores
// each element in turn fills it within a few elements: the misses come
// nearly one after the other. So these ops work out a batch of touchBatch
// addresses first, touch them in a loop that only loads (a load an
// iteration: dozens of misses in flight at once), then do the batch's
// work in order, from the cache: the same operations in the same order,
// the same bits. At 8192 × 1000 float32, right after the rows were
// written (BenchmarkIndexedMisses, one goroutine, three runs): NLLLoss
// 188–219 → 120–125 µs, Gather 388–406 → 249–261, ScatterAdd 467–486 →
// 267–280 (on two goroutines 292–313 → 175–187); bench-torch's
// cross-entropy forward and backward ran 1.18× as fast (one process,
// 150 calls each way in turn; 1.17× and 1.19× with a first, float32-only
// form of this). Batches of 64 were 5–15 % slower,
// of 1,024 the same. With the rows wholly out of the cache (64 MiB written
// elsewhere before each call) nothing changed that the noise did not
// hide.
const touchBatch = 256

// touch loads one byte of each of the elements at offsets offs (in
// elements of size bytes) of data, so that their cache lines are on their
// way before they are used. It is not inlined: its loads' result is
// unused, and inlined they could be dropped.
//
//go:noinline
func touch(data []byte, size int, offs []int) byte {
	var x byte
	for _, o := range offs {
		x ^= data[o*size]
	}
	return x
}

// forEachPicked calls use(at, otherAt) for each element of shape, in order
// from offsets from (of index, other and along): at is the offset of the
// element of along that index picks (along's strides as indexed returns
// them, with step), otherAt the element's offset in other. A batch of
// picked elements is touched before use sees them.
func forEachPicked(shape, from []int, ix, other, along operand, step int, use func(at, otherAt int)) {
	var at, otherAt [touchBatch]int
	k := 0
	flush := func() {
		touch(along.data, along.dt.Size(), at[:k])
		for i := range k {
			use(at[i], otherAt[i])
		}
		k = 0
	}
	layout.ForEachOffset(shape, from, [][]int{ix.strides, other.strides, along.strides}, func(_ int, o []int) {
		at[k] = o[2] + int(dtypes.Load(ix.dt, ix.data, o[0]))*step
		otherAt[k] = o[1]
		if k++; k == touchBatch {
			flush()
		}
	})
	flush()
}

// indexed resolves the operands of Gather and ScatterAdd: index and other
// (the operand of index's shape) over shape, and along (the operand
// indexed along dim) over shape with dim as large as the largest index
// needs. It returns along's strides with dim's set to 0 and its step.
func (c *Compute) indexed(op string, shape []int, dim int, index, other, along backend.Strided) (ix, ot, al operand, step int, err error) {
	if dim < 0 || dim >= len(shape) || (index.Dtype != dtypes.Int64 && index.Dtype != dtypes.Int32) {
		return ix, ot, al, 0, fmt.Errorf("cpucompute: %s on %s: dim %d of a %d-d shape, %s index", op, c.name, dim, len(shape), index.Dtype)
	}
	if ix, err = c.strided(op, shape, index); err != nil || ix.data == nil {
		return ix, ot, al, 0, err
	}
	if ot, err = c.strided(op, shape, other); err != nil {
		return ix, ot, al, 0, err
	}
	top, bottom := -1, 0
	layout.ForEachOffset(shape, []int{0}, [][]int{ix.strides}, func(_ int, o []int) {
		j := int(dtypes.Load(ix.dt, ix.data, o[0]))
		top, bottom = max(top, j), min(bottom, j)
	})
	if bottom < 0 {
		return ix, ot, al, 0, fmt.Errorf("cpucompute: %s on %s: index %d is negative", op, c.name, bottom)
	}
	if top < 0 {
		top = 0
	}
	ashape := slices.Clone(shape)
	ashape[dim] = top + 1
	if al, err = c.strided(op, ashape, along); err != nil {
		return ix, ot, al, 0, err
	}
	step = al.strides[dim]
	al.strides = slices.Clone(al.strides)
	al.strides[dim] = 0
	return ix, ot, al, step, nil
}

// Gather writes dst[i] = src[i with i[dim] replaced by index[i]].
func (c *Compute) Gather(_ alloc.Stream, shape []int, dim int, dst, src, index backend.Strided) error {
	ix, d, s, step, err := c.indexed("Gather", shape, dim, index, dst, src)
	if err != nil || ix.data == nil {
		return err
	}
	forEachPicked(shape, []int{0, 0, 0}, ix, d, s, step, func(at, dstAt int) {
		dtypes.Store(d.dt, d.data, dstAt, dtypes.Load(s.dt, s.data, at))
	})
	return nil
}

// ScatterAdd adds src[i] into dst[i with i[dim] replaced by index[i]].
func (c *Compute) ScatterAdd(_ alloc.Stream, shape []int, dim int, dst, index, src backend.Strided) error {
	ix, s, d, step, err := c.indexed("ScatterAdd", shape, dim, index, src, dst)
	if err != nil || ix.data == nil {
		return err
	}
	// lines adds the elements whose first index is in [lo, hi), in order.
	lines := func(lo, hi int) {
		part := slices.Clone(shape)
		part[0] = hi - lo
		from := []int{lo * ix.strides[0], lo * s.strides[0], lo * d.strides[0]}
		forEachPicked(part, from, ix, s, d, step, func(at, srcAt int) {
			dtypes.Store(d.dt, d.data, at, dtypes.Load(d.dt, d.data, at)+dtypes.Load(s.dt, s.data, srcAt))
		})
	}
	if !scatterLinesApart(shape, dim, d, s, ix) {
		lines(0, shape[0])
		return nil
	}
	// Each element is a cache miss of its own (a loss's backward adds
	// −1 at each row's target, one row apart), so the lines go to the
	// kernels' goroutines: every destination element still gets its
	// additions in the same order, from one goroutine.
	per := numel(shape) / shape[0]
	kernels.ParallelFor(shape[0], max(1, scatterMinPer/max(1, per)), lines)
	return nil
}

// scatterMinPer is how many elements of a ScatterAdd are worth one more
// goroutine: each is a miss, about 35 ns even touched a batch at a time
// (8192 rows of 1000 classes: 0.27 ms on one goroutine, 0.18 on two).
const scatterMinPer = 2048

// scatterLinesApart reports whether ScatterAdd may give the lines of
// dimension 0 (dim is another) to different goroutines: the destination
// elements of one line are never another's (its stride along dimension 0
// passes everything else a line reaches, the largest index included), and
// dst shares no memory with src or index.
func scatterLinesApart(shape []int, dim int, d, s, ix operand) bool {
	if dim == 0 || shape[0] < 2 || numel(shape) < 2*scatterMinPer || overlap(d.data, s.data) || overlap(d.data, ix.data) {
		return false
	}
	// d.data holds the destination's extent: 1 + (shape[0]-1)·stride0
	// plus what one line reaches beyond its first element.
	reach := len(d.data)/d.dt.Size() - 1 - (shape[0]-1)*d.strides[0]
	return d.strides[0] > reach
}
