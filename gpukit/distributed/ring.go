package distributed

import (
	"github.com/gpumem/course/gpukit/dtypes"
	"github.com/gpumem/course/gpukit/tensor"
)

// The values of the collectives on sim cards. They follow the ring's
// schedule step by step, so the sums are added in the ring's order and
// rounded to the tensors' dtype after every addition, as NCCL's kernels
// round: a float16 all-reduce is not the float64 sum rounded once. The
// bytes are read and written in the cards' memory directly, the way a
// collective's kernel writes them; meta cards have no values to move.

// elems is a rank's flat tensor as float64 values, with its dtype's
// rounding.
type elems struct {
	t    *tensor.Tensor
	data []byte // the tensor's bytes in the card's memory
	size int
	dt   tensor.Dtype
}

func view(t *tensor.Tensor) (elems, bool) {
	if t.IsMeta() {
		return elems{}, false
	}
	sz := t.Dtype().Size()
	b := t.Storage().Bytes()
	off := t.StorageOffset() * sz
	return elems{t: t, data: b[off : off+t.Numel()*sz], size: sz, dt: t.Dtype()}, true
}

func (e elems) get(i int) float64 { return dtypes.Load(dtypes.Dtype(e.dt), e.data, i) }

func (e elems) set(i int, v float64) { dtypes.Store(dtypes.Dtype(e.dt), e.data, i, v) }

// round rounds v to dtype dt.
func round(dt tensor.Dtype, v float64) float64 { return dtypes.Round(dtypes.Dtype(dt), v) }

func views(ts []*tensor.Tensor) ([]elems, bool) {
	out := make([]elems, len(ts))
	for r, t := range ts {
		var ok bool
		if out[r], ok = view(t); !ok {
			return nil, false
		}
	}
	return out, true
}

// bounds returns chunk c's element range when n elements are cut into N
// chunks of ceil(n/N) (the last ones shorter or empty).
func bounds(n, N, c int) (lo, hi int) {
	k := (n + N - 1) / N
	lo, hi = min(c*k, n), min((c+1)*k, n)
	return lo, hi
}

// reduceScatterValues runs the ring's reduce-scatter phase on host
// copies of the inputs: at step s, rank r sends its partial sum of chunk
// (r-s-1) mod N to rank r+1, which adds its own chunk. After N-1 steps
// rank r holds the sum of chunk r, in the order x[r+1] + x[r+2] + … +
// x[r], rounded after each addition. It returns each rank's partials.
func reduceScatterValues(in []elems, n int) [][]float64 {
	N := len(in)
	part := make([][]float64, N)
	for r := range part {
		part[r] = make([]float64, n)
		for i := range n {
			part[r][i] = in[r].get(i)
		}
	}
	dt := in[0].dt
	for s := range N - 1 {
		// Every rank sends before any adds: a step moves the partials of
		// the previous step.
		sent := make([][]float64, N)
		for r := range N {
			c := ((r-s-1)%N + N) % N
			lo, hi := bounds(n, N, c)
			sent[(r+1)%N] = append([]float64(nil), part[r][lo:hi]...)
		}
		for q := range N {
			c := ((q-1-s-1)%N + N) % N
			lo, _ := bounds(n, N, c)
			for i, v := range sent[q] {
				part[q][lo+i] = round(dt, v+part[q][lo+i])
			}
		}
	}
	return part
}

func ringAllReduce(ts []*tensor.Tensor) {
	x, ok := views(ts)
	if !ok {
		return
	}
	N, n := len(ts), ts[0].Numel()
	part := reduceScatterValues(x, n)
	// All-gather phase: chunk c, complete on rank c, travels round the
	// ring; every rank ends with every chunk as rank c computed it.
	for r := range N {
		for c := range N {
			lo, hi := bounds(n, N, c)
			for i := lo; i < hi; i++ {
				x[r].set(i, part[c][i])
			}
		}
	}
}

func ringReduceScatter(out, in []*tensor.Tensor) {
	x, ok := views(in)
	if !ok {
		return
	}
	y, _ := views(out)
	N, k := len(in), out[0].Numel()
	part := reduceScatterValues(x, N*k)
	for r := range N {
		for i := range k {
			y[r].set(i, part[r][r*k+i])
		}
	}
}

func ringAllGather(out, in []*tensor.Tensor) {
	x, ok := views(in)
	if !ok {
		return
	}
	y, _ := views(out)
	N, k := len(in), in[0].Numel()
	vals := make([][]float64, N) // read every input before writing (in place)
	for r := range N {
		vals[r] = make([]float64, k)
		for i := range k {
			vals[r][i] = x[r].get(i)
		}
	}
	for r := range N {
		for c := range N {
			for i, v := range vals[c] {
				y[r].set(c*k+i, v)
			}
		}
	}
}

func ringBroadcast(ts []*tensor.Tensor, root int) {
	x, ok := views(ts)
	if !ok {
		return
	}
	for r := range ts {
		if r != root {
			copy(x[r].data, x[root].data)
		}
	}
}
