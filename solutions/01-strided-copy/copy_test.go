package strided

import (
	"bytes"
	"testing"

	"github.com/gpumem/course/gpukit/device"
	"github.com/gpumem/course/gpukit/device/sim"
	"github.com/gpumem/course/gpukit/tensor"
)

// newDevice opens a private simulated classroom card.
func newDevice(t *testing.T) *device.Device {
	t.Helper()
	p, err := device.LookupProfile("classroom")
	if err != nil {
		t.Fatal(err)
	}
	d, err := device.New(sim.New(0, p))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// counting returns n bytes 0, 1, 2, ...: byte i of an array of one-byte
// items is item i, which makes expected results easy to write.
func counting(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i)
	}
	return b
}

func TestCopyStridedBasics(t *testing.T) {
	src := counting(12) // a 3×4 matrix of one-byte items
	for _, c := range []struct {
		name           string
		shape, strides []int
		offset         int
		want           []byte
	}{
		{"contiguous", []int{3, 4}, []int{4, 1}, 0, counting(12)},
		{"transpose", []int{4, 3}, []int{1, 4}, 0, []byte{0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11}},
		{"rows 1-2, every other column from 1", []int{2, 2}, []int{4, 2}, 5, []byte{5, 7, 9, 11}},
	} {
		dst := make([]byte, len(c.want))
		if err := CopyStrided(dst, src, 1, c.shape, c.strides, c.offset); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !bytes.Equal(dst, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, dst, c.want)
		}
	}
}

func TestContiguousTensor(t *testing.T) {
	dev := newDevice(t)
	m := tensor.Randn([]int{30, 40}, tensor.On(dev))
	tr := m.T()
	before := dev.Stats()["allocation.all.allocated"]
	c, err := Contiguous(tr)
	if err != nil {
		t.Fatal(err)
	}
	if n := dev.Stats()["allocation.all.allocated"] - before; n != 1 {
		t.Errorf("Contiguous made %d allocations, want 1 (the result)", n)
	}
	if !c.IsContiguous() || c.SameStorage(m) {
		t.Errorf("the result must be contiguous (%v) on its own storage (shares: %v)", c.IsContiguous(), c.SameStorage(m))
	}
	for _, ij := range [][2]int{{0, 0}, {3, 7}, {39, 29}} {
		if got, want := c.At(ij[0], ij[1]), tr.At(ij[0], ij[1]); got != want {
			t.Errorf("element %v: got %g, want %g", ij, got, want)
		}
	}
}

// BenchmarkCopyStrided compares the contiguous fast path with a transposed
// layout of the same 1000×1000 float32 matrix:
// go test -run '^$' -bench . -benchtime 20x
func BenchmarkCopyStrided(b *testing.B) {
	const n = 1000
	src, dst := make([]byte, 4*n*n), make([]byte, 4*n*n)
	for _, c := range []struct {
		name    string
		strides []int
	}{{"contiguous", []int{n, 1}}, {"transposed", []int{1, n}}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(dst)))
			for b.Loop() {
				if err := CopyStrided(dst, src, 4, []int{n, n}, c.strides, 0); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
