package profiler_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpumem/course/gpukit/alloc"
	"github.com/gpumem/course/gpukit/device"
	"github.com/gpumem/course/gpukit/device/simtest"
	"github.com/gpumem/course/gpukit/profiler"
	"github.com/gpumem/course/gpukit/tensor"
	"github.com/gpumem/course/gpukit/tensor/tensortest"
)

var devIndex atomic.Int64

// newDev returns a fresh sim device; each test gets its own index, so
// that a trace tells them apart when a tensor of an earlier test is
// collected during a profile.
func newDev(t testing.TB) *device.Device {
	return simtest.Card(t, simtest.Index(int(devIndex.Add(1))%16))
}

func start(t testing.TB, o profiler.Options) *profiler.Profile {
	t.Helper()
	p, err := profiler.Start(o)
	require.NoError(t, err)
	t.Cleanup(p.Stop)
	return p
}

func row(t *testing.T, rows []profiler.Averages, key string) profiler.Averages {
	t.Helper()
	for _, r := range rows {
		if r.Key == key {
			return r
		}
	}
	t.Fatalf("no row %q in %v", key, rows)
	return profiler.Averages{}
}

// mlp is a two-layer perceptron trained by hand: explicit weights, an SGD
// step, phases marked with Record.
type mlp struct {
	w1, b1, w2, b2 *tensor.Tensor
}

// newMLP returns an MLP in → hidden → out on d, the same every call, and
// a batch of n examples for it: inputs x and class labels y.
func newMLP(d *device.Device, n, in, hidden, out int) (m *mlp, x, y *tensor.Tensor) {
	g := tensor.NewGenerator(1)
	mk := func(shape ...int) *tensor.Tensor {
		r := tensor.Randn(shape, tensor.On(d), tensor.WithGenerator(g))
		defer r.Release()
		return r.Mul(0.1).SetRequiresGrad(true)
	}
	m = &mlp{w1: mk(in, hidden), b1: mk(hidden), w2: mk(hidden, out), b2: mk(out)}
	g = tensor.NewGenerator(2)
	x = tensor.Randn([]int{n, in}, tensor.On(d), tensor.WithGenerator(g))
	y = tensor.Randint(0, int64(out), []int{n}, tensor.On(d), tensor.WithGenerator(g))
	return m, x, y
}

func (m *mlp) params() []*tensor.Tensor { return []*tensor.Tensor{m.w1, m.b1, m.w2, m.b2} }

// forward returns the loss, every intermediate released.
func (m *mlp) forward(x, y *tensor.Tensor) *tensor.Tensor {
	h := x.Matmul(m.w1)
	hb := h.Add(m.b1)
	a := hb.Relu()
	o := a.Matmul(m.w2)
	ob := o.Add(m.b2)
	loss := tensor.CrossEntropy(ob, y)
	for _, t := range []*tensor.Tensor{h, hb, a, o, ob} {
		t.Release()
	}
	return loss
}

func (m *mlp) step(x, y *tensor.Tensor) {
	var loss *tensor.Tensor
	func() {
		defer profiler.Record(profiler.Forward)()
		loss = m.forward(x, y)
	}()
	func() {
		defer profiler.Record(profiler.Backward)()
		loss.Backward()
		loss.Release()
	}()
	func() {
		defer profiler.Record(profiler.OptimizerStep)()
		tensor.NoGrad(func() {
			for _, p := range m.params() {
				u := p.Grad().Mul(0.1)
				p.SubInPlace(u)
				u.Release()
			}
		})
	}()
	func() {
		defer profiler.Record(profiler.ZeroGrad)()
		for _, p := range m.params() {
			p.SetGrad(nil)
		}
	}()
}

func TestOpSelfMemoryIsWhatItAllocated(t *testing.T) {
	d := newDev(t)
	a := tensor.Ones([]int{1000}, tensor.On(d))
	b := tensor.Ones([]int{1000}, tensor.On(d))
	p := start(t, profiler.Options{})
	c := a.Add(b) // 4000 bytes, a 4096-byte block
	r, col := c.View(1, 1000), c.View(1000, 1)
	m := r.Matmul(col) // [1, 1]: 4 bytes, the smallest block
	r.Release()
	col.Release()
	p.Stop()
	rows, err := p.KeyAverages(false)
	require.NoError(t, err)
	add := row(t, rows, "tensor::Add")
	assert.Equal(t, int64(4096), add.SelfDeviceMemory)
	assert.Equal(t, int64(4096), add.DeviceMemory)
	assert.Equal(t, 1, add.Count)
	mm := row(t, rows, "tensor::Matmul")
	assert.Equal(t, int64(512), mm.SelfDeviceMemory, "a [1, 1] float32 result takes the smallest block")
	assert.Greater(t, add.SelfDeviceTime, time.Duration(0), "the kernel's modelled time")
	c.Release()
	m.Release()
}

