package cpucompute_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gpumem/course/gpukit/device/backend"
	"github.com/gpumem/course/gpukit/device/computetest"
	"github.com/gpumem/course/gpukit/device/cpucompute"
	"github.com/gpumem/course/gpukit/dtypes"
)

// lossRows is a [rows, classes] array of dtype dt with one target a row,
// on a Heap: the operands of a loss's NLLLoss, its Gather and its
// backward's ScatterAdd.
type lossRows struct {
	h                          *computetest.Heap
	c                          *cpucompute.Compute
	rows, classes              int
	dt, tdt                    dtypes.Dtype
	data, targets, picked, out uint64
}

func newLossRows(rows, classes int, dt, tdt dtypes.Dtype) *lossRows {
	h := computetest.NewHeap()
	r := &lossRows{h: h, c: cpucompute.New("heap:0", h), rows: rows, classes: classes, dt: dt, tdt: tdt}
	r.data, _ = h.Malloc(int64(rows * classes * dt.Size()))
	r.targets, _ = h.Malloc(int64(rows * tdt.Size()))
	r.picked, _ = h.Malloc(int64(rows * dt.Size()))
	r.out, _ = h.Malloc(int64(dt.Size()))
	data := h.Bytes(r.data, int64(rows*classes*dt.Size()))
	for i := range rows * classes {
		// values whose float32 sums round differently in another order
		dtypes.Store(dt, data, i, -math.Log(1+float64(i%977)*0.37))
	}
	tg := h.Bytes(r.targets, int64(rows*tdt.Size()))
	for i := range rows {
		dtypes.Store(tdt, tg, i, float64((i*7919+i/3)%classes))
	}
	return r
}

func (r *lossRows) target(i int) int {
	return int(dtypes.Load(r.tdt, r.h.Bytes(r.targets, int64(r.rows*r.tdt.Size())), i))
}

func (r *lossRows) at(i, j int) float64 {
	return dtypes.Load(r.dt, r.h.Bytes(r.data, int64(r.rows*r.classes*r.dt.Size())), i*r.classes+j)
}

func (r *lossRows) nllLoss() error {
	return r.c.NLLLoss(0, r.dt, r.out, r.data, r.targets, r.tdt, r.rows, r.classes)
}

// gather picks each row's target into picked ([rows, 1]).
func (r *lossRows) gather() error {
	return r.c.Gather(0, []int{r.rows, 1}, 1,
		backend.Strided{Addr: r.picked, Dtype: r.dt, Strides: []int{1, 1}},
		backend.Strided{Addr: r.data, Dtype: r.dt, Strides: []int{r.classes, 1}},
		backend.Strided{Addr: r.targets, Dtype: r.tdt, Strides: []int{1, 1}})
}

// scatterAdd adds picked into each row's target.
func (r *lossRows) scatterAdd() error {
	return r.c.ScatterAdd(0, []int{r.rows, 1}, 1,
		backend.Strided{Addr: r.data, Dtype: r.dt, Strides: []int{r.classes, 1}},
		backend.Strided{Addr: r.targets, Dtype: r.tdt, Strides: []int{1, 1}},
		backend.Strided{Addr: r.picked, Dtype: r.dt, Strides: []int{1, 1}})
}

// TestIndexedBatchesMatchOneLoop: NLLLoss, Gather and ScatterAdd touch
// their elements a batch at a time before they use them; on either side
// of a batch's edge the results are bit for bit those of one loop over
// the rows in order (NLLLoss's float64 sum of float32 values shows an
// order change).
func TestIndexedBatchesMatchOneLoop(t *testing.T) {
	for _, rows := range []int{1, 255, 256, 257, 1000} {
		for _, dt := range []dtypes.Dtype{dtypes.Float32, dtypes.Float64, dtypes.BFloat16} {
			for _, tdt := range []dtypes.Dtype{dtypes.Int64, dtypes.Int32} {
				t.Run(fmt.Sprintf("%d rows %s %s", rows, dt, tdt), func(t *testing.T) {
					r := newLossRows(rows, 37, dt, tdt)
					var sum float64
					for i := range rows {
						sum -= r.at(i, r.target(i))
					}
					require.NoError(t, r.nllLoss())
					require.Equal(t, dtypes.Round(dt, sum/float64(rows)), dtypes.Load(dt, r.h.Bytes(r.out, int64(dt.Size())), 0), "NLLLoss")

					require.NoError(t, r.gather())
					picked := r.h.Bytes(r.picked, int64(rows*dt.Size()))
					want := make([]float64, rows)
					for i := range rows {
						want[i] = r.at(i, r.target(i))
						require.Equal(t, want[i], dtypes.Load(dt, picked, i), "Gather row %d", i)
					}

					require.NoError(t, r.scatterAdd())
					for i := range rows {
						require.Equal(t, dtypes.Round(dt, want[i]+want[i]), r.at(i, r.target(i)), "ScatterAdd row %d", i)
					}
				})
			}
		}
	}
}

// BenchmarkIndexedMisses: the indexed ops of a loss over 8192 × 1000
// float32 (bench-torch's cross-entropy) right after the rows were written,
// as the log-softmax leaves them: each call is preceded, untimed, by
// copying the 32 MiB of rows from a copy of theirs, so the cache holds the
// last of both and one element a row is mostly a miss. ScatterAdd gives
// its rows to the kernels' goroutines when there are more (-cpu 2).
func BenchmarkIndexedMisses(b *testing.B) {
	r := newLossRows(8192, 1000, dtypes.Float32, dtypes.Int64)
	rows := r.h.Bytes(r.data, int64(r.rows*r.classes*r.dt.Size()))
	saved := append([]byte(nil), rows...)
	for _, op := range []struct {
		name string
		call func() error
	}{{"NLLLoss", r.nllLoss}, {"Gather", r.gather}, {"ScatterAdd", r.scatterAdd}} {
		b.Run(op.name, func(b *testing.B) {
			for range b.N {
				b.StopTimer()
				copy(rows, saved)
				b.StartTimer()
				if err := op.call(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
