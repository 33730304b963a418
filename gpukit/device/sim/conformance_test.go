package sim_test

import (
	"testing"

	"github.com/gpumem/course/gpukit/alloc"
	"github.com/gpumem/course/gpukit/alloc/alloctest"
	"github.com/gpumem/course/gpukit/device/backend"
	"github.com/gpumem/course/gpukit/device/sim"
)

func withCapacity(capacity int64) backend.Profile {
	p, _ := backend.LookupProfile("classroom")
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
