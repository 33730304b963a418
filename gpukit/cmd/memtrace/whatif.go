package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"text/tabwriter"

	"github.com/gpumem/course/gpukit/alloc"
	"github.com/gpumem/course/gpukit/alloc/snapshot"
	"github.com/gpumem/course/gpukit/device"
)

const whatifUsage = `memtrace whatif replays the requests of a PyTorch memory snapshot under other
allocator settings.

Usage:

	memtrace whatif SNAPSHOT [--alloc-conf STR]... [--device NAME | --capacity SIZE] [--memory-fraction F] [--gpu N] [--format text|json]

SNAPSHOT is a pickle written by torch.cuda.memory._dump_snapshot() (gzip
compressed or not). It is read as data only: nothing in it is run.

memtrace first replays the snapshot's trace under its own settings
(allocator_settings) and checks each decision against the one PyTorch
recorded, then replays the same requests (the alloc and free_requested
sequence, with its sizes and streams) once per --alloc-conf, in parallel, and
prints one row per setting: peak allocated and reserved memory,
fragmentation when allocated memory peaked (reserved minus allocated, and
the largest cached block), cudaMalloc and cudaFree calls (num_device_alloc,
num_device_free; page maps and unmaps with expandable segments), allocator
retries and the first OOM, with the Python frames PyTorch recorded for it.

Flags:

	--alloc-conf STR      a setting, in the PYTORCH_CUDA_ALLOC_CONF syntax,
	                      plus per_process_memory_fraction:F; repeat for more
	                      rows ("" is PyTorch's default); without any, the
	                      snapshot's own setting
	--device NAME         the card: a gpukit device profile (` + "`memtrace whatif --device list`" + `),
	                      or a unique prefix of one, such as h100
	--capacity SIZE       instead of --device: device memory, such as 40GiB
	                      (without either, the device is unlimited)
	--memory-fraction F   the cap the program set with
	                      torch.cuda.set_per_process_memory_fraction, which
	                      snapshots do not record; it applies to the check
	                      and to every row without per_process_memory_fraction
	--gpu N               the snapshot's device to replay (default: the one
	                      with the most events)
	--format text|json    output format (default text)

Exit status: 0 after a replay; 1 when the snapshot cannot be read (not a
pickle, not a memory snapshot, a pickle that would run code); 2 for usage
errors.
`

// confList collects repeated --alloc-conf flags.
type confList []string

func (c *confList) String() string     { return strings.Join(*c, " ") }
func (c *confList) Set(s string) error { *c = append(*c, s); return nil }

// whatifReport is the JSON output of whatif.
type whatifReport struct {
	Snapshot string      `json:"snapshot"`
	GPU      int         `json:"gpu"`
	Events   int         `json:"events"`
	Device   string      `json:"device"`
	Capacity int64       `json:"capacity_bytes"` // 0: unlimited
	Check    checkReport `json:"check"`
	Rows     []whatifRow `json:"rows"`
	Caveats  []string    `json:"caveats"`
}

type checkReport struct {
	Setting         string   `json:"setting"`
	Summary         string   `json:"summary"`
	Allocs          int      `json:"allocs"`
	AllocsAgreed    int      `json:"allocs_agreed"`
	SegmentEvents   int      `json:"segment_events"`
	SegmentsAgreed  int      `json:"segment_events_agreed"`
	OOMs            int      `json:"ooms"`
	OOMsAgreed      int      `json:"ooms_agreed"`
	Disagreements   int      `json:"disagreements"`
	First           string   `json:"first_disagreement,omitempty"`
	AdoptedSegments int      `json:"segments_before_trace"`
	AdoptedBlocks   int      `json:"blocks_before_trace"`
	Problems        []string `json:"problems,omitempty"`
}

type whatifRow struct {
	Setting           string   `json:"setting"`
	MemoryFraction    float64  `json:"memory_fraction"`
	Requests          int      `json:"requests"`
	PeakAllocated     int64    `json:"peak_allocated_bytes"`
	PeakReserved      int64    `json:"peak_reserved_bytes"`
	ReservedAtPeak    int64    `json:"reserved_at_peak_bytes"`
	Fragmentation     int64    `json:"fragmentation_at_peak_bytes"`
	LargestFreeAtPeak int64    `json:"largest_free_at_peak_bytes"`
	DeviceAllocs      int64    `json:"num_device_alloc"`
	DeviceFrees       int64    `json:"num_device_free"`
	Retries           int64    `json:"num_alloc_retries"`
	OOM               *oomJSON `json:"first_oom"`
}

