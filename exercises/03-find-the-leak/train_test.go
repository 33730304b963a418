package leak

import (
	"fmt"
	"math"
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/gpumem/course/gpukit/device"
	"github.com/gpumem/course/gpukit/device/simtest"
	"github.com/gpumem/course/gpukit/tensor"
)

// noCollector turns Go's garbage collector off for the test: memory must be
// returned by Release, not by a collection that may or may not run.
func noCollector(t *testing.T) {
	old := debug.SetGCPercent(-1)
	t.Cleanup(func() { debug.SetGCPercent(old) })
}

func TestHistoryValues(t *testing.T) {
	noCollector(t)
	dev := simtest.Card(t, simtest.BlasWorkspace())
	m := NewMLP(dev, 16, 64, 4, 1)
	d := NewData(dev, 128, 16, 4, 2)
	before := dev.MemoryAllocated()
	h, err := Fit(m, d, 10, 0.05)
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Train) != 10 || len(h.Val) != 10 {
		t.Fatalf("logged %d training and %d validation losses, want 10 of each", len(h.Train), len(h.Val))
	}
	if h.Train[9] >= h.Train[0] {
		t.Errorf("the training loss went from %g to %g: it should go down", h.Train[0], h.Train[9])
	}
	if after := dev.MemoryAllocated(); after != before {
		t.Errorf("allocated memory went from %d to %d bytes during Fit, want no change", before, after)
	}
	runtime.KeepAlive(m)
	runtime.KeepAlive(d)
}

func TestMemoryFlat(t *testing.T) {
	noCollector(t)
	peak := func(steps int) int64 {
		dev := simtest.Card(t, simtest.BlasWorkspace())
		m := NewMLP(dev, 16, 64, 4, 1)
		d := NewData(dev, 128, 16, 4, 2)
		base := dev.MemoryAllocated()
		dev.ResetPeakStats()
		if _, err := Fit(m, d, steps, 0.05); err != nil {
			t.Fatal(err)
		}
		runtime.KeepAlive(m)
		runtime.KeepAlive(d)
		return dev.MaxMemoryAllocated() - base
	}
	if few, many := peak(3), peak(12); few != many {
		t.Errorf("peak memory above the model and data: %d bytes for 3 steps, %d for 12: it must not grow with steps", few, many)
	}
}

// sizes is a model and data of the given sizes, from fixed seeds.
type sizes struct{ n, in, hidden, out, steps int }

func (z sizes) setup(t *testing.T) (*device.Device, *MLP, Data) {
	dev := simtest.Card(t, simtest.BlasWorkspace())
	return dev, NewMLP(dev, z.in, z.hidden, z.out, 3), NewData(dev, z.n, z.in, z.out, 4)
}

// asBefore checks that allocated memory and live blocks are as they were
// before Fit.
func asBefore(t *testing.T, what string, dev *device.Device, allocated, live int64) {
	t.Helper()
	if got := dev.MemoryAllocated(); got != allocated {
		t.Errorf("%s: allocated memory %d bytes after Fit, %d before: %d bytes outlive the loop", what, got, allocated, got-allocated)
	}
	if got := dev.Stats()["allocation.all.current"]; got != live {
		t.Errorf("%s: %d live blocks after Fit, %d before: release every tensor a step makes, even a 0-d loss", what, got, live)
	}
}

// The public twin of the grader's TestNoBlockOutlivesAStep, on other model
// sizes: no block of a step survives it.
func TestNoBlockLeftAfterFit(t *testing.T) {
	noCollector(t)
	for _, z := range []sizes{
		{n: 50, in: 6, hidden: 20, out: 2, steps: 4},
		{n: 150, in: 24, hidden: 200, out: 6, steps: 2},
		{n: 3, in: 2, hidden: 1, out: 1, steps: 5},
	} {
		dev, m, d := z.setup(t)
		allocated, live := dev.MemoryAllocated(), dev.Stats()["allocation.all.current"]
		if _, err := Fit(m, d, z.steps, 0.03); err != nil {
			t.Fatal(err)
		}
		asBefore(t, fmt.Sprintf("%d steps of a %d-%d-%d model on %d rows", z.steps, z.in, z.hidden, z.out, z.n), dev, allocated, live)
		runtime.KeepAlive(m)
		runtime.KeepAlive(d)
	}
}

// givenFit is Fit as the exercise gives it: it leaks, but what it computes
// is right, and a fixed Fit computes the same, bit for bit.
func givenFit(m *MLP, d Data, steps int, lr float64) History {
	var train, val []*tensor.Tensor
	for step := 0; step < steps; step++ {
		loss := tensor.MSELoss(m.Forward(d.X), d.Y)
		loss.Backward()
		m.Step(lr)
		train = append(train, loss)
		val = append(val, tensor.MSELoss(m.Forward(d.ValX), d.ValY))
	}
	var h History
	for i := range train {
		h.Train = append(h.Train, train[i].Item())
		h.Val = append(h.Val, val[i].Item())
	}
	return h
}

// bitsEqual reports whether two series are bitwise equal.
func bitsEqual(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
			return false
		}
	}
	return true
}

