package tensor_test

import (
	"math"
	"testing"

	"github.com/gpumem/course/gpukit/device"
	"github.com/gpumem/course/gpukit/device/simtest"
	"github.com/gpumem/course/gpukit/tensor"
)

// newDev returns a private classroom card (outside the registry), so that
// each test sees its own allocator statistics.
func newDev(t testing.TB) *device.Device {
	t.Helper()
	return simtest.Card(t)
}

// newDevCap is newDev with a made-up capacity in bytes.
func newDevCap(t testing.TB, capacity int64) *device.Device {
	t.Helper()
	return simtest.Card(t, simtest.Capacity(capacity), simtest.Named("tiny"))
}

// newMeta returns a private meta device.
func newMeta(t testing.TB) *device.Device {
	t.Helper()
	return simtest.Card(t, simtest.Profile("h100-80gb"), simtest.Meta())
}

func allocations(d *device.Device) int64 { return d.Stats()["allocation.all.allocated"] }

// panicMsg returns the message of the *tensor.Error that fn panics with
// ("" if it does not panic).
func panicMsg(fn func()) string {
	err := tensor.Try(fn)
	if err == nil {
		return ""
	}
	return err.Error()
}

func f64(dev *device.Device, data []float64, shape ...int) *tensor.Tensor {
	return tensor.FromSlice(data, shape, tensor.On(dev))
}

func i64s(dev *device.Device, data ...int64) *tensor.Tensor {
	return tensor.FromSlice(data, []int{len(data)}, tensor.On(dev))
}

func exp(x float64) float64 { return math.Exp(x) }
func abs(x float64) float64 { return math.Abs(x) }
