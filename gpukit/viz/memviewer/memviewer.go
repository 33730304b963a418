// Package memviewer turns an allocator snapshot (alloc.Snapshot, the
// structure of torch.cuda.memory._snapshot()) into things a student can
// look at:
//
//   - WriteHTML / HTML / Embed: one self-contained HTML file (inline CSS, JavaScript
//     and SVG, the data embedded as JSON) with the active-memory timeline
//     built from the recorded trace and a map of every segment with its
//     blocks coloured by state. It loads nothing from the network, so it
//     works in a classroom without internet and inside a GoNB notebook.
//   - WritePickle / Pickle: the snapshot as the pickle PyTorch writes, for
//     PyTorch's own tools (torch/cuda/_memory_viz.py and its web viewer).
package memviewer

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"strings"

	"github.com/gpumem/course/gpukit/alloc"
)

// Option changes how WriteHTML draws a snapshot.
type Option func(*options)

type options struct {
	title      string
	device     int
	maxEntries int
}

// WithTitle sets the page title (default "GPU memory snapshot").
func WithTitle(t string) Option { return func(o *options) { o.title = t } }

// WithDevice selects whose trace and segments are shown (default 0).
func WithDevice(d int) Option { return func(o *options) { o.device = d } }

// WithMaxEntries bounds how many of the most recent trace events the
// timeline draws (default 5000; n <= 0 means all). Older events are left
// out and the page says how many; allocations made before the window and
// freed inside it are drawn from its start.
func WithMaxEntries(n int) Option { return func(o *options) { o.maxEntries = n } }

// HTML returns the viewer page as a string: a whole document, to save as a
// file. In a notebook, show Embed instead.
func HTML(s alloc.Snapshot, opts ...Option) string {
	var b strings.Builder
	_ = WriteHTML(&b, s, opts...) // a strings.Builder does not fail
	return b.String()
}

// Embed returns the viewer as an iframe that holds the whole page, for a
// notebook cell (viz.ShowHTML(memviewer.Embed(snap))). The frame keeps the
// page's styles and script from leaking into the notebook around it, and
// grows to the height of the page once it has loaded.
func Embed(s alloc.Snapshot, opts ...Option) string {
	return `<iframe style="width:100%;height:900px;border:0" ` +
		`onload="this.style.height=(this.contentWindow.document.documentElement.scrollHeight+20)+'px'" ` +
		`srcdoc="` + html.EscapeString(HTML(s, opts...)) + `"></iframe>`
}

// WriteHTML writes the viewer page for s to w.
func WriteHTML(w io.Writer, s alloc.Snapshot, opts ...Option) error {
	o := options{title: "GPU memory snapshot", maxEntries: 5000}
	for _, f := range opts {
		f(&o)
	}
	data, err := json.Marshal(buildView(s, o))
	if err != nil {
		return fmt.Errorf("memviewer: %w", err)
	}
	// json.Marshal escapes <, > and &, so the data cannot close the script.
	page := strings.NewReplacer(
		"{{TITLE}}", html.EscapeString(o.title),
		"{{DATA}}", string(data),
	).Replace(pageTemplate)
	_, err = io.WriteString(w, page)
	return err
}

//go:embed page.html
var pageTemplate string

// view is the data the page's script draws.
type view struct {
	Title    string   `json:"title"`
	Device   int      `json:"device"`
	Totals   totals   `json:"totals"`
	Segments []vSeg   `json:"segments"`
	Events   []vEvent `json:"events"`
	Skipped  int      `json:"skipped"`  // trace events left out of the window
	TraceLen int      `json:"traceLen"` // events recorded in all
	Live     []vBlock `json:"live"`     // active blocks at the end, by address
	Settings string   `json:"settings"` // allocator configuration, if known
}

type totals struct {
	Allocated   int64 `json:"allocated"`   // bytes in active_allocated blocks
	Requested   int64 `json:"requested"`   // bytes asked for by those allocations
	PendingFree int64 `json:"pendingFree"` // bytes in active_pending_free blocks
	Inactive    int64 `json:"inactive"`    // cached free bytes
	Reserved    int64 `json:"reserved"`    // bytes in all segments
	Segments    int   `json:"segments"`
	Blocks      int   `json:"blocks"`
	Allocations int   `json:"allocations"`
	LargestFree int64 `json:"largestFree"`
}

