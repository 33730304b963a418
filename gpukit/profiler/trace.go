package profiler

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"github.com/gpumem/course/gpukit/device"
	"github.com/gpumem/course/internal/atomicfile"
)

// traceEvent is one event of the Chrome trace event format, with the
// fields PyTorch's kineto exporter writes.
type traceEvent struct {
	Ph   string         `json:"ph"`
	Cat  string         `json:"cat,omitempty"`
	Name string         `json:"name"`
	Pid  int            `json:"pid"`
	Tid  int            `json:"tid"`
	Ts   float64        `json:"ts"`
	Dur  *float64       `json:"dur,omitempty"`
	ID   int            `json:"id,omitempty"`
	S    string         `json:"s,omitempty"`
	Bp   string         `json:"bp,omitempty"`
	Args map[string]any `json:"args,omitempty"`
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// Track ids: host events go on the process's track (pid = the process id,
// tid = hostTid); each device's default stream is pid = device index,
// tid = streamTid, as kineto lays out GPU streams.
const (
	hostTid   = 1
	streamTid = 7
)

// WriteChromeTrace writes the profile in the Chrome trace event format
// (the JSON that chrome://tracing, Perfetto and TensorBoard open): one
// complete event ("X") per range (cat user_annotation) and per op (cpu_op)
// on the host track, a cudaLaunchKernel runtime event at the end of each
// device op with a flow arrow ("s" to "f", cat ac2g) to its kernel on the
// device's stream track (cat kernel), and one "[memory]" instant event
// per allocation and free with Addr, Bytes, Total Allocated, Total
// Reserved, Device Type (0 host, 1 device) and Device Id. Host times are
// measured; a kernel starts when launched or when the previous kernel of
// its stream ends, whichever is later, and lasts its modelled time.
func (p *Profile) WriteChromeTrace(w io.Writer) error {
	if err := p.ready(); err != nil {
		return err
	}
	if w == nil {
		return errors.New("profiler: WriteChromeTrace to a nil writer")
	}
	pid := os.Getpid()
	var evs []traceEvent
	meta := func(pid, tid int, name, value string) {
		evs = append(evs, traceEvent{Ph: "M", Name: name, Pid: pid, Tid: tid, Args: map[string]any{"name": value}})
	}
	meta(pid, 0, "process_name", "gpukit (host)")
	meta(pid, hostTid, "thread_name", "ops")
	devIndex := map[*device.Device]int{}
	for _, d := range p.devs {
		devIndex[d] = d.Index()
		meta(d.Index(), 0, "process_name", d.String())
		meta(d.Index(), streamTid, "thread_name", "stream 0 (modelled)")
	}
	streamEnd := map[*device.Device]time.Duration{}
	flow := 0
	for _, e := range p.events {
		dur := us(e.End - e.Start)
		ev := traceEvent{Ph: "X", Name: e.Name, Pid: pid, Tid: hostTid, Ts: us(e.Start), Dur: &dur,
			Args: map[string]any{"External id": e.ID}}
		if e.Kind == Range {
			ev.Cat = "user_annotation"
		} else {
			ev.Cat = "cpu_op"
			if e.InputShapes != nil {
				ev.Args["Input Dims"] = e.InputShapes
			}
			if e.CallSite != "" {
				ev.Args["Call stack"] = e.CallSite
			}
		}
		evs = append(evs, ev)
		if e.Kind != Op || e.Device == nil || e.DeviceEnd <= e.DeviceStart {
			continue
		}
		flow++
		zero := 0.0
		launch := traceEvent{Ph: "X", Cat: "cuda_runtime", Name: "cudaLaunchKernel", Pid: pid, Tid: hostTid, Ts: us(e.End), Dur: &zero,
			Args: map[string]any{"correlation": flow, "External id": e.ID}}
		start := max(e.End, streamEnd[e.Device])
		kdur := us(e.DeviceTime())
		streamEnd[e.Device] = start + e.DeviceTime()
		kernel := traceEvent{Ph: "X", Cat: "kernel", Name: e.Name[len("tensor::"):], Pid: devIndex[e.Device], Tid: streamTid, Ts: us(start), Dur: &kdur,
			Args: map[string]any{"device": devIndex[e.Device], "stream": 0, "correlation": flow, "External id": e.ID,
				"modelled start us": us(e.DeviceStart)}}
		evs = append(evs, launch, kernel,
			traceEvent{Ph: "s", Cat: "ac2g", Name: "ac2g", ID: flow, Pid: pid, Tid: hostTid, Ts: launch.Ts},
			traceEvent{Ph: "f", Cat: "ac2g", Name: "ac2g", ID: flow, Pid: kernel.Pid, Tid: streamTid, Ts: kernel.Ts, Bp: "e"})
	}
	for _, m := range p.mem {
		devType, devID := 0, -1
		if m.Device != nil {
			devType, devID = 1, m.Device.Index()
		}
		evs = append(evs, traceEvent{Ph: "i", S: "t", Cat: "cpu_instant_event", Name: "[memory]", Pid: pid, Tid: hostTid, Ts: us(m.Time),
			Args: map[string]any{"Addr": m.Addr, "Bytes": m.Bytes, "Total Allocated": m.TotalAllocated,
				"Total Reserved": m.TotalReserved, "Device Type": devType, "Device Id": devID}})
	}
	// Sorted by time per track; at equal times an enclosing event first.
	slices.SortStableFunc(evs, func(a, b traceEvent) int {
		if a.Ph == "M" || b.Ph == "M" {
			return boolCmp(a.Ph != "M", b.Ph != "M")
		}
		if a.Ts != b.Ts {
			if a.Ts < b.Ts {
				return -1
			}
			return 1
		}
		return 0
	})
	bw := bufio.NewWriter(w)
	if _, err := fmt.Fprintf(bw, "{\n  \"schemaVersion\": 1,\n  \"displayTimeUnit\": \"ms\",\n  \"traceEvents\": [\n"); err != nil {
		return err
	}
	for i, ev := range evs {
		b, err := json.Marshal(ev)
		if err != nil {
			return fmt.Errorf("profiler: %w", err)
		}
		sep := ",\n"
		if i == len(evs)-1 {
			sep = "\n"
		}
		if _, err := fmt.Fprintf(bw, "    %s%s", b, sep); err != nil {
			return err
		}
	}
	if _, err := fmt.Fprint(bw, "  ]\n}\n"); err != nil {
		return err
	}
	return bw.Flush()
}

func boolCmp(a, b bool) int {
	switch {
	case a == b:
		return 0
	case !a:
		return -1
	}
	return 1
}

// ExportChromeTrace writes the trace (see WriteChromeTrace) to path,
// through a temporary file that is renamed only when complete, as
// prof.export_chrome_trace does. Open it at https://ui.perfetto.dev
// (Open trace file) or chrome://tracing.
func (p *Profile) ExportChromeTrace(path string) error {
	if err := p.ready(); err != nil {
		return err
	}
	if err := atomicfile.CheckWritable(path); err != nil {
		return fmt.Errorf("profiler: cannot write the trace to %s: %w", path, err)
	}
	if err := atomicfile.Write(path, 0o644, p.WriteChromeTrace); err != nil {
		return fmt.Errorf("profiler: writing the trace to %s: %w", path, err)
	}
	return nil
}
