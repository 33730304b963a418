// Package simtest gives gpukit's tests a simulated card of their own.
package simtest

import (
	"testing"

	"github.com/gpumem/course/gpukit/device"
	"github.com/gpumem/course/gpukit/device/sim"
)

// Device is a fresh classroom card named sim:index. It is not the one
// device.Open("sim:index") shares, so each test starts from an empty
// allocator and a clock at zero.
func Device(t testing.TB, index int) *device.Device {
	t.Helper()
	p, err := device.LookupProfile("classroom")
	if err != nil {
		t.Fatal(err)
	}
	d, err := device.New(sim.New(index, p))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// WarmBlas takes d's cuBLAS workspace for its default stream, as the first
// matrix product on it would (device.BlasWorkspace), and returns the bytes
// allocated afterwards: a test that counts the bytes of tensors measures
// from there, and expects that much to stay once its tensors are gone.
func WarmBlas(t testing.TB, d *device.Device) int64 {
	t.Helper()
	if err := d.BlasWorkspace(d.DefaultStream()); err != nil {
		t.Fatal(err)
	}
	return d.MemoryAllocated()
}