type oomJSON struct {
	Event  int      `json:"event"`
	Size   int64    `json:"size_bytes"`
	Stream int64    `json:"stream"`
	Frames []string `json:"frames"`
}

// caveats say what the replay is and is not.
var caveats = []string{
	"Requests are replayed as recorded: a different setting does not change what the program asks for, nor when it frees.",
	"Not modelled: the timing of other streams (a free that waited for another stream completes where the trace shows it), other processes on the card, memory outside the allocator (CUDA context, NCCL, cuBLAS workspaces allocated before the trace), and the addresses cudaMalloc returns (the k-th segment of a size gets the address of PyTorch's k-th of that size, which breaks ties in best fit as PyTorch's did; segments PyTorch never made get other addresses).",
	"Each replay stops at its first OOM, as the program would have. Segments made before the trace began count only through the blocks in use at its first event, asked for first: PyTorch's own totals also count what came before.",
}

func runWhatif(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("whatif", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var confs confList
	fs.Var(&confs, "alloc-conf", "")
	devName := fs.String("device", "", "")
	capStr := fs.String("capacity", "", "")
	fraction := fs.Float64("memory-fraction", 1, "")
	gpu := fs.Int("gpu", -1, "")
	format := fs.String("format", "text", "")
	usageErr := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "memtrace: "+format+"\n\n%s", append(a, whatifUsage)...)
		return exitUsage
	}
	// Flags may come before or after SNAPSHOT.
	var positional []string
	rest := args
	for {
		if err := fs.Parse(rest); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fmt.Fprint(stderr, whatifUsage)
				return exitOK
			}
			return usageErr("whatif: %v", err)
		}
		if fs.NArg() == 0 {
			break
		}
		positional = append(positional, fs.Arg(0))
		rest = fs.Args()[1:]
	}
	if *devName == "list" {
		for _, p := range device.Profiles() {
			fmt.Fprintf(stdout, "%-12s %s, %s (%s usable)\n", p.Name, p.Description, alloc.FormatSize(p.Capacity), alloc.FormatSize(p.Capacity-p.ContextSize))
		}
		return exitOK
	}
	if len(positional) != 1 {
		return usageErr("whatif needs one SNAPSHOT file, got %d arguments %q", len(positional), positional)
	}
	if *gpu < -1 {
		return usageErr("whatif: --gpu %d: must be a device index (0 or more)", *gpu)
	}
	if *format != "text" && *format != "json" {
		return usageErr("whatif: --format %q: must be text or json", *format)
	}
	if !(*fraction > 0 && *fraction <= 1) {
		return usageErr("whatif: --memory-fraction %v: must be in (0, 1]", *fraction)
	}
	if *devName != "" && *capStr != "" {
		return usageErr("whatif: give --device or --capacity, not both")
	}
	opt := snapshot.WhatIfOptions{}
	card := "unlimited"
	if *capStr != "" {
		c, err := parseBytes(*capStr)
		if err != nil {
			return usageErr("whatif: --capacity: %v", err)
		}
		opt.Capacity = c
		card = alloc.FormatSize(c)
	}
	if *devName != "" {
		p, err := lookupCard(*devName)
		if err != nil {
			return usageErr("whatif: --device: %v", err)
		}
		opt.Capacity, opt.Context = p.Capacity, p.ContextSize
		card = fmt.Sprintf("%s (%s, %s of it the CUDA context)", p.Name, alloc.FormatSize(p.Capacity), alloc.FormatSize(p.ContextSize))
	}
	var settings []snapshot.Setting
	for _, c := range confs {
		st, err := snapshot.ParseSetting(c)
		if err != nil {
			return usageErr("whatif: --alloc-conf %q: %v", c, strings.TrimPrefix(err.Error(), "snapshot: "))
		}
		if !strings.Contains(c, "per_process_memory_fraction") {
			st.Fraction = *fraction
		}
		settings = append(settings, st)
	}

	f, err := os.Open(positional[0])
	if err != nil {
		fmt.Fprintf(stderr, "memtrace: %v\n", err)
		return exitIO
	}
	snap, lost, err := readSnapshot(f, snapshot.Limits)
	f.Close()
	if err != nil {
		fmt.Fprintf(stderr, "memtrace: %s: %v\n", positional[0], err)
		return exitIO
	}
	// What the reader made on the way (the decoder's memo, the events'
	// compact chunks) is garbage now: collected at once, it leaves the
	// replays a heap goal of twice the snapshot, not of twice the snapshot
	// and the reader together (for a file of a gigabyte, 170 MB rather
	// than 270).
	runtime.GC()
	if *gpu < 0 {
		*gpu = 0
		for d, tr := range snap.Traces {
			if len(tr) > len(snap.Traces[*gpu]) {
				*gpu = d
			}
		}
	}
	if *gpu >= len(snap.Traces) {
		fmt.Fprintf(stderr, "memtrace: %s: no trace for --gpu %d (the snapshot has %d)\n", positional[0], *gpu, len(snap.Traces))
		return exitIO
	}
	own := snapshot.Setting{Name: snap.Settings.Config.String(), Config: snap.Settings.Config, Fraction: *fraction}
	if len(settings) == 0 {
		settings = []snapshot.Setting{own}
	}
	opt.Device = *gpu
	g, err := snap.Check(snapshot.CheckOptions{Device: *gpu, Capacity: opt.Capacity, MemoryFraction: *fraction})
	if err != nil {
		fmt.Fprintf(stderr, "memtrace: %s: %v\n", positional[0], err)
		return exitIO
	}
	outs, err := snap.WhatIf(opt, settings)
	if err != nil {
		fmt.Fprintf(stderr, "memtrace: %s: %v\n", positional[0], err)
		return exitIO
	}
	if err := findLostFrames(positional[0], *gpu, lost[*gpu], outs); err != nil {
		fmt.Fprintf(stderr, "memtrace: %s: %v\n", positional[0], err)
		return exitIO
	}
	rep := whatifReport{Snapshot: positional[0], GPU: *gpu, Events: len(snap.Traces[*gpu]), Device: card, Capacity: opt.Capacity,
		Caveats: caveats}
	rep.Check = checkReport{Setting: own.Name, Summary: g.String(), Allocs: g.Allocs, AllocsAgreed: g.AllocsAgreed,
		SegmentEvents: g.SegmentEvents, SegmentsAgreed: g.SegmentsAgreed, OOMs: g.OOMs, OOMsAgreed: g.OOMsAgreed,
		Disagreements: g.Disagreements, AdoptedSegments: g.AdoptedSegments, AdoptedBlocks: g.AdoptedBlocks, Problems: g.Problems}
	if g.First != nil {
		rep.Check.First = g.First.String()
	}
	if !snap.Settings.Recorded {
		rep.Caveats = append(rep.Caveats, "The snapshot records no allocator_settings (PyTorch before 2.6): the check assumes PyTorch's defaults.")
	}
	if snap.Settings.Config.GarbageCollectionThreshold > 0 && *fraction == 1 {
		rep.Caveats = append(rep.Caveats, "The recorded setting has garbage_collection_threshold, which acts only under set_per_process_memory_fraction: give the program's --memory-fraction for the check.")
	}
	for _, o := range outs {
		row := whatifRow{Setting: o.Setting.Name, MemoryFraction: o.Setting.Fraction, Requests: o.Requests,
			PeakAllocated: o.PeakAllocated, PeakReserved: o.PeakReserved, ReservedAtPeak: o.ReservedAtPeak,
			Fragmentation: o.FragmentationAtPeak(), LargestFreeAtPeak: o.LargestFreeAtPeak,
			DeviceAllocs: o.DeviceAllocs, DeviceFrees: o.DeviceFrees, Retries: o.Retries}
		if o.OOM != nil {
			row.OOM = &oomJSON{Event: o.OOM.Index, Size: o.OOM.Size, Stream: o.OOM.Stream, Frames: []string{}}
			for _, fr := range o.OOM.Frames {
				row.OOM.Frames = append(row.OOM.Frames, fr.String())
			}
		}
		rep.Rows = append(rep.Rows, row)
	}
	if *format == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			fmt.Fprintf(stderr, "memtrace: writing output: %v\n", err)
			return exitIO
		}
		return exitOK
	}
	if err := writeWhatifText(stdout, rep); err != nil {
		fmt.Fprintf(stderr, "memtrace: writing output: %v\n", err)
		return exitIO
	}
	return exitOK
}