func TestNestedRangesAddUp(t *testing.T) {
	d := newDev(t)
	x := tensor.Ones([]int{64, 128}, tensor.On(d))
	w := tensor.Ones([]int{128, 256}, tensor.On(d))
	bias := tensor.Ones([]int{256}, tensor.On(d))
	p := start(t, profiler.Options{RecordShapes: true})
	var y *tensor.Tensor
	func() {
		defer profiler.Record("Linear")()
		h := x.Matmul(w) // 64·256·4 = 65536 bytes
		y = h.Add(bias)  // 65536 bytes
		h.Release()      // freed in the range, outside any op: -65536
	}()
	p.Stop()
	rows, err := p.KeyAverages(false)
	require.NoError(t, err)
	lin := row(t, rows, "Linear")
	assert.Equal(t, int64(65536), lin.DeviceMemory, "matmul + add - release")
	assert.Equal(t, int64(-65536), lin.SelfDeviceMemory, "the release of h, outside any op")
	assert.Equal(t, int64(65536), row(t, rows, "tensor::Matmul").SelfDeviceMemory)
	assert.Equal(t, int64(65536), row(t, rows, "tensor::Add").SelfDeviceMemory)
	mm, add := row(t, rows, "tensor::Matmul"), row(t, rows, "tensor::Add")
	assert.Equal(t, mm.SelfDeviceTime+add.SelfDeviceTime, lin.DeviceTimeTotal)
	assert.GreaterOrEqual(t, lin.CPUTimeTotal, mm.CPUTimeTotal+add.CPUTimeTotal)

	shaped, err := p.KeyAverages(profiler.GroupByShape)
	require.NoError(t, err)
	assert.Equal(t, "[[64, 128], [128, 256]]", row(t, shaped, "tensor::Matmul").InputShapes)
	y.Release()
}

func TestCreationWithoutKernelIsItsOwnOp(t *testing.T) {
	d := newDev(t)
	p := start(t, profiler.Options{})
	a := tensor.FromSlice([]float32{1, 2, 3}, []int{3}, tensor.On(d))
	b := a.Exp()
	p.Stop()
	rows, err := p.KeyAverages(false)
	require.NoError(t, err)
	assert.Equal(t, int64(512), row(t, rows, "tensor::FromSlice").SelfDeviceMemory)
	assert.Equal(t, int64(512), row(t, rows, "tensor::Exp").SelfDeviceMemory)
	a.Release()
	b.Release()
}

func TestTrainingStepPeaksAndTimeline(t *testing.T) {
	d := newDev(t)
	tensortest.NoCollector(t)
	m, x, y := newMLP(d, 64, 256, 512, 10)
	m.step(x, y) // warm the cache

	// The allocator's own peak over each phase, from its peak counter
	// reset at the phase's start. Every tensor is released and the
	// collector is off: a free on its cleanup goroutine between the reset
	// and the range's start would count in the first, not the second.
	allocatorPeaks := map[string]int64{}
	p := start(t, profiler.Options{})
	var loss *tensor.Tensor
	phase := func(name string, fn func()) {
		d.ResetPeakStats()
		end := profiler.Record(name)
		fn()
		end()
		allocatorPeaks[name] = d.MaxMemoryAllocated()
	}
	phase(profiler.Forward, func() { loss = m.forward(x, y) })
	phase(profiler.Backward, func() { loss.Backward(); loss.Release() })
	phase(profiler.OptimizerStep, func() {
		tensor.NoGrad(func() {
			for _, p := range m.params() {
				u := p.Grad().Mul(0.1)
				p.SubInPlace(u)
				u.Release()
			}
		})
	})
	phase(profiler.ZeroGrad, func() {
		for _, p := range m.params() {
			p.SetGrad(nil)
		}
	})
	p.Stop()
	runtime.KeepAlive(m)

	peaks, err := p.PhasePeaks(d)
	require.NoError(t, err)
	require.Len(t, peaks, 4)
	for _, pk := range peaks {
		assert.Equal(t, allocatorPeaks[pk.Name], pk.Peak, "peak of %s", pk.Name)
	}

	points, err := p.Timeline(d)
	require.NoError(t, err)
	require.Greater(t, len(points), 10)
	for i, pt := range points {
		var sum int64
		for _, b := range pt.Bytes {
			sum += b
		}
		require.Equal(t, pt.Allocated, sum, "point %d: categories add up to allocated", i)
		require.GreaterOrEqual(t, pt.Bytes[profiler.Unknown], int64(0))
	}
	// Parameters: w1 512 KiB, b1 2 KiB, w2 20 KiB (20480 B), b2 512 B.
	assert.Equal(t, int64(512*1024+2048+20480+512), points[0].Bytes[profiler.Parameter])
	// Gradients exist from backward to zero-grad and are of the same sizes.
	var maxGrad, maxAct int64
	for _, pt := range points {
		maxGrad = max(maxGrad, pt.Bytes[profiler.Gradient])
		maxAct = max(maxAct, pt.Bytes[profiler.Activation])
	}
	assert.Equal(t, int64(512*1024+2048+20480+512), maxGrad)
	assert.Positive(t, maxAct, "the forward saves activations for backward")
	assert.Equal(t, int64(0), points[len(points)-1].Bytes[profiler.Gradient], "zero-grad freed the gradients")
	x.Release()
	y.Release()
}

