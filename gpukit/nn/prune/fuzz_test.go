package prune_test

import (
	"math"
	"testing"

	"github.com/gpumem/course/gpukit/device/simtest"
	"github.com/gpumem/course/gpukit/nn"
	"github.com/gpumem/course/gpukit/nn/prune"
	"github.com/gpumem/course/gpukit/tensor"
)

// FuzzPrune prunes a small Linear by any amount, structured or not, twice,
// then removes the pruning: an accepted amount zeroes exactly the entries
// it says, a refused one changes nothing, and Remove returns the memory
// to the dense size.
func FuzzPrune(f *testing.F) {
	f.Add(uint8(3), uint8(4), 0.5, int16(2), true, uint8(0))
	f.Add(uint8(1), uint8(1), 1.5, int16(-1), false, uint8(1))
	f.Add(uint8(5), uint8(2), math.NaN(), int16(11), true, uint8(2))
	dev := simtest.Card(f)
	f.Fuzz(func(t *testing.T, rows, cols uint8, frac float64, count int16, useCount bool, method uint8) {
		r, c := int(rows%6)+1, int(cols%6)+1
		l := nn.NewLinear(c, r, false, tensor.On(dev), tensor.WithGenerator(tensor.NewGenerator(uint64(rows)*7+uint64(cols))))
		defer nn.Release(l)
		dense := dev.MemoryAllocated()
		amount := prune.Fraction(frac)
		if useCount {
			amount = prune.Count(int(count))
		}
		var m nn.Module = l
		zeros := 0
		for range 2 {
			var p *prune.Pruned
			var err error
			before := dev.MemoryAllocated()
			switch method % 3 {
			case 0:
				p, err = prune.L1Unstructured(m, "weight", amount)
			case 1:
				p, err = prune.RandomUnstructured(m, "weight", amount, tensor.NewGenerator(1))
			default:
				p, err = prune.LnStructured(m, "weight", amount, 2, 0)
			}
			if err != nil {
				if dev.MemoryAllocated() != before {
					t.Fatalf("refused pruning changed memory: %v", err)
				}
				break
			}
			m = p
			got := 0
			for _, v := range p.Mask("weight").Float64s() {
				if v == 0 {
					got++
				}
			}
			if got < zeros {
				t.Fatalf("pruning again unpruned entries: %d zeros after %d", got, zeros)
			}
			zeros = got
		}
		if p, ok := m.(*prune.Pruned); ok {
			if _, err := prune.Remove(p, "weight"); err != nil {
				t.Fatal(err)
			}
		}
		if dev.MemoryAllocated() != dense {
			t.Fatalf("after Remove %d bytes allocated, dense %d", dev.MemoryAllocated(), dense)
		}
	})
}
