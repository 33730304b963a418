package main

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/gpumem/course/gpukit/alloc"
	"github.com/gpumem/course/gpukit/device"
	"github.com/gpumem/course/gpukit/ops"
)

// workload is one kernel class of the cost model, at one size.
type workload struct {
	Name string // "gemm", "elementwise", "h2d-pinned", "h2d-pageable", "d2d"
	Size string // for people: "4096x4096x4096 float32"
	// What the cost model is given: a kernel's flops and bytes, or a
	// copy's bytes.
	Flops, Bytes int64
	n            int // gemm: the matrices' order; elementwise: elements
}

// workloads are the kernel classes gpu-check times, scaled by scale (1 on
// a card; tests use a small one, since sim's memory is host memory).
func workloads(scale float64) []workload {
	order := max(16, int(4096*math.Sqrt(scale))) // gemm work grows as order³
	elems := max(1024, int(64*(1<<20)*scale))    // 64 Mi float32 = 256 MiB per operand
	copyBytes := int64(elems) * 4
	return []workload{
		{Name: "gemm", Size: fmt.Sprintf("%dx%dx%d float32", order, order, order),
			Flops: 2 * int64(order) * int64(order) * int64(order), Bytes: 3 * 4 * int64(order) * int64(order), n: order},
		{Name: "elementwise", Size: fmt.Sprintf("add of %d float32", elems),
			Flops: int64(elems), Bytes: 3 * 4 * int64(elems), n: elems},
		{Name: "h2d-pinned", Size: alloc.FormatSize(copyBytes), Bytes: copyBytes},
		{Name: "h2d-pageable", Size: alloc.FormatSize(copyBytes), Bytes: copyBytes},
		{Name: "d2d", Size: alloc.FormatSize(copyBytes), Bytes: copyBytes},
	}
}

// modelled is the cost model's duration of w on profile p
// (profile.Profile's KernelCost, CopyCost and DeviceCopyCost).
func modelled(p device.Profile, w workload) time.Duration {
	switch w.Name {
	case "h2d-pinned":
		return p.CopyCost(w.Bytes, true)
	case "h2d-pageable":
		return p.CopyCost(w.Bytes, false)
	case "d2d":
		return p.DeviceCopyCost(w.Bytes)
	}
	return p.KernelCost(device.Kernel{Name: w.Name, Flops: w.Flops, Bytes: w.Bytes})
}

// timer measures a workload on a device; deviceTimer in production, a
// fake in tests.
type timer interface {
	measure(w workload) (time.Duration, error)
}

// deviceTimer runs workloads on a gpukit device and times them with its
// events. A real device (cuda) runs the real kernel; a simulated one is
// given the kernel's cost with Launch, so on sim the
// measurement is the cost model itself, which the tests use.
type deviceTimer struct {
	d *device.Device
	s alloc.Stream
}

