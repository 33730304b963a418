package profiler_test

import (
	"testing"

	"github.com/gpumem/course/gpukit/profiler"
	"github.com/gpumem/course/gpukit/tensor"
)

// FuzzTimelineAddsUp drives random sequences of allocations, ops,
// releases and phase ranges, and checks the profile's invariants: the
// categories add up to allocated memory at every point, and each
// phase's peak equals the allocator's peak counter reset at the phase's
// start.
func FuzzTimelineAddsUp(f *testing.F) {
	f.Add([]byte{0, 10, 1, 3, 2, 4, 5, 6, 0, 200, 3, 7})
	f.Add([]byte{4, 0, 1, 0, 2, 5, 4, 1, 3, 3, 5})
	f.Fuzz(func(t *testing.T, prog []byte) {
		if len(prog) > 64 {
			prog = prog[:64]
		}
		d := newDev(t)
		base := tensor.Ones([]int{8}, tensor.On(d))
		base.SetRequiresGrad(true)
		p, err := profiler.Start(profiler.Options{})
		if err != nil {
			t.Fatal(err)
		}
		var live []*tensor.Tensor
		var end func()
		phaseName := ""
		allocatorPeak := map[string]int64{}
		closePhase := func() {
			if end != nil {
				end()
				allocatorPeak[phaseName] = max(allocatorPeak[phaseName], d.MaxMemoryAllocated())
				end = nil
			}
		}
		for i := 0; i < len(prog); i++ {
			arg := 0
			if i+1 < len(prog) {
				arg = int(prog[i+1])
			}
			switch prog[i] % 6 {
			case 0: // a new tensor of 1..256 KiB
				live = append(live, tensor.Zeros([]int{(arg + 1) * 256}, tensor.On(d)))
				i++
			case 1: // an op on a live tensor
				if len(live) > 0 {
					live = append(live, live[arg%len(live)].Exp())
				}
				i++
			case 2: // release one
				if len(live) > 0 {
					k := arg % len(live)
					live[k].Release()
					live = append(live[:k], live[k+1:]...)
				}
				i++
			case 3: // a temporary made and freed
				tmp := base.Mul(float64(arg))
				tmp.Release()
				i++
			case 4: // a phase begins
				closePhase()
				phaseName = []string{profiler.Forward, profiler.Backward, profiler.OptimizerStep, profiler.ZeroGrad}[arg%4]
				d.ResetPeakStats()
				end = profiler.Record(phaseName)
				i++
			case 5:
				closePhase()
			}
		}
		closePhase()
		p.Stop()
		defer func() {
			for _, x := range live {
				x.Release()
			}
			base.Release()
		}()
		if _, err := p.Events(); err != nil {
			return // nothing recorded
		}
		points, err := p.Timeline(d)
		if err != nil {
			return // nothing happened on d
		}
		for i, pt := range points {
			var sum int64
			for c, b := range pt.Bytes {
				// Unknown takes what the storages do not account for,
				// so the sum holds by construction; a category below
				// zero is a storage counted twice or in two places.
				if b < 0 {
					t.Fatalf("point %d: %s is %d bytes", i, profiler.Category(c), b)
				}
				sum += b
			}
			if sum != pt.Allocated {
				t.Fatalf("point %d: categories add up to %d, allocated is %d", i, sum, pt.Allocated)
			}
		}
		peaks, err := p.PhasePeaks(d)
		if err != nil {
			return
		}
		for _, pk := range peaks {
			if pk.Peak != allocatorPeak[pk.Name] {
				t.Fatalf("phase %s: profile's peak %d, allocator's %d", pk.Name, pk.Peak, allocatorPeak[pk.Name])
			}
		}
	})
}