// TestTimelineCountsDirectMallocAsUnknown: memory taken from the
// allocator without a tensor (Device.Malloc, which lessons 00, 02 and 05
// call) has no category the profiler could know, and counts as Unknown,
// so that the categories still add up to what the allocator holds.
func TestTimelineCountsDirectMallocAsUnknown(t *testing.T) {
	d := newDev(t)
	p := start(t, profiler.Options{})
	a := tensor.Ones([]int{1000}, tensor.On(d)) // 4 KiB block
	b, err := d.Malloc(1<<20, d.DefaultStream())
	require.NoError(t, err)
	c := a.Exp()
	d.Free(b)
	a.Release()
	p.Stop()
	c.Release()

	points, err := p.Timeline(d)
	require.NoError(t, err)
	var unknown []int64
	for i, pt := range points {
		var sum int64
		for _, v := range pt.Bytes {
			sum += v
		}
		require.Equal(t, pt.Allocated, sum, "point %d: categories add up to allocated", i)
		unknown = append(unknown, pt.Bytes[profiler.Unknown])
	}
	// at Start, after a's allocation, after c's (the 1 MiB block is live),
	// after a's release (it is gone)
	assert.Equal(t, []int64{0, 0, 1 << 20, 0}, unknown)
}

func TestOptimizerStateIsWhatTheStepKeeps(t *testing.T) {
	d := newDev(t)
	w := tensor.Ones([]int{1024}, tensor.On(d)).SetRequiresGrad(true)
	p := start(t, profiler.Options{})
	var moment *tensor.Tensor
	func() {
		defer profiler.Record(profiler.OptimizerStep)()
		defer profiler.Record("adam: one parameter")() // a range inside the phase
		tensor.NoGrad(func() {
			moment = tensor.ZerosLike(w) // kept: state
			tmp := w.Mul(2)              // freed: temporary
			moment.AddInPlace(tmp)
			tmp.Release()
		})
	}()
	p.Stop()
	points, err := p.Timeline(d)
	require.NoError(t, err)
	last := points[len(points)-1]
	assert.Equal(t, int64(4096), last.Bytes[profiler.OptimizerState])
	assert.Equal(t, int64(4096), last.Bytes[profiler.Parameter])
	moment.Release()
}

type traceFile struct {
	TraceEvents []map[string]any `json:"traceEvents"`
}