// findLostFrames gives the OOMs of outs the frames that readSnapshot did
// not keep, reading the file again for them.
func findLostFrames(path string, gpu int, lost *bitset, outs []snapshot.Outcome) error {
	var want []int
	for _, o := range outs {
		if o.OOM != nil && lost.has(o.OOM.Index) {
			want = append(want, o.OOM.Index)
		}
	}
	if len(want) == 0 {
		return nil
	}
	frames, err := framesOf(path, snapshot.Limits, gpu, want)
	if err != nil {
		return err
	}
	for _, o := range outs {
		if o.OOM != nil && lost.has(o.OOM.Index) {
			o.OOM.Frames = frames[o.OOM.Index]
		}
	}
	return nil
}

// lookupCard finds a device profile by name or unique prefix.
func lookupCard(name string) (device.Profile, error) {
	if p, err := device.LookupProfile(name); err == nil {
		return p, nil
	}
	var found []device.Profile
	var names []string
	for _, p := range device.Profiles() {
		names = append(names, p.Name)
		if strings.HasPrefix(p.Name, name) {
			found = append(found, p)
		}
	}
	if len(found) == 1 {
		return found[0], nil
	}
	return device.Profile{}, fmt.Errorf("%q names no single card; the cards are %s", name, strings.Join(names, ", "))
}

