package cpucompute

import (
	"github.com/gpumem/course/gpukit/alloc"
	"github.com/gpumem/course/gpukit/device/backend"
	"github.com/gpumem/course/gpukit/dtypes"
	"github.com/gpumem/course/gpukit/kernels"
	"github.com/gpumem/course/gpukit/ops"
)

// The optimizer step: Adam.

// Adam applies one Adam step; float32 and float64 only.
func (c *Compute) Adam(_ alloc.Stream, dt dtypes.Dtype, p, g, m, v uint64, n int, sc ops.AdamScalars) error {
	if dt != f32t && dt != f64t {
		return &backend.UnsupportedError{Backend: c.name, Op: "Adam", Dtype: dt}
	}
	var bs [4][]byte
	for i, addr := range []uint64{p, g, m, v} {
		b, err := c.bytes("Adam", addr, dt, n)
		if err != nil || b == nil {
			return err
		}
		bs[i] = b
	}
	if dt == f32t {
		f := func(b []byte) []float32 { return kernels.Float32s(b)[:n] }
		kernels.AdamUpdate(f(bs[0]), f(bs[1]), f(bs[2]), f(bs[3]), sc)
	} else {
		f := func(b []byte) []float64 { return kernels.Float64s(b)[:n] }
		kernels.AdamUpdate(f(bs[0]), f(bs[1]), f(bs[2]), f(bs[3]), sc)
	}
	return nil
}