func TestChromeTrace(t *testing.T) {
	d := newDev(t)
	// the profile does not see cuBLAS's workspace (doc.go): take it before,
	// so that the running totals below add up from the events alone
	simtest.WarmBlas(t, d)
	m, x, y := newMLP(d, 8, 32, 64, 4)
	p := start(t, profiler.Options{RecordShapes: true, WithStack: true})
	m.step(x, y)
	p.Stop()
	path := filepath.Join(t.TempDir(), "trace.json")
	require.NoError(t, p.ExportChromeTrace(path))
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var tf traceFile
	require.NoError(t, json.Unmarshal(data, &tf))
	require.NotEmpty(t, tf.TraceEvents)

	required := map[string][]string{
		"X": {"name", "ph", "ts", "dur", "pid", "tid", "cat"},
		"i": {"name", "ph", "ts", "pid", "tid", "s", "args"},
		"s": {"name", "ph", "ts", "pid", "tid", "id", "cat"},
		"f": {"name", "ph", "ts", "pid", "tid", "id", "cat", "bp"},
		"M": {"name", "ph", "pid", "args"},
	}
	last := map[[2]float64]float64{}
	counts := map[string]int{}
	flows := map[float64]int{}
	var lastTotal float64 = -1
	for _, ev := range tf.TraceEvents {
		ph := ev["ph"].(string)
		fields, ok := required[ph]
		require.True(t, ok, "unexpected phase %q", ph)
		for _, f := range fields {
			require.Contains(t, ev, f, "%s event %v", ph, ev)
		}
		counts[ph]++
		if ph == "M" {
			continue
		}
		track := [2]float64{ev["pid"].(float64), ev["tid"].(float64)}
		ts := ev["ts"].(float64)
		require.GreaterOrEqual(t, ts, last[track], "timestamps grow on track %v", track)
		last[track] = ts
		switch ph {
		case "s", "f":
			flows[ev["id"].(float64)]++
		case "i":
			args := ev["args"].(map[string]any)
			for _, k := range []string{"Addr", "Bytes", "Total Allocated", "Total Reserved", "Device Id", "Device Type"} {
				require.Contains(t, args, k)
			}
			if args["Device Type"].(float64) == 1 && args["Device Id"].(float64) == float64(d.Index()) {
				total := args["Total Allocated"].(float64)
				if lastTotal >= 0 {
					require.Equal(t, lastTotal+args["Bytes"].(float64), total, "running total")
				}
				lastTotal = total
				require.GreaterOrEqual(t, args["Total Reserved"].(float64), total)
			}
		}
	}
	assert.Positive(t, counts["X"])
	assert.Positive(t, counts["i"])
	assert.Positive(t, counts["s"])
	for id, n := range flows {
		assert.Equal(t, 2, n, "flow %v has a start and an end", id)
	}
	assert.Contains(t, string(data), `"Input Dims"`)
	assert.Contains(t, string(data), "profiler_test.go:")
	x.Release()
	y.Release()
}

func TestTableLayout(t *testing.T) {
	d := newDev(t)
	m, x, y := newMLP(d, 8, 32, 64, 4)
	p := start(t, profiler.Options{RecordShapes: true})
	m.step(x, y)
	p.Stop()
	table, err := p.Table(profiler.TableOptions{SortBy: "self_cuda_memory_usage", RowLimit: 5})
	require.NoError(t, err)
	lines := strings.Split(strings.TrimRight(table, "\n"), "\n")
	require.Len(t, lines, 3+5+1+2, table)
	header := lines[1]
	for _, col := range []string{"Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg",
		"Self CUDA", "Self CUDA %", "CUDA total", "CUDA time avg", "CPU Mem", "Self CPU Mem", "CUDA Mem", "Self CUDA Mem", "# of Calls"} {
		assert.Contains(t, header, col)
	}
	assert.Equal(t, lines[0], lines[2])
	// As in PyTorch, "CUDA time avg" and "Self CUDA Mem" (13 characters)
	// overflow their 12.
	assert.Equal(t, len(lines[0])+2, len(header))
	assert.True(t, strings.HasPrefix(lines[len(lines)-2], "Self CPU time total: "))
	assert.True(t, strings.HasPrefix(lines[len(lines)-1], "Self CUDA time total: "))
	// name column: longest name + 4, right-aligned; others 12 wide, 2 apart
	assert.True(t, strings.HasPrefix(lines[0], strings.Repeat("-", len("tensor::CrossEntropy")+4)+"  ------------  "), lines[0])

	rows, err := p.KeyAverages(false)
	require.NoError(t, err)
	var best int64
	for _, r := range rows {
		best = max(best, r.SelfDeviceMemory)
	}
	assert.Contains(t, lines[3], profiler.FormatMemory(best), "sorted by self device memory, largest first")

	shaped, err := p.Table(profiler.TableOptions{SortBy: "Self CUDA Mem", GroupByShape: true, RowLimit: -1})
	require.NoError(t, err)
	assert.Contains(t, shaped, "Input Shapes")
	assert.Contains(t, shaped, "[[8, 32], [32, 64]]")
	x.Release()
	y.Release()
}

func TestFormats(t *testing.T) {
	for _, c := range []struct {
		n    int64
		want string
	}{{0, "0 b"}, {512, "512 b"}, {1536, "1.50 Kb"}, {-4 << 20, "-4.00 Mb"}, {3 << 30, "3.00 Gb"}} {
		assert.Equal(t, c.want, profiler.FormatMemory(c.n))
	}
}