func (t deviceTimer) measure(w workload) (time.Duration, error) {
	d := t.d
	var bufs []*alloc.Block
	defer func() {
		d.Synchronize()
		for _, b := range bufs {
			d.Free(b)
		}
	}()
	buf := func(size int64) (*alloc.Block, error) {
		b, err := d.Malloc(size, t.s)
		if err == nil {
			bufs = append(bufs, b)
		}
		return b, err
	}
	var run func() error
	// Every device computes, but only a real one's kernels take the time
	// they measure: sim's Compute (the CPU kernels) charges nothing to its
	// clock, which Launch does.
	comp := d.Compute()
	computes := comp != nil && d.Kind() == device.CUDA
	switch w.Name {
	case "gemm", "elementwise":
		n := int64(w.n)
		if w.Name == "gemm" {
			n = int64(w.n) * int64(w.n)
		}
		a, err := buf(4 * n)
		if err != nil {
			return 0, err
		}
		b, err := buf(4 * n)
		if err != nil {
			return 0, err
		}
		c, err := buf(4 * n)
		if err != nil {
			return 0, err
		}
		switch {
		case !computes:
			run = func() error { d.Launch(t.s, device.Kernel{Name: w.Name, Flops: w.Flops, Bytes: w.Bytes}); return nil }
		case w.Name == "gemm":
			run = func() error {
				return comp.Gemm(t.s, device.Float32, false, false, w.n, w.n, w.n, 1, a.Addr(), w.n, b.Addr(), w.n, 0, c.Addr(), w.n)
			}
		default:
			st := func(blk *alloc.Block) device.Strided {
				return device.Strided{Addr: blk.Addr(), Dtype: device.Float32, Strides: []int{1}}
			}
			run = func() error { return comp.Binary(t.s, ops.Add, []int{w.n}, st(c), st(a), st(b)) }
		}
	case "h2d-pinned", "h2d-pageable":
		pinned := w.Name == "h2d-pinned"
		dst, err := buf(w.Bytes)
		if err != nil {
			return 0, err
		}
		host, err := d.HostAlloc(w.Bytes, pinned)
		if err != nil {
			return 0, err
		}
		defer host.Free()
		run = func() error { return d.CopyToDevice(dst, 0, host.Bytes, pinned, t.s, pinned) }
	case "d2d":
		src, err := buf(w.Bytes)
		if err != nil {
			return 0, err
		}
		dst, err := buf(w.Bytes)
		if err != nil {
			return 0, err
		}
		run = func() error { return d.CopyDevice(dst, 0, src, 0, w.Bytes, t.s) }
	default:
		return 0, fmt.Errorf("gpucheck: unknown workload %q", w.Name)
	}
	// One untimed run: NVRTC compiles the kernel and cuBLAS initializes
	// on first use.
	if err := run(); err != nil {
		return 0, err
	}
	d.StreamSynchronize(t.s)
	start := d.RecordEvent(t.s)
	if err := run(); err != nil {
		return 0, err
	}
	end := d.RecordEvent(t.s)
	end.Synchronize()
	return end.ElapsedSince(start), nil
}

// timingRow is one line of the calibration table.
type timingRow struct {
	Kernel     string  `json:"kernel"`
	Size       string  `json:"size"`
	ModelledUS float64 `json:"modelled_us"`
	MeasuredUS float64 `json:"measured_us"` // median of the repeats
	Ratio      float64 `json:"ratio"`       // measured / modelled
	Off        bool    `json:"off"`         // |ratio - 1| > calibrationTolerance
	Error      string  `json:"error,omitempty"`
}

// timingReport is what `gpucheck timings` writes.
type timingReport struct {
	Device    string      `json:"device"`
	Profile   string      `json:"profile"`
	Repeats   int         `json:"repeats"`
	Tolerance float64     `json:"tolerance"`
	Rows      []timingRow `json:"rows"`
	OK        bool        `json:"ok"` // every workload ran
}

// calibrationTolerance is how far a measurement may be from the model
// before the profile's figure should be updated (issue 26: 20 %).
const calibrationTolerance = 0.20

// calibrate measures every workload repeats times with t and sets it
// beside the model of profile p.
func calibrate(t timer, p device.Profile, ws []workload, repeats int) timingReport {
	r := timingReport{Profile: p.Name, Repeats: repeats, Tolerance: calibrationTolerance, OK: true}
	for _, w := range ws {
		row := timingRow{Kernel: w.Name, Size: w.Size, ModelledUS: micros(modelled(p, w))}
		var runs []time.Duration
		for range repeats {
			el, err := t.measure(w)
			if err != nil {
				row.Error = err.Error()
				r.OK = false
				break
			}
			runs = append(runs, el)
		}
		if row.Error == "" {
			slices.Sort(runs)
			row.MeasuredUS = micros(runs[len(runs)/2])
			if row.ModelledUS > 0 {
				row.Ratio = row.MeasuredUS / row.ModelledUS
				row.Off = math.Abs(row.Ratio-1) > calibrationTolerance
			}
		}
		r.Rows = append(r.Rows, row)
	}
	return r
}

func micros(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// profileFor returns the built-in profile of the card d is, by its name,
// as the cuda backend matches it ("NVIDIA H100 80GB HBM3" is h100-80gb).
func profileFor(d *device.Device) (device.Profile, error) {
	desc := strings.ToUpper(d.Profile().Description + " " + d.Profile().Name)
	for _, m := range []struct{ key, name string }{{"H100", "h100-80gb"}, {"A100", "a100-40gb"}, {"T4", "t4"}} {
		if strings.Contains(desc, m.key) {
			return device.LookupProfile(m.name)
		}
	}
	if d.Kind() == device.Sim {
		return d.Profile(), nil
	}
	return device.Profile{}, fmt.Errorf("gpucheck: no built-in profile for %q; name one with -profile", d.Profile().Description)
}