type vSeg struct {
	Addr       uint64   `json:"addr"`
	Size       int64    `json:"size"`
	Stream     int      `json:"stream"`
	Type       string   `json:"type"`
	Expandable bool     `json:"expandable"` // a run of mapped pages of an expandable segment
	Blocks     []vBlock `json:"blocks"`
}

type vBlock struct {
	Addr   uint64   `json:"addr"`
	Off    int64    `json:"off"`
	Size   int64    `json:"size"`
	Req    int64    `json:"req"`
	State  string   `json:"state"`
	Frames []string `json:"frames,omitempty"`
}

type vEvent struct {
	I      int      `json:"i"` // index in the device trace
	Action string   `json:"a"`
	Addr   uint64   `json:"addr"`
	Size   int64    `json:"size"`
	Stream int      `json:"s"`
	T      int64    `json:"t"`
	Frames []string `json:"f,omitempty"`
}

// maxShownFrames is how many frames of a stack the page shows on hover.
const maxShownFrames = 4

func frameStrings(fs []alloc.Frame) []string {
	var out []string
	for _, f := range fs {
		if len(out) == maxShownFrames {
			break
		}
		file := f.Filename
		if i := strings.LastIndexByte(file, '/'); i >= 0 {
			file = file[i+1:]
		}
		name := f.Name
		if i := strings.LastIndexByte(name, '/'); i >= 0 {
			name = name[i+1:]
		}
		out = append(out, fmt.Sprintf("%s (%s:%d)", name, file, f.Line))
	}
	return out
}

func buildView(s alloc.Snapshot, o options) view {
	v := view{Title: o.title, Device: o.device, Segments: []vSeg{}, Events: []vEvent{}, Live: []vBlock{}}
	for _, seg := range s.Segments {
		if seg.Device != o.device {
			continue
		}
		vs := vSeg{Addr: seg.Address, Size: seg.TotalSize, Stream: int(seg.Stream), Type: seg.SegmentType,
			Expandable: seg.IsExpandable, Blocks: []vBlock{}}
		v.Totals.Reserved += seg.TotalSize
		v.Totals.Segments++
		off := int64(0)
		for _, b := range seg.Blocks {
			addr := b.Address
			if addr == 0 {
				addr = seg.Address + uint64(off)
			}
			vb := vBlock{Addr: addr, Off: off, Size: b.Size, Req: b.RequestedSize, State: b.State, Frames: frameStrings(b.Frames)}
			vs.Blocks = append(vs.Blocks, vb)
			v.Totals.Blocks++
			switch b.State {
			case alloc.StateActiveAllocated:
				v.Totals.Allocated += b.Size
				v.Totals.Requested += b.RequestedSize
				v.Totals.Allocations++
				v.Live = append(v.Live, vb)
			case alloc.StateActivePendingFree:
				v.Totals.PendingFree += b.Size
				v.Live = append(v.Live, vb)
			default:
				v.Totals.Inactive += b.Size
				v.Totals.LargestFree = max(v.Totals.LargestFree, b.Size)
			}
			off += b.Size
		}
		v.Segments = append(v.Segments, vs)
	}
	if o.device >= 0 && o.device < len(s.DeviceTraces) {
		tr := s.DeviceTraces[o.device]
		v.TraceLen = len(tr)
		start := 0
		if o.maxEntries > 0 && len(tr) > o.maxEntries {
			start = len(tr) - o.maxEntries
		}
		v.Skipped = start
		for i := start; i < len(tr); i++ {
			e := tr[i]
			ve := vEvent{I: i, Action: e.Action, Addr: e.Addr, Size: e.Size, Stream: int(e.Stream), T: e.TimeMicros, Frames: frameStrings(e.Frames)}
			if e.Action == alloc.ActionOOM {
				ve.Addr = uint64(max(e.DeviceFree, 0))
			}
			v.Events = append(v.Events, ve)
		}
	}
	if conf, ok := s.AllocatorSettings["PYTORCH_CUDA_ALLOC_CONF"].(string); ok {
		v.Settings = conf
	}
	return v
}

// pageBytes is used by tests.
func pageBytes(s alloc.Snapshot, opts ...Option) []byte {
	var b bytes.Buffer
	_ = WriteHTML(&b, s, opts...)
	return b.Bytes()
}