// The public twin of the grader's TestParamsTrained (and of the bitwise
// comparison of TestHistoryValues), on another model: Fit computes what
// the given loop computes, the same losses and the same parameters bit for
// bit, leaves no gradient, and leaves memory as before.
func TestTrainsLikeTheGivenLoop(t *testing.T) {
	noCollector(t)
	z := sizes{n: 80, in: 10, hidden: 40, out: 5, steps: 5}
	dev, m, d := z.setup(t)
	allocated, live := dev.MemoryAllocated(), dev.Stats()["allocation.all.current"]
	h, err := Fit(m, d, z.steps, 0.08)
	if err != nil {
		t.Fatal(err)
	}
	asBefore(t, "5 steps", dev, allocated, live)
	_, gm, gd := z.setup(t)
	want := givenFit(gm, gd, z.steps, 0.08)
	if !bitsEqual(h.Train, want.Train) {
		t.Errorf("training losses %v, the given loop logs %v: log the loss computed before the step's update", h.Train, want.Train)
	}
	if !bitsEqual(h.Val, want.Val) {
		t.Errorf("validation losses %v, the given loop logs %v", h.Val, want.Val)
	}
	for i, p := range m.Params() {
		if !bitsEqual(p.Float64s(), gm.Params()[i].Float64s()) {
			t.Errorf("parameter %d differs from the given loop's after 5 steps", i)
		}
		if p.Grad() != nil {
			t.Errorf("parameter %d still holds a gradient after Fit", i)
		}
	}
	runtime.KeepAlive(d)
	runtime.KeepAlive(gd)
}

// The public twin of the grader's TestEdgeCases, on another model: 0 steps
// log nothing; a negative count and a nil model are errors; one step
// leaves memory as before and peaks as high as five.
func TestStepCountsAndNilModel(t *testing.T) {
	noCollector(t)
	z := sizes{n: 40, in: 5, hidden: 12, out: 3}
	_, m, d := z.setup(t)
	if h, err := Fit(m, d, 0, 0.1); err != nil || len(h.Train) != 0 || len(h.Val) != 0 {
		t.Errorf("0 steps: %d training and %d validation losses, error %v; want none, and no error", len(h.Train), len(h.Val), err)
	}
	if _, err := Fit(m, d, -3, 0.1); err == nil {
		t.Error("-3 steps: no error, want one")
	}
	func() {
		defer func() {
			if r := recover(); r != nil {
				t.Errorf("a nil model: Fit panicked (%v), want an error", r)
			}
		}()
		if _, err := Fit(nil, d, 2, 0.1); err == nil {
			t.Error("a nil model: no error, want one")
		}
	}()
	peak := func(steps int) int64 {
		dev, m, d := z.setup(t)
		allocated, live := dev.MemoryAllocated(), dev.Stats()["allocation.all.current"]
		dev.ResetPeakStats()
		what := fmt.Sprintf("%d steps", steps)
		if steps == 1 {
			what = "1 step"
		}
		if h, err := Fit(m, d, steps, 0.1); err != nil || len(h.Train) != steps || len(h.Val) != steps {
			t.Fatalf("%s: %d training and %d validation losses, error %v; want %d of each", what, len(h.Train), len(h.Val), err, steps)
		}
		asBefore(t, what, dev, allocated, live)
		runtime.KeepAlive(m)
		runtime.KeepAlive(d)
		return dev.MaxMemoryAllocated() - allocated
	}
	if one, five := peak(1), peak(5); one != five {
		t.Errorf("peak memory above the model and data: %d bytes for 1 step, %d for 5: it must not grow with steps", one, five)
	}
}

// launches records, as a tensor.Observer, every kernel launched while it is
// installed, and so keeps every tensor an op wrote reachable, as a
// profiler that keeps its records does.
type launches struct{ all []tensor.Launch }

func (l *launches) Allocated(*tensor.Storage) {}
func (l *launches) Freed(*tensor.Storage)     {}
func (l *launches) Launched(k tensor.Launch)  { l.all = append(l.all, k) }

// record installs a new launches log until the test ends.
func record(t *testing.T) *launches {
	l := &launches{}
	previous := tensor.SetObserver(l)
	t.Cleanup(func() { tensor.SetObserver(previous) })
	return l
}

// The public twin of the grader's TestEvaluationRecordsNothing, on another
// model: the ops that read the validation inputs run under NoGrad (their
// outputs do not require grad), even if a recorded graph would be freed
// with the validation loss.
func TestEvaluationUnderNoGrad(t *testing.T) {
	noCollector(t)
	z := sizes{n: 48, in: 6, hidden: 24, out: 3, steps: 2}
	_, m, d := z.setup(t)
	ops := record(t)
	if _, err := Fit(m, d, z.steps, 0.05); err != nil {
		t.Fatal(err)
	}
	var recorded []string
	for _, k := range ops.all {
		for _, in := range k.Inputs {
			if in != nil && in.SameStorage(d.ValX) && k.Out != nil && k.Out.RequiresGrad() {
				recorded = append(recorded, k.Name)
				break
			}
		}
	}
	if len(recorded) > 0 {
		t.Errorf("evaluation recorded a graph: the outputs of %v on the validation inputs require grad; evaluate inside tensor.NoGrad", recorded)
	}
	runtime.KeepAlive(m)
	runtime.KeepAlive(d)
}

// The public twin of the grader's TestReleasedNotCollected, on another
// model: while a profiler keeps every tensor an op wrote reachable,
// allocated memory and live blocks after Fit are as before. Memory comes
// back through Release (or the graph being freed), not the collector.
func TestReleasedWhileProfiled(t *testing.T) {
	noCollector(t)
	z := sizes{n: 40, in: 10, hidden: 20, out: 4, steps: 3}
	dev, m, d := z.setup(t)
	allocated, live := dev.MemoryAllocated(), dev.Stats()["allocation.all.current"]
	ops := record(t)
	if _, err := Fit(m, d, z.steps, 0.05); err != nil {
		t.Fatal(err)
	}
	asBefore(t, "while a profiler holds every op's output", dev, allocated, live)
	runtime.KeepAlive(ops)
	runtime.KeepAlive(m)
	runtime.KeepAlive(d)
}
