package alloc_test

import (
	"testing"

	"github.com/gpumem/course/gpukit/alloc"
	"github.com/gpumem/course/gpukit/alloc/alloctest"
)

func TestConformanceFake(t *testing.T) {
	alloctest.Run(t, func(t *testing.T, capacity int64) alloc.Memory {
		return alloc.NewFakeMemory(capacity)
	})
}

func TestConformanceFakeAutoComplete(t *testing.T) {
	alloctest.Run(t, func(t *testing.T, capacity int64) alloc.Memory {
		m := alloc.NewFakeMemory(capacity)
		m.AutoComplete = true
		return m
	})
}

// TestDifferential300 compares the allocator with alloctest's independent
// model of PyTorch's policy on 300 random traces, the number of the traces
// that found the garbage-collection rule of issue 8.
func TestDifferential300(t *testing.T) {
	alloctest.Differential(t, func(t *testing.T, capacity int64) alloc.Memory {
		return alloc.NewFakeMemory(capacity)
	}, 300)
}