func TestBadInput(t *testing.T) {
	t.Run("nested profiles", func(t *testing.T) {
		p := start(t, profiler.Options{})
		_, err := profiler.Start(profiler.Options{})
		require.ErrorContains(t, err, "already running")
		p.Stop()
		q, err := profiler.Start(profiler.Options{})
		require.NoError(t, err, "a stopped profile lets the next one start")
		q.Stop()
	})
	t.Run("empty profile", func(t *testing.T) {
		p := start(t, profiler.Options{})
		p.Stop()
		_, err := p.Table(profiler.TableOptions{})
		require.ErrorIs(t, err, profiler.ErrEmpty)
		require.ErrorIs(t, p.ExportChromeTrace(filepath.Join(t.TempDir(), "t.json")), profiler.ErrEmpty)
		_, err = p.Timeline(device.Default())
		require.ErrorIs(t, err, profiler.ErrEmpty)
	})
	t.Run("still running", func(t *testing.T) {
		p := start(t, profiler.Options{})
		_, err := p.Table(profiler.TableOptions{})
		require.ErrorContains(t, err, "call Stop")
	})
	d := newDev(t)
	p := start(t, profiler.Options{})
	a := tensor.Ones([]int{10}, tensor.On(d))
	p.Stop()
	t.Run("unknown sort column", func(t *testing.T) {
		_, err := p.Table(profiler.TableOptions{SortBy: "memory"})
		require.ErrorContains(t, err, `unknown sort column "memory"`)
		require.ErrorContains(t, err, "self_cuda_memory_usage")
		require.ErrorContains(t, err, "Self CUDA Mem")
	})
	t.Run("unwritable path", func(t *testing.T) {
		dir := t.TempDir()
		existing := filepath.Join(dir, "keep.json")
		require.NoError(t, os.WriteFile(existing, []byte("old"), 0o644))
		err := p.ExportChromeTrace(filepath.Join(dir, "no", "such", "dir", "t.json"))
		require.ErrorContains(t, err, "profiler: cannot write the trace")
		require.Error(t, p.ExportChromeTrace(dir), "a directory is not a file")
		got, _ := os.ReadFile(existing)
		require.Equal(t, "old", string(got))
	})
	t.Run("shapes not recorded", func(t *testing.T) {
		_, err := p.KeyAverages(profiler.GroupByShape)
		require.ErrorContains(t, err, "RecordShapes")
	})
	t.Run("monitor interval", func(t *testing.T) {
		_, err := profiler.StartMonitor(d, 0)
		require.ErrorContains(t, err, "positive")
	})
	a.Release()
}

func TestRecordWithoutProfileIsANoOp(t *testing.T) {
	end := profiler.Record("nothing")
	end()
}

func TestMonitorMissesShortPeaks(t *testing.T) {
	d := newDev(t)
	mon, err := profiler.StartMonitor(d, time.Hour) // only the first sample
	require.NoError(t, err)
	d.ResetPeakStats()
	x := tensor.Ones([]int{1 << 20}, tensor.On(d)) // 4 MiB, gone before any tick
	x.Release()
	samples := mon.Stop()
	require.Len(t, samples, 1)
	assert.Less(t, profiler.MaxSampled(samples), d.MaxMemoryAllocated())
	assert.Positive(t, samples[0].RSS)
}

func TestDumpSnapshot(t *testing.T) {
	d := newDev(t)
	d.Allocator().RecordHistory(alloc.HistoryOptions{Enabled: true})
	x := tensor.Ones([]int{256}, tensor.On(d))
	path := filepath.Join(t.TempDir(), "snap.pickle")
	require.NoError(t, profiler.DumpSnapshot(path, d.Snapshot()))
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, []byte{0x80, 0x02}, data[:2], "pickle protocol 2")
	require.ErrorContains(t, profiler.DumpSnapshot(filepath.Join(t.TempDir(), "no", "x.pickle"), d.Snapshot()), "cannot write the snapshot")
	x.Release()
}

func TestCollectorFreesCountOutsideRanges(t *testing.T) {
	d := newDev(t)
	func() {
		x := tensor.Ones([]int{1024}, tensor.On(d))
		_ = x // dropped without Release
	}()
	p := start(t, profiler.Options{})
	func() {
		defer profiler.Record("collect")()
		tensor.CollectGarbage()
	}()
	p.Stop()
	rows, err := p.KeyAverages(false)
	require.NoError(t, err)
	assert.Equal(t, int64(0), row(t, rows, "collect").SelfDeviceMemory, "no code of the range freed it")
	assert.LessOrEqual(t, row(t, rows, "[memory]").SelfDeviceMemory, int64(-4096))
}
