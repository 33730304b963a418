package sim_test

import (
	"slices"
	"testing"

	"github.com/gpumem/course/gpukit/alloc"
	"github.com/gpumem/course/gpukit/alloc/alloctest"
	"github.com/gpumem/course/gpukit/device/computetest"
	"github.com/gpumem/course/gpukit/device/profile"
	"github.com/gpumem/course/gpukit/device/sim"
)

func withCapacity(capacity int64) profile.Profile {
	p, _ := profile.LookupProfile("classroom")
	p = p.Resized(capacity) // the suite needs exactly capacity bytes for segments
	p.Name = "conformance"
	return p
}

// TestConformance runs the caching allocator's conformance suite on the sim
// backend, with and without backing bytes.
func TestConformance(t *testing.T) {
	t.Run("sim", func(t *testing.T) {
		alloctest.Run(t, func(t *testing.T, capacity int64) alloc.Memory {
			return sim.New(0, withCapacity(capacity))
		})
	})
	t.Run("meta", func(t *testing.T) {
		alloctest.Run(t, func(t *testing.T, capacity int64) alloc.Memory {
			return sim.NewMeta(0, withCapacity(capacity))
		})
	})
}

// TestComputeConformance runs the Compute conformance suite on the sim
// backend (the CPU kernels on its memory): it lacks only Adam outside
// float32 and float64, which gpukit/tensor composes from elementwise ops.
func TestComputeConformance(t *testing.T) {
	b := sim.New(0, withCapacity(64<<20))
	missing := computetest.Run(t, b, b)
	var want []computetest.Missing
	for _, dt := range computetest.Dtypes[2:] {
		want = append(want, computetest.Missing{Method: "Adam", Dtype: dt})
	}
	if !slices.Equal(missing, want) {
		t.Errorf("sim lacks %v, want %v", missing, want)
	}
}
