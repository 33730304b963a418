// Package nntest holds the fixtures that the tests of nn and of the
// packages built on it (optim, nn/sketch) share: seeded tensor options,
// a model's state as plain values, a backward pass, and the files of the
// LoadFile fuzz tests.
package nntest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/gpumem/course/gpukit/device"
	"github.com/gpumem/course/gpukit/nn"
	"github.com/gpumem/course/gpukit/tensor"
)

// Seeded returns the options of a tensor on dev whose random values come
// from a generator of its own seeded with seed, followed by opts: the
// same seed gives the same values.
func Seeded(dev *device.Device, seed uint64, opts ...tensor.Option) []tensor.Option {
	return append([]tensor.Option{tensor.On(dev), tensor.WithGenerator(tensor.NewGenerator(seed))}, opts...)
}

// F64 is Seeded for float64 tensors, the dtype of gradient checks.
func F64(dev *device.Device, seed uint64) []tensor.Option {
	return Seeded(dev, seed, tensor.Float64)
}

// StateValues returns the values of m's state dict by name: two models
// hold the same state when their StateValues are equal.
func StateValues(m nn.Module) map[string][]float64 {
	out := map[string][]float64{}
	for _, n := range nn.StateDict(m) {
		out[n.Name] = n.Tensor.Float64s()
	}
	return out
}

// SumBackward runs m on x and backward from the sum of the output, then
// releases the output and the loss: what stays is the gradients (and
// what the first product took, cuBLAS's workspace).
func SumBackward(m nn.Module, x *tensor.Tensor) {
	y := m.Forward(x)
	loss := y.Sum()
	loss.Backward()
	loss.Release()
	y.Release()
}

// AddSavedFile adds to f's corpus the bytes that save writes to a file.
func AddSavedFile(f *testing.F, save func(path string) error) {
	f.Helper()
	path := filepath.Join(f.TempDir(), "seed.safetensors")
	if err := save(path); err != nil {
		f.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
}

// WriteTemp writes b to a file name in a fresh temporary directory of t
// and returns its path.
func WriteTemp(t testing.TB, name string, b []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}
