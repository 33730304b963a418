package leak

import (
	"runtime"
	"testing"

	"github.com/gpumem/course/gpukit/tensor/tensortest"
)

// The logged values are those of a correct loop, bit for bit, and the loop
// leaves memory as it found it.
func TestHistoryValues(t *testing.T) {
	tensortest.NoCollector(t)
	p := problem{n: 128, in: 16, hidden: 64, out: 4, steps: 10}
	dev, m, d := p.setup(t)
	allocated, live := dev.MemoryAllocated(), dev.Stats()["allocation.all.current"]
	h, err := Fit(m, d, p.steps, 0.05)
	if err != nil {
		t.Fatal(err)
	}
	unchanged(t, "10 steps", dev, allocated, live)

	_, rm, rd := p.setup(t)
	want := referenceFit(rm, rd, p.steps, 0.05)
	if !sameBits(h.Train, want.Train) {
		t.Errorf("training losses %v, want %v", h.Train, want.Train)
	}
	if !sameBits(h.Val, want.Val) {
		t.Errorf("validation losses %v, want %v", h.Val, want.Val)
	}
	runtime.KeepAlive(m)
	runtime.KeepAlive(d)
}

// Peak memory does not grow with the number of steps, and allocated memory
// after Fit does not either.
func TestMemoryFlat(t *testing.T) {
	tensortest.NoCollector(t)
	measure := func(steps int) (peak, left int64) {
		p := problem{n: 256, in: 32, hidden: 128, out: 8}
		dev, m, d := p.setup(t)
		base := dev.MemoryAllocated()
		dev.ResetPeakStats()
		if _, err := Fit(m, d, steps, 0.01); err != nil {
			t.Fatal(err)
		}
		runtime.KeepAlive(m)
		runtime.KeepAlive(d)
		return dev.MaxMemoryAllocated() - base, dev.MemoryAllocated() - base
	}
	peak2, left2 := measure(2)
	peak20, left20 := measure(20)
	if peak2 != peak20 {
		t.Errorf("peak memory above the model and data: %d bytes for 2 steps, %d for 20: it must not grow with steps", peak2, peak20)
	}
	if left2 != 0 || left20 != 0 {
		t.Errorf("memory left allocated after Fit: %d bytes after 2 steps, %d after 20, want 0", left2, left20)
	}
}

// No block of a step survives it, not even a 512-byte loss: the number of
// live blocks is as before, for several sizes of model.
func TestNoBlockOutlivesAStep(t *testing.T) {
	tensortest.NoCollector(t)
	for _, p := range []problem{
		{n: 64, in: 8, hidden: 32, out: 1, steps: 5},
		{n: 200, in: 40, hidden: 300, out: 10, steps: 3},
		{n: 2, in: 1, hidden: 1, out: 1, steps: 7},
	} {
		dev, m, d := p.setup(t)
		allocated, live := dev.MemoryAllocated(), dev.Stats()["allocation.all.current"]
		if _, err := Fit(m, d, p.steps, 0.02); err != nil {
			t.Fatal(err)
		}
		unchanged(t, "", dev, allocated, live)
		runtime.KeepAlive(m)
		runtime.KeepAlive(d)
	}
}

// The model trained as a correct loop trains it: the same parameters, bit
// for bit, and no gradient left allocated.
func TestParamsTrained(t *testing.T) {
	tensortest.NoCollector(t)
	p := problem{n: 96, in: 12, hidden: 48, out: 3, steps: 6}
	dev, m, d := p.setup(t)
	allocated, live := dev.MemoryAllocated(), dev.Stats()["allocation.all.current"]
	if _, err := Fit(m, d, p.steps, 0.1); err != nil {
		t.Fatal(err)
	}
	unchanged(t, "6 steps", dev, allocated, live)
	_, rm, rd := p.setup(t)
	referenceFit(rm, rd, p.steps, 0.1)
	for i, param := range m.Params() {
		if !sameBits(param.Float64s(), rm.Params()[i].Float64s()) {
			t.Errorf("parameter %d differs from a correct loop's", i)
		}
		if param.Grad() != nil {
			t.Errorf("parameter %d still holds a gradient", i)
		}
	}
	runtime.KeepAlive(d)
	runtime.KeepAlive(rd)
}

// Zero steps log nothing; a negative count and a nil model are errors; one
// step leaves memory as before and peaks as high as eight.
func TestEdgeCases(t *testing.T) {
	tensortest.NoCollector(t)
	p := problem{n: 32, in: 4, hidden: 16, out: 2}
	dev, m, d := p.setup(t)
	if h, err := Fit(m, d, 0, 0.1); err != nil || len(h.Train) != 0 || len(h.Val) != 0 {
		t.Errorf("0 steps: %+v, %v; want an empty history and no error", h, err)
	}
	if _, err := Fit(m, d, -1, 0.1); err == nil {
		t.Error("-1 steps: got no error")
	}
	if _, err := Fit(nil, d, 3, 0.1); err == nil {
		t.Error("a nil model: got no error")
	}
	peak := func(steps int) int64 {
		dev, m, d := p.setup(t)
		allocated, live := dev.MemoryAllocated(), dev.Stats()["allocation.all.current"]
		dev.ResetPeakStats()
		if h, err := Fit(m, d, steps, 0.1); err != nil || len(h.Train) != steps || len(h.Val) != steps {
			t.Fatalf("%d steps: %d and %d losses, %v", steps, len(h.Train), len(h.Val), err)
		}
		unchanged(t, "", dev, allocated, live)
		runtime.KeepAlive(m)
		runtime.KeepAlive(d)
		return dev.MaxMemoryAllocated() - allocated
	}
	if one, eight := peak(1), peak(8); one != eight {
		t.Errorf("peak above the model: %d bytes for 1 step, %d for 8", one, eight)
	}
	runtime.KeepAlive(dev)
}

// Evaluation records no graph: the ops that read the validation inputs run
// under NoGrad (their outputs do not require grad), even if a recorded
// graph would be freed with the validation loss.
func TestEvaluationRecordsNothing(t *testing.T) {
	tensortest.NoCollector(t)
	p := problem{n: 64, in: 8, hidden: 32, out: 2, steps: 3}
	_, m, d := p.setup(t)
	ops := listen(t)
	if _, err := Fit(m, d, p.steps, 0.05); err != nil {
		t.Fatal(err)
	}
	if names := ops.recording(d.ValX); len(names) > 0 {
		t.Errorf("evaluation recorded a graph: %v on the validation inputs require grad; evaluate inside tensor.NoGrad", names)
	}
	runtime.KeepAlive(m)
	runtime.KeepAlive(d)
}

// Memory comes back through Release (or through the graph being freed),
// not through the collector: while a profiler keeps every tensor that an
// op wrote reachable, allocated memory and live blocks after Fit are still
// as before. A loop that releases nothing and calls tensor.CollectGarbage
// each step leaves them allocated.
func TestReleasedNotCollected(t *testing.T) {
	tensortest.NoCollector(t)
	p := problem{n: 64, in: 8, hidden: 32, out: 2, steps: 4}
	dev, m, d := p.setup(t)
	allocated, live := dev.MemoryAllocated(), dev.Stats()["allocation.all.current"]
	ops := listen(t)
	if _, err := Fit(m, d, p.steps, 0.05); err != nil {
		t.Fatal(err)
	}
	unchanged(t, "while a profiler holds every op's output", dev, allocated, live)
	runtime.KeepAlive(ops)
	runtime.KeepAlive(m)
	runtime.KeepAlive(d)
}