func settingName(s string) string {
	if s == "" {
		return `"" (default)`
	}
	return s
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

func writeWhatifText(w io.Writer, rep whatifReport) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s, device %d: %s events, replayed on a device of %s\n", rep.Snapshot, rep.GPU, snapshot.Count(int64(rep.Events)), rep.Device)
	fmt.Fprintf(&b, "check under its own setting %s: %s\n", settingName(rep.Check.Setting), rep.Check.Summary)
	if rep.Check.AdoptedSegments > 0 {
		fmt.Fprintf(&b, "  (the trace starts mid-run: %d segments with %d blocks in use existed before its first event)\n", rep.Check.AdoptedSegments, rep.Check.AdoptedBlocks)
	}
	if rep.Check.First != "" {
		fmt.Fprintf(&b, "  first disagreement: %s\n", rep.Check.First)
	}
	for _, p := range rep.Check.Problems {
		fmt.Fprintf(&b, "  snapshot problem: %s\n", p)
	}
	b.WriteString("\n")
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "setting\tpeak allocated\tpeak reserved\tat peak: reserved-allocated\tlargest free\tcudaMalloc\tcudaFree\tretries\tfirst OOM")
	for _, r := range rep.Rows {
		name := settingName(r.Setting)
		if r.MemoryFraction < 1 && !strings.Contains(r.Setting, "per_process_memory_fraction") {
			name += fmt.Sprintf(" (fraction %g)", r.MemoryFraction)
		}
		oom := "none"
		if r.OOM != nil {
			oom = fmt.Sprintf("event %d, %s", r.OOM.Event, alloc.FormatSize(r.OOM.Size))
			if r.OOM.Event < 0 {
				oom = fmt.Sprintf("before the trace, %s", alloc.FormatSize(r.OOM.Size))
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%d\t%d\t%s\n", name, mib(r.PeakAllocated), mib(r.PeakReserved),
			mib(r.Fragmentation), mib(r.LargestFreeAtPeak), r.DeviceAllocs, r.DeviceFrees, r.Retries, oom)
	}
	tw.Flush()
	for _, r := range rep.Rows {
		if r.OOM == nil {
			continue
		}
		fmt.Fprintf(&b, "\nfirst OOM under %s (event %d, %s on stream %d), where PyTorch recorded:\n", settingName(r.Setting), r.OOM.Event, alloc.FormatSize(r.OOM.Size), r.OOM.Stream)
		if len(r.OOM.Frames) == 0 {
			b.WriteString("    no Python frame (a request from C++, or a snapshot recorded without stacks)\n")
		}
		for i, fr := range r.OOM.Frames {
			if i == 8 {
				fmt.Fprintf(&b, "    ... %d more\n", len(r.OOM.Frames)-i)
				break
			}
			fmt.Fprintf(&b, "    %s\n", fr)
		}
	}
	b.WriteString("\n")
	for _, c := range rep.Caveats {
		fmt.Fprintf(&b, "note: %s\n", c)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
