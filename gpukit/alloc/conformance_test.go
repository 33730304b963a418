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
