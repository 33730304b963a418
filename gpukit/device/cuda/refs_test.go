//go:build cuda || nvrtc

package cuda

// References for BatchNorm: the CPU Compute that sim and the host use
// (gpukit/device/cpucompute), in float64 on Go slices, for the emulation
// tests (nvrtc) and the GPU tests (cuda).

import (
	"encoding/binary"
	"math"
	"slices"

	"github.com/gpumem/course/gpukit/device/backend"
	"github.com/gpumem/course/gpukit/device/cpucompute"
	"github.com/gpumem/course/gpukit/dtypes"
	"github.com/gpumem/course/gpukit/kernels"
)

// refHeap is a cpucompute.Memory of float64 slices at made-up addresses.
type refHeap struct {
	bufs [][]byte
}

const refBase = 1 << 32 // the address of buffer i is refBase·(i+1)

func (h *refHeap) Bytes(addr uint64, n int64) []byte {
	i := int(addr/refBase) - 1
	if i < 0 || i >= len(h.bufs) {
		return nil
	}
	off := addr % refBase
	if off+uint64(n) > uint64(len(h.bufs[i])) {
		return nil
	}
	return h.bufs[i][off : off+uint64(n)]
}

// put stores v and returns its address; vec and contiguous its operands.
func (h *refHeap) put(v []float64) uint64 {
	b := make([]byte, 8*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint64(b[8*i:], math.Float64bits(x))
	}
	h.bufs = append(h.bufs, b)
	return refBase * uint64(len(h.bufs))
}

func (h *refHeap) vec(v []float64) backend.Strided {
	return backend.Strided{Addr: h.put(v), Dtype: dtypes.Float64, Strides: []int{1}}
}

// get reads n float64s at addr.
func (h *refHeap) get(addr uint64, n int) []float64 {
	b := h.Bytes(addr, int64(8*n))
	out := make([]float64, n)
	for i := range out {
		out[i] = math.Float64frombits(binary.LittleEndian.Uint64(b[8*i:]))
	}
	return out
}

// batchNormRef is cpucompute's BatchNorm on [nb, c, l] in float64; in
// training it updates rm and rv in place.
func batchNormRef(x, w, b, rm, rv []float64, nb, c, l int, training bool, momentum, eps float64) (y, mu, invstd []float64) {
	h := &refHeap{}
	a := backend.BatchNormArgs{
		Dtype: dtypes.Float64, Y: h.put(make([]float64, len(x))), X: h.put(x), Batch: nb, Channels: c, Length: l,
		Weight: h.vec(w), Bias: h.vec(b), RunningMean: h.vec(rm), RunningVar: h.vec(rv),
		SaveMean: h.put(make([]float64, c)), SaveInvstd: h.put(make([]float64, c)), StatDtype: dtypes.Float64,
		Training: training, Momentum: momentum, Eps: eps,
	}
	if err := cpucompute.New("ref", h).BatchNorm(0, a); err != nil {
		panic(err)
	}
	if !training { // eval: the statistics used are the running ones
		mu, invstd = slices.Clone(rm), make([]float64, c)
		for j, v := range rv {
			invstd[j] = 1 / math.Sqrt(v+eps)
		}
	} else {
		mu, invstd = h.get(a.SaveMean, c), h.get(a.SaveInvstd, c)
		copy(rm, h.get(a.RunningMean.Addr, c))
		copy(rv, h.get(a.RunningVar.Addr, c))
	}
	return h.get(a.Y, len(x)), mu, invstd
}

// batchNormBackwardRef is cpucompute's BatchNormBackward in float64: mu
// and invstd are save_mean and save_invstd in training, running_mean and
// running_var in evaluation.
func batchNormBackwardRef(g, x, w, mu, invstd []float64, nb, c, l int, training bool, eps float64) (dx, dw, db []float64) {
	h := &refHeap{}
	a := backend.BatchNormBackwardArgs{
		Dtype: dtypes.Float64, Grad: h.put(g), X: h.put(x), Batch: nb, Channels: c, Length: l,
		GradX: h.put(make([]float64, len(x))), GradWeight: h.vec(make([]float64, c)), GradBias: h.vec(make([]float64, c)),
		Weight: h.vec(w), Stat1: h.vec(mu), Stat2: h.vec(invstd), Training: training, Eps: eps,
	}
	if err := cpucompute.New("ref", h).BatchNormBackward(0, a); err != nil {
		panic(err)
	}
	return h.get(a.GradX, len(x)), h.get(a.GradWeight.Addr, c), h.get(a.GradBias.Addr, c)
}

func toF64[T kernels.Float](v []T) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(x)
	}
	return out
}

func fromF64[T kernels.Float](v []float64) []T {
	out := make([]T, len(v))
	for i, x := range v {
		out[i] = T(x)
	}
	return out
}
