package device_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpumem/course/gpukit/device"
	"github.com/gpumem/course/gpukit/device/computetest"
	"github.com/gpumem/course/gpukit/device/simtest"
)

// TestHostComputeConformance runs the Compute suite on HostCompute, which
// resolves real pointers.
func TestHostComputeConformance(t *testing.T) {
	h := computetest.NewPointerHeap()
	c := device.HostCompute()
	for _, m := range computetest.Run(t, c, h) {
		if m.Method != "Adam" {
			t.Errorf("the host lacks %v", m)
		}
	}
}

// noCompute is a backend that computes nothing: only Backend's methods of
// the sim card it wraps.
type noCompute struct{ device.Backend }

func TestDeviceCompute(t *testing.T) {
	for _, c := range []struct {
		name string
		dev  *device.Device
		want bool
	}{
		{"sim", simtest.Card(t), true},
		{"meta", simtest.Card(t, simtest.Meta()), true},
		{"custom without kernels", mustNew(t, noCompute{simtest.Card(t).Backend()}), false},
	} {
		assert.Equal(t, c.want, c.dev.Compute() != nil, c.name)
	}
}

func mustNew(t *testing.T, b device.Backend) *device.Device {
	t.Helper()
	d, err := device.New(b)
	require.NoError(t, err)
	return d
}
